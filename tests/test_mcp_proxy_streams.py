"""``loop-brake mcp-proxy`` started with its own standard streams closed or unwritable.

The proxy is run by a real ``sh`` with the redirections a caller could give it
(``>&-``, ``1</dev/null``, ``>/dev/full``, ``<&-``, ``2>&-``), in front of a
real server process that leaves traces (a marker file when it starts, where
its stderr points). Stdout that cannot take the client's lines is exit 5 with
one stderr line (the server not started, or stopped); a closed stdin is the
client's EOF; a closed stderr never lets the log or a pipe stand in for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX descriptors and sh")

PROXY = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--shutdown-timeout", "0.5"]


def call(request_id: int) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"q": "same"}},
    }
    return json.dumps(message).encode() + b"\n"


def under_sh(redirections: str, argv: list[str]) -> list[str]:
    """``argv`` run by sh with ``redirections`` applied to it."""
    return ["sh", "-c", f'exec "$@" {redirections}', "sh", *argv]


def server(tmp_path: Path, body: str) -> list[str]:
    """A server that marks its start, then runs ``body`` (sh)."""
    return ["--", "sh", "-c", f"echo $$ > {tmp_path}/started; {body}"]


def run(
    redirections: str, argv: list[str], data: bytes = b"", timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        under_sh(redirections, argv),
        input=data,
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.mark.parametrize("redirection", [">&-", "1</dev/null"])
def test_an_unwritable_stdout_is_exit_5_and_the_server_never_starts(
    tmp_path: Path, redirection: str
) -> None:
    result = run(redirection, PROXY + server(tmp_path, "cat"), call(1))
    assert result.returncode == 5, result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert "cannot write to standard output" in line
    assert "Traceback" not in line
    assert not (tmp_path / "started").exists()


def _gone(pid: int, within: float = 120) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_stdout_stops_the_server_and_exits_5(tmp_path: Path) -> None:
    """The client is still connected (stdin open): only the failed write ends the run."""
    argv = PROXY + server(tmp_path, 'echo \'{"jsonrpc":"2.0","method":"hello"}\'; exec cat')
    with open("/dev/full", "wb") as full:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=full, stderr=subprocess.PIPE, env=cli_env()
        )
        try:
            status = proc.wait(timeout=120)  # stdin still open: the client is connected
            stderr = proc.stderr.read() if proc.stderr else b""
        finally:
            if proc.poll() is None:
                proc.kill()
            if proc.stdin:
                proc.stdin.close()
    assert status == 5, stderr
    (line,) = stderr.decode().splitlines()
    assert "cannot write to standard output (No space left on device)" in line
    pid = int((tmp_path / "started").read_text())
    assert _gone(pid)


def test_a_closed_stdin_is_the_clients_eof(tmp_path: Path) -> None:
    log = tmp_path / "verdicts.jsonl"
    argv = PROXY + ["--log", str(log)] + server(tmp_path, "cat; exit 7")
    result = run("<&-", argv)
    assert result.returncode == 7  # the server's own status, after a clean shutdown
    assert result.stdout == b"" and result.stderr == b""
    assert (tmp_path / "started").exists()
    assert log.read_bytes() == b""


def test_a_closed_stdin_and_stderr_together(tmp_path: Path) -> None:
    result = run("<&- 2>&-", PROXY + server(tmp_path, "cat; echo bye"))
    assert result.returncode == 0
    assert result.stdout == b"bye\n"


def test_a_closed_stderr_never_lets_the_log_or_a_pipe_stand_in_for_it(tmp_path: Path) -> None:
    """Before, the --log file took descriptor 2: the proxy's "denied" note was
    written into the log, and the server inherited a stray pipe as its stderr."""
    log = tmp_path / "verdicts.jsonl"
    where = tmp_path / "server-stderr"
    body = f"readlink /proc/$$/fd/2 > {where} 2>/dev/null; echo noise >&2; exec cat"
    argv = PROXY + ["--log", str(log)] + server(tmp_path, body)
    result = run("2>&-", argv, call(1) + call(2) + call(3))
    assert result.returncode == 0
    messages = [json.loads(line) for line in result.stdout.splitlines()]  # in any order
    answers = [message for message in messages if "result" in message]
    assert sorted(message["id"] for message in messages if "method" in message) == [1, 2]
    assert [(answer["id"], answer["result"]["isError"]) for answer in answers] == [(3, True)]
    records = [json.loads(line) for line in log.read_bytes().splitlines()]
    assert [record["verdict"] for record in records] == ["pass", "pass", "deny"]
    if os.path.isdir("/proc/self/fd"):
        assert where.read_text().strip() == os.devnull


def test_everything_closed_is_still_one_status_and_no_server(tmp_path: Path) -> None:
    result = run("<&- >&- 2>&-", PROXY + server(tmp_path, "cat"))
    assert result.returncode == 5
    assert not (tmp_path / "started").exists()
