"""Policy files are regular files of at most 1 MiB, refused at once otherwise (issue 23).

``--policy /dev/zero`` used to read without limit (gigabytes of memory) and a FIFO
as ``--policy`` or ``$LOOP_BRAKE_POLICY`` blocked forever, in the hook too (an
agent waiting on its hook). Every command now gives one located line: exit 2,
and the hook lets the call run (it fails open) at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env
from test_small_files import special_file

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.policy import PolicyError
from loop_brake_cli.core.policy.load import MAX_POLICY_BYTES

SAMPLE = str(ROOT / "samples" / "stuck-agent.jsonl")
HOOK_INPUT = b'{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"t","tool_input":{}}'


def run(args: list[str], env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess:
    # The timeout only turns a regression (a blocked read) into a failure.
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )


COMMANDS = {
    "filter": [SAMPLE],
    "replay": [SAMPLE],
    "check-config": [],
    "mcp-proxy": ["--", sys.executable, str(ROOT / "tests" / "echo_server.py")],
}


@pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="POSIX")
@pytest.mark.parametrize("kind", ["device", "fifo", "large"])
@pytest.mark.parametrize(
    "command, how",
    [(command, "--policy") for command in sorted(COMMANDS)]
    # check-config checks only a policy that --policy names
    + [(command, "LOOP_BRAKE_POLICY") for command in sorted(COMMANDS) if command != "check-config"],
)
def test_an_unusable_policy_file_is_one_located_line_and_exit_2(
    tmp_path: Path, kind: str, how: str, command: str
) -> None:
    path, reason = special_file(kind, tmp_path, MAX_POLICY_BYTES)
    env = cli_env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    args = [command]
    if how == "--policy":
        args += ["--policy", path]
    else:
        env["LOOP_BRAKE_POLICY"] = path
    result = run(args + COMMANDS[command], env)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.splitlines() == [f"loop-brake {command}: {path}: the policy file {reason}"]
    assert "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX")
@pytest.mark.parametrize("kind", ["device", "fifo", "large"])
def test_the_hook_fails_open_at_once_on_an_unusable_policy(tmp_path: Path, kind: str) -> None:
    path, reason = special_file(kind, tmp_path, MAX_POLICY_BYTES)
    env = cli_env(LOOP_BRAKE_POLICY=path, LOOP_BRAKE_STATE=str(tmp_path / "state.db"))
    result = run(["hook"], env, HOOK_INPUT)
    assert result.returncode == 0
    said = f"unusable policy: {path}: the policy file {reason}"
    assert said in result.stderr.decode()
    # allowed: no decision, only the session's one fail-open notice (hook/notice.py)
    notice = json.loads(result.stdout)
    assert set(notice) == {"systemMessage"} and said in notice["systemMessage"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX")
def test_the_library_raises_a_policy_error(tmp_path: Path) -> None:
    path, reason = special_file("fifo", tmp_path, MAX_POLICY_BYTES)
    with pytest.raises(PolicyError, match="named pipe"):
        LoopBrake(policy=path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX")
@pytest.mark.parametrize("where", ["local", "user"])
def test_a_discovered_fifo_is_refused_not_skipped(tmp_path: Path, where: str) -> None:
    project, config = tmp_path / "project", tmp_path / "config"
    (project / ".git").mkdir(parents=True)
    (config / "loop-brake").mkdir(parents=True)
    fifo = (
        project / ".loop-brake.toml" if where == "local" else config / "loop-brake" / "policy.toml"
    )
    os.mkfifo(fifo)
    env = cli_env(XDG_CONFIG_HOME=str(config), LOOP_BRAKE_STATE=str(tmp_path / "state.db"))
    env.pop("LOOP_BRAKE_POLICY", None)
    result = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "filter", SAMPLE],
        capture_output=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    assert result.returncode == 2
    reason = "the policy file is a named pipe (FIFO), not a regular file"
    assert result.stderr.decode().splitlines() == [f"loop-brake filter: {fifo}: {reason}"]
    hook = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook"],
        input=HOOK_INPUT,
        capture_output=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    assert hook.returncode == 0 and reason in hook.stderr.decode()
