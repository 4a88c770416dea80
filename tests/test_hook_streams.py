"""`loop-brake hook` with closed, full or limited standard streams, and huge inputs.

Issue 10, items 3 and 4. A closed stdin or stdout used to be a traceback and
exit 1, which agents read as "allow", even with --fail-closed; a denial on a
full stdout was allowed. Now a deny that cannot be written to stdout exits 2
(the blocking status of every supported agent) with the reason on stderr, a
closed stdin is a brake failure (allowed with one stderr line, or denied), and
no combination prints a traceback. The input is read up to --max-input-bytes
plus one byte: a longer one is a brake failure and is never held in memory
(the child's peak RSS, from ``os.wait4``, not a timing).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env
from hook_helpers import assert_allowed, assert_allowed_with_warning, claude_input, hook

HOOK = [sys.executable, "-m", "loop_brake_cli", "hook"]
REDIRECTS = {
    ("stdin", "closed"): "<&-",
    ("stdout", "closed"): ">&-",
    ("stdout", "full"): ">/dev/full",
    ("stderr", "closed"): "2>&-",
    ("stderr", "full"): "2>/dev/full",
}


def _run_redirected(args: list[str], payload: bytes, redirects: str, prefix: str = ""):
    """The hook under ``sh`` with its streams redirected, e.g. ``>&- 2>/dev/full``."""
    script = f'{prefix}exec "$@" {redirects}'
    return subprocess.run(
        ["sh", "-c", script, "sh", *HOOK, *args],
        input=payload,
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.parametrize("fail_closed", [False, True], ids=["open", "closed"])
@pytest.mark.parametrize("stderr", ["pipe", "closed", "full"])
@pytest.mark.parametrize("stdout", ["pipe", "closed", "full"])
@pytest.mark.parametrize("stdin", ["pipe", "closed"])
def test_every_combination_of_streams(
    tmp_path: Path, stdin: str, stdout: str, stderr: str, fail_closed: bool
) -> None:
    redirects = " ".join(
        REDIRECTS[(name, how)]
        for name, how in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr))
        if how != "pipe"
    )
    args = ["--state", str(tmp_path / "state.db"), "-m", "1"]
    args += ["--fail-closed"] if fail_closed else []
    result = _run_redirected(args, claude_input(1), redirects)
    if stdin == "pipe" or fail_closed:
        # a denial (the brake's verdict, or --fail-closed with no input): the JSON, or 2
        expected = 0 if stdout == "pipe" and stdin == "pipe" else 2
    else:
        expected = 0  # no input: the brake fails open
    assert result.returncode == expected, result.stderr
    if stdout == "pipe":
        assert bool(result.stdout) == (expected == 0 and stdin == "pipe")
        if result.stdout:
            assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    if stderr == "pipe":
        text = result.stderr.decode()
        assert "Traceback" not in text
        assert text.count("\n") == (0 if expected == 0 and stdin == "pipe" else 1), text
        if stdin == "closed":
            assert "stdin is closed" in text
        elif expected == 2:
            assert "could not be written" in text and "called 1 times" in text


def test_fail_closed_with_a_known_agent_and_no_stdin_denies_in_json(tmp_path: Path) -> None:
    args = ["--state", str(tmp_path / "s.db"), "--fail-closed", "--agent", "codex"]
    result = _run_redirected(args, b"", "<&-")
    assert result.returncode == 0
    reason = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "stdin is closed" in reason
    assert _run_redirected(args, b"", "<&- >&-").returncode == 2


def test_a_file_size_limit_fails_open_or_exits_2_closed(tmp_path: Path) -> None:
    state, out = tmp_path / "s.db", tmp_path / "out.json"
    limited = "ulimit -f 0; "
    opened = _run_redirected(["--state", str(state)], claude_input(1), f">{out}", limited)
    text = assert_allowed_with_warning(opened)  # the store cannot grow: a brake failure
    assert "state store" in text
    closed = _run_redirected(
        ["--state", str(state), "--fail-closed"], claude_input(1), f">{out}", limited
    )
    assert closed.returncode == 2
    assert closed.stderr.decode().count("\n") == 1
    assert b"Traceback" not in closed.stderr
    assert out.read_bytes() == b""


# -- item 4: a bounded read ------------------------------------------------------------


def test_input_up_to_the_limit_is_read_and_one_byte_more_is_a_failure(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    payload = claude_input(1)
    assert_allowed(hook(state, payload, "--max-input-bytes", str(len(payload))))
    text = assert_allowed_with_warning(
        hook(state, claude_input(2), "--max-input-bytes", str(len(payload) - 1))
    )
    assert f"hook input longer than {len(payload) - 1} bytes" in text
    closed = hook(state, claude_input(2), "--max-input-bytes", "10", "--fail-closed")
    assert closed.returncode == 2 and closed.stdout == b""  # the agent cannot be told
    forced = hook(state, b"x" * 11, "--max-input-bytes", "10", "--fail-closed", "--agent", "gemini")
    assert json.loads(forced.stdout)["decision"] == "deny"
    bad = assert_allowed_with_warning(hook(state, claude_input(3), "--max-input-bytes", "0"))
    assert "--max-input-bytes" in bad


# The child's peak RSS must be measured from a small parent: a process forked from
# the (large) test runner inherits its high-water mark across exec.
MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def test_a_huge_input_is_refused_without_being_held(tmp_path: Path) -> None:
    """256 MiB through a real pipe: the hook reads 8 MiB + 1 and stops; peak RSS stays low."""
    total, chunk = 256 << 20, b" " * (1 << 20)
    report = tmp_path / "rusage"
    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(report), *HOOK, "--state", str(tmp_path / "s.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=cli_env(),
            cwd=ROOT,
            bufsize=0,
        )
        written = 0
        try:
            while written < total:
                written += proc.stdin.write(chunk)
        except BrokenPipeError:
            pass
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        proc.wait(timeout=60)
    status, maxrss = (int(field) for field in report.read_text().split())
    assert status == 0
    text = (tmp_path / "err").read_text()
    assert text.count("\n") == 1 and "hook input longer than 8388608 bytes" in text
    assert written < total  # it stopped reading: the writer met a closed pipe
    peak_mib = maxrss / 1024  # kilobytes on Linux
    assert peak_mib < 100, f"peak RSS {peak_mib:.0f} MiB for a refused input"
