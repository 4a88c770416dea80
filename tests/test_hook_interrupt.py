"""The hook interrupted mid-decision, and a --log that is a symlink: no traceback,
and the failure policy decides (allow, or deny with --fail-closed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, wait_in_syscall
from hook_helpers import claude_input, hook

HOOK = [sys.executable, "-m", "loop_brake_cli", "hook"]


@pytest.mark.parametrize("fail_closed", [False, True])
def test_ctrl_c_while_waiting_for_input_follows_the_failure_policy(
    tmp_path: Path, fail_closed: bool
) -> None:
    extra = ["--fail-closed", "--agent", "claude-code"] if fail_closed else []
    proc = subprocess.Popen(
        [*HOOK, "--state", str(tmp_path / "s.db"), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=ROOT,
    )
    wait_in_syscall(proc.pid, "read", fd=0)  # started and blocked reading stdin
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err
    assert b"interrupted before a decision" in err
    assert proc.returncode == 0
    if fail_closed:
        decision = json.loads(out)["hookSpecificOutput"]["permissionDecision"]
        assert decision == "deny"
    else:
        assert out == b""


def test_a_symlinked_log_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses.txt"
    target.write_text("keep me\n")
    link = tmp_path / "hook.log"
    os.symlink(target, link)
    state = tmp_path / "s.db"
    for i in range(1, 4):
        result = hook(state, claude_input(i), "--log", str(link))
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert target.read_text() == "keep me\n"
    assert b"--log" in result.stderr and b"symbolic link" in result.stderr
