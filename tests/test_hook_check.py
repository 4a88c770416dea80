"""hook.check: the canary decision a hook command must pass before it is trusted.

Written from docs/hook.md and hook/check.py's docstring: the command works when it
exits 0, says nothing on stderr, and answers nothing but an allow or JSON without the
fail-open notice; each agent's canary is that agent's own pre-tool input (Gemini CLI's
event is ``BeforeTool``), and the canary session is forgotten in the store the
command itself names.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_hook_install import PROGRAM

from loop_brake_cli.hook.check import check_command, command_store, forget

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")

HOOK = f"{shlex.quote(PROGRAM)} hook"  # as install writes it: PROGRAM hook OPTIONS


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_BRAKE_", "DSH_"))}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return env


def test_an_answer_carrying_the_fail_open_notice_fails_the_check(tmp_path: Path) -> None:
    answer = '{"systemMessage": "loop brake is off for this session: the store failed"}'
    result = check_command(f"cat >/dev/null; printf '%s' '{answer}'", "claude-code", _env(tmp_path))
    assert not result.ok and result.reason == "its answer says the brake is off"


def test_an_answer_that_is_not_json_fails_and_an_empty_one_passes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    said = check_command("cat >/dev/null; echo allowed", "claude-code", env)
    assert not said.ok and "not JSON" in said.reason
    assert check_command("cat >/dev/null", "claude-code", env).ok


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "cursor"])
def test_each_agents_canary_reaches_a_failing_store(tmp_path: Path, agent: str) -> None:
    """A store that is a folder fails open on the agent's own pre-tool input: had the
    canary been another event, the hook would have passed it by and the check too."""
    if not os.path.isfile(PROGRAM):
        pytest.skip("no console script beside the interpreter")
    store = tmp_path / "a-folder"
    store.mkdir()
    env = _env(tmp_path)
    result = check_command(f"{HOOK} --agent {agent} --store {shlex.quote(str(store))}", agent, env)
    assert not result.ok and result.reason, agent
    good = tmp_path / "brake.sqlite3"
    command = f"{HOOK} --agent {agent} --state {shlex.quote(str(good))}"
    result = check_command(command, agent, env)
    assert result.ok, agent
    # counted in the canary session, which forget then removes: nothing is left
    forget(command_store(command, env), agent, result.session, env)
    listed = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "state", "list", "--json", "--state", str(good)],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert listed.returncode == 0 and listed.stdout == b"", (agent, listed.stdout)


def test_the_store_a_command_counts_in_is_its_own(tmp_path: Path) -> None:
    state = str(tmp_path / "s.sqlite3")
    assert command_store(f"/opt/bin/loop-brake hook --agent codex --state {state}") == state
    assert command_store("/opt/bin/loop-brake run -- codex") is None
    assert command_store("hook --state x") is None


def test_forget_removes_the_marker_where_the_commands_env_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loop_brake_cli.hook.notice import first_notice, marker_dir

    theirs = {"XDG_STATE_HOME": str(tmp_path / "theirs")}
    monkeypatch.setenv("XDG_STATE_HOME", theirs["XDG_STATE_HOME"])
    assert first_notice("claude-code", "loop-brake-check-0123456789ab")
    assert len(os.listdir(marker_dir(theirs))) == 1
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "mine"))
    forget(None, "claude-code", "loop-brake-check-0123456789ab", theirs)
    assert os.listdir(marker_dir(theirs)) == []
