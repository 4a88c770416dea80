"""The hook under a policy: each agent's stop form, a bad policy as a brake failure,
``hook install --policy``, and a store shared with policy-less calls."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import cli_env, run_cli
from hook_helpers import assert_fail_open_notice
from test_hook_install import QUOTED

from loop_brake_cli.hook.runner import main as hook_main

POLICY = "[stop]\nafter_denials = 2\n[cycles]\nmax_period = 2\nmax_repeats = 2\n"


def hook(tmp: Path, agent: str, tool: str, *extra: str, args: str = "{}") -> tuple[int, str, str]:
    event = {"gemini": "BeforeTool", "cursor": "preToolUse"}.get(agent, "PreToolUse")
    payload = f'{{"hook_event_name":"{event}","session_id":"s","tool_name":"{tool}",'
    payload += f'"tool_input":{args}}}'
    out, err = io.BytesIO(), io.StringIO()
    argv = ["--agent", agent, "--state", str(tmp / f"{agent}.db"), *extra]
    status = hook_main(argv, io.BytesIO(payload.encode()), out, err)
    return status, out.getvalue().decode(), err.getvalue()


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "cursor"])
def test_stop_in_each_agents_own_form(tmp_path: Path, agent: str) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY)
    answers = [hook(tmp_path, agent, "grep", "--policy", str(policy))[1] for _ in range(4)]
    assert answers[:2] == ["", ""]
    deny, stop = json.loads(answers[2]), json.loads(answers[3])
    assert "continue" not in deny
    message = "loop brake: 2 calls in a row were denied in this session (stop after 2)"
    if agent == "cursor":  # no stop form: the denial carries the stop message
        assert set(stop) == {"permission", "agent_message", "user_message"}
        assert stop["agent_message"].startswith(message)
    else:
        assert stop["continue"] is False and stop["stopReason"].startswith(message)
        if agent == "gemini":
            assert stop["decision"] == "deny" and stop["reason"] == stop["stopReason"]
        else:
            specific = stop["hookSpecificOutput"]
            assert specific["permissionDecision"] == "deny"
            assert specific["permissionDecisionReason"] == stop["stopReason"]


def test_cycle_through_the_store(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text("[cycles]\nmax_period = 3\nmax_repeats = 2\n")
    got = []
    for args in ['{"a":1}', '{"b":1}', '{"c":1}', '{"a":1}', '{"b":1}', '{"c":1}']:
        got.append(hook(tmp_path, "claude-code", "grep", "--policy", str(policy), args=args)[1])
    assert got[:5] == [""] * 5
    reason = json.loads(got[5])["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith('loop brake: calls "grep", "grep", "grep" repeated 2 times')


def test_bad_policy_is_a_brake_failure(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("[stop]\nafter_denial = 2\n")
    status, out, err = hook(tmp_path, "claude-code", "grep", "--policy", str(bad))
    assert status == 0
    assert_fail_open_notice(out.encode())
    assert f'unusable policy: {bad}:2:1: unknown key "after_denial" in [stop]' in err
    assert "the call was allowed (the brake fails open)" in err
    status, out, err = hook(tmp_path, "claude-code", "grep", "--policy", str(bad), "--fail-closed")
    assert status == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_without_a_policy_the_store_is_untouched_by_policy_rows(tmp_path: Path) -> None:
    import sqlite3

    for _ in range(3):
        hook(tmp_path, "claude-code", "grep")
    conn = sqlite3.connect(tmp_path / "claude-code.db")
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "policy_state" not in tables


def test_hook_install_policy(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY)
    env = cli_env(HOME=str(tmp_path))
    done = run_cli("hook", "install", "claude-code", "--dry-run", "--policy", str(policy), env=env)
    assert done.returncode == 0
    command = f"{QUOTED} hook --agent claude-code --policy {policy}"
    assert json.dumps(command).encode() in done.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[cycles]\nmax_repeats = 1\n")
    done = run_cli("hook", "install", "claude-code", "--policy", str(bad), env=env)
    assert done.returncode == 2
    assert f"{bad}:2:1: max_repeats must be an integer of at least 2".encode() in done.stderr
    assert not (tmp_path / ".claude" / "settings.json").exists()
