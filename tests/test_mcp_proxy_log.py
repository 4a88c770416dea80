"""The proxy's ``--log`` file and what it never shows: mode 0600, no symlinks, no arguments.

A canary secret is put everywhere a client can put one (arguments as objects
and as strings, ``_meta``, malformed requests, lines that are not JSON,
batches); it must never reach stderr, the log or the proxy's denial answers.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env

from loop_brake_cli.mcp_proxy.process import ProxyOptions, _ServerProcess

ECHO = [sys.executable, str(ROOT / "tests" / "echo_server.py")]
CANARY = "CANARY-91c4aa-keep-out"


def run(data: bytes, *options: str, server: list[str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", *options, "--", *(server or ECHO)],
        input=data,
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )


def request(request_id: object, params: object) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode() + b"\n"


def test_the_log_is_created_private(tmp_path: Path) -> None:
    log = tmp_path / "verdicts.jsonl"
    result = run(request(1, {"name": "t"}), "--log", str(log))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert json.loads(log.read_text())["verdict"] == "pass"


def test_a_symlinked_log_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched\n")
    link = tmp_path / "verdicts.jsonl"
    link.symlink_to(target)
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    result = run(request(1, {"name": "t"}), "--log", str(link), server=server)
    assert result.returncode == 2
    assert (
        result.stderr
        == (
            f"loop-brake mcp-proxy: {link}: cannot open the log: "
            "it is a symbolic link (refusing to write through it)\n"
        ).encode()
    )
    assert target.read_text() == "untouched\n"
    assert not marker.exists()


def test_a_canary_in_any_part_of_a_request_is_never_shown(tmp_path: Path) -> None:
    log = tmp_path / "verdicts.jsonl"
    secret = {"token": CANARY}
    as_string = json.dumps(secret)
    lines = [
        request(1, {"name": "t", "arguments": secret, "_meta": {"trace": CANARY}}),
        request(2, {"name": "t", "arguments": as_string}),  # the same call, as a string
        request(3, {"name": "t", "arguments": secret}),  # denied
        request(4, {"name": "u", "arguments": "{" + CANARY}),  # a string that is not JSON
        request(5, {"name": "u", "arguments": "{" + CANARY}),
        request(6, {"name": "u", "arguments": "{" + CANARY}),  # denied
        request(7, {"arguments": secret}),  # no name
        request(8, CANARY),  # params not an object
        b"[" + request(9, {"name": "u", "arguments": "{" + CANARY}).strip() + b", 1]\n",
        request({"k": CANARY}, {"name": "t", "arguments": secret}),  # an odd id: judged
        b"not JSON " + CANARY.encode() + b"\n",
        b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"' + CANARY.encode(),
    ]
    result = run(b"".join(lines), "--log", str(log))
    assert result.returncode == 0, result.stderr
    answers = [line for line in result.stdout.splitlines() if b'"isError":true' in line]
    assert len(answers) == 3
    text = log.read_text()
    assert [json.loads(line)["verdict"] for line in text.splitlines()] == [
        *("pass", "pass", "deny", "pass", "pass", "deny"),
        *("error", "error", "deny", "error", "pass", "error", "error"),
    ]
    assert CANARY.encode() not in result.stderr + b"".join(answers) + log.read_bytes()


def test_a_failure_inside_the_brake_forwards_the_line_and_names_no_input(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    options = ProxyOptions(command=["true"], max_repeats=3)
    server = _ServerProcess(options, stdin_fd=0, stdout_fd=1, stderr_fd=write_end)

    def broken(*args: object) -> None:
        raise RuntimeError(CANARY)

    # the count itself fails (observe's fast form calls the table's count_call: 12aa79b)
    server.router.brake.table.count_call = broken  # type: ignore[method-assign]
    line = request(1, {"name": "t", "arguments": {"k": CANARY}})
    routed = server.route(line)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as errors:
        said = errors.read()
    assert routed.forward == line and routed.answer is None
    assert said == (
        b"loop-brake mcp-proxy: internal error while deciding a line (RuntimeError); forwarded\n"
    )
