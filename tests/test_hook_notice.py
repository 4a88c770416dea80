"""The fail-open notice (issue 36 item 10, ``hook/notice.py``): when the hook cannot
judge a call, the call is still allowed, and the first time in a session the agent's
user-visible field says so (Claude Code's, Codex's and Gemini CLI's ``systemMessage``);
Cursor has no such field. Each test has its own ``$XDG_STATE_HOME`` (conftest), where
the markers live."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import cli_env, run_cli, spawn_cli
from hook_helpers import CANARY, claude_input, codex_input, cursor_input, gemini_input

INPUTS = {
    "claude-code": claude_input,
    "codex": codex_input,
    "gemini": gemini_input,
    "cursor": cursor_input,
}
ALLOWED = "; the call was allowed (the brake fails open)\n"


@pytest.fixture
def bad_policy(tmp_path: Path) -> Path:
    policy = tmp_path / "bad.toml"
    policy.write_text("[stop]\nafter_denial = 2\n")
    return policy


def hook(tmp: Path, payload: bytes, *args: str, env: dict[str, str] | None = None):
    state = tmp / "state" / "state.db"
    return run_cli("hook", "--state", str(state), *args, input=payload, env=env)


def reason_of(result: subprocess.CompletedProcess[bytes]) -> str:
    """The reason of the one stderr line a fail-open writes."""
    text = result.stderr.decode()
    assert text.startswith("loop-brake hook: ") and text.endswith(ALLOWED), text
    assert text.count("\n") == 1
    return text.removeprefix("loop-brake hook: ").removesuffix(ALLOWED)


def markers() -> list[Path]:
    folder = Path(os.environ["XDG_STATE_HOME"]) / "loop-brake" / "fail-open"
    return sorted(folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_the_first_fail_open_of_a_session_is_told_in_system_message(
    tmp_path: Path, bad_policy: Path, agent: str
) -> None:
    first = hook(tmp_path, INPUTS[agent](1), "--policy", str(bad_policy))
    assert first.returncode == 0
    reason = reason_of(first)
    assert reason.startswith(f"unusable policy: {bad_policy}:2:1: unknown key")
    # the notice alone: no decision field, so the call runs as with no answer
    assert json.loads(first.stdout) == {
        "systemMessage": f"loop brake is off for this session: {reason}"
    }
    again = hook(tmp_path, INPUTS[agent](2), "--policy", str(bad_policy))
    assert (again.returncode, again.stdout) == (0, b"")
    assert reason_of(again) == reason  # stderr says it every time


def test_each_session_is_told_once(tmp_path: Path, bad_policy: Path) -> None:
    told = []
    for session in ["a", "b", "a", "b", "c"]:
        result = hook(tmp_path, claude_input(1, session=session), "--policy", str(bad_policy))
        reason_of(result)
        told.append(bool(result.stdout))
    assert told == [True, True, False, False, True]
    assert len(markers()) == 3


def test_cursor_has_no_field_for_it(tmp_path: Path, bad_policy: Path) -> None:
    result = hook(tmp_path, cursor_input(1), "--policy", str(bad_policy))
    assert (result.returncode, result.stdout) == (0, b"")
    reason_of(result)
    assert markers() == []


def test_a_judged_call_tells_nothing(tmp_path: Path) -> None:
    for i in range(1, 3):
        result = hook(tmp_path, claude_input(i))
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert markers() == []


def test_fail_closed_denies_and_does_not_notice(tmp_path: Path, bad_policy: Path) -> None:
    result = hook(tmp_path, claude_input(1), "--policy", str(bad_policy), "--fail-closed")
    answer = json.loads(result.stdout)
    assert "systemMessage" not in answer
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert markers() == []


def test_shadow_fails_open_and_tells(tmp_path: Path, bad_policy: Path) -> None:
    result = hook(tmp_path, claude_input(1), "--policy", str(bad_policy), "--shadow")
    assert set(json.loads(result.stdout)) == {"systemMessage"}


def test_a_post_tool_failure_prints_nothing(tmp_path: Path, bad_policy: Path) -> None:
    payload = claude_input(1, hook_event_name="PostToolUse", tool_response={"ok": 1})
    result = hook(tmp_path, payload, "--policy", str(bad_policy))
    assert (result.returncode, result.stdout) == (0, b"")
    assert "the tool's result was not recorded" in result.stderr.decode()
    assert markers() == []


def test_an_unreachable_store_is_told(tmp_path: Path) -> None:
    """A store that does not answer: the reason names it (without its password)."""
    store = "redis://:hunter2-password@127.0.0.1:1/0"
    result = run_cli("hook", "--store", store, input=claude_input(1))
    assert result.returncode == 0
    message = json.loads(result.stdout)["systemMessage"]
    assert message.startswith("loop brake is off for this session: ")
    assert "127.0.0.1:1" in message and "hunter2" not in message


def test_without_a_place_to_remember_it_tells_every_time(tmp_path: Path, bad_policy: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = cli_env(XDG_STATE_HOME=str(blocker))
    for i in range(1, 3):
        result = hook(tmp_path, claude_input(i), "--policy", str(bad_policy), env=env)
        assert set(json.loads(result.stdout)) == {"systemMessage"}


def test_an_input_without_a_session_id_is_told_every_time(tmp_path: Path) -> None:
    for _ in range(2):
        result = hook(tmp_path, b"this is not json", "--agent", "gemini")
        reason = reason_of(result)
        assert json.loads(result.stdout) == {
            "systemMessage": f"loop brake is off for this session: {reason}"
        }
    assert markers() == []


def test_concurrent_hooks_tell_the_session_once(tmp_path: Path, bad_policy: Path) -> None:
    state = tmp_path / "state" / "state.db"
    argv = ("hook", "--state", str(state), "--policy", str(bad_policy))
    processes = [spawn_cli(*argv) for _ in range(6)]
    outputs = [p.communicate(claude_input(i), timeout=60) for i, p in enumerate(processes)]
    assert all(p.returncode == 0 for p in processes)
    assert sorted(bool(out) for out, _ in outputs) == [False] * 5 + [True]


def test_markers_hold_no_session_id_nor_argument(tmp_path: Path, bad_policy: Path) -> None:
    session = f"session-{CANARY}"
    result = hook(tmp_path, claude_input(1, session=session), "--policy", str(bad_policy))
    assert CANARY.encode() not in result.stdout + result.stderr
    (marker,) = markers()
    assert len(marker.name) == 32 and int(marker.name, 16) >= 0
    assert marker.read_bytes() == b""
    assert marker.stat().st_mode & 0o777 == 0o600
    assert marker.parent.stat().st_mode & 0o777 == 0o700
    # never beside the state file: that folder is the store's
    assert not (tmp_path / "state" / "fail-open").exists()


def test_each_agent_is_told_once_for_the_same_session_id(tmp_path: Path, bad_policy: Path) -> None:
    """The marker is per (agent, session): Claude Code and Gemini CLI may share an id."""
    same = json.loads(gemini_input(1))["session_id"]
    told = []
    for payload in (claude_input(1, session=same), gemini_input(1), gemini_input(2)):
        result = hook(tmp_path, payload, "--policy", str(bad_policy))
        told.append(bool(result.stdout))
    assert told == [True, True, False]
    assert len(markers()) == 2


def test_markers_older_than_a_week_are_removed_newer_ones_kept(
    tmp_path: Path, bad_policy: Path
) -> None:
    folder = Path(os.environ["XDG_STATE_HOME"]) / "loop-brake" / "fail-open"
    folder.mkdir(parents=True)
    now = time.time()
    for name, days in (("a" * 32, 2), ("b" * 32, 6), ("c" * 32, 8)):
        (folder / name).touch()
        os.utime(folder / name, (now - days * 86400, now - days * 86400))
    result = hook(tmp_path, claude_input(1, session="new"), "--policy", str(bad_policy))
    assert result.stdout  # told, and a marker made: the old ones pruned
    names = [path.name for path in markers()]
    assert len(names) == 3 and "a" * 32 in names and "b" * 32 in names and "c" * 32 not in names
