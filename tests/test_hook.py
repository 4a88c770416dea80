"""`loop-brake hook` for real: separate processes, a real SQLite store, each dialect.

Acceptance items 1, 3 and 5 of issue 5 for the hook: three identical calls
(allow, allow, deny in the agent's own JSON), no argument bytes anywhere, and
failures of the input or the options that print one stderr line and keep each
agent's exit-code contract; how each agent's input is read (events, sessions,
the forced dialect). The store's own cases are in tests/test_hook_store.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, run_cli
from hook_helpers import (
    CANARY,
    MESSAGE_START,
    assert_allowed,
    assert_allowed_with_warning,
    claude_input,
    codex_input,
    cursor_input,
    gemini_input,
    hook,
    logged,
    store_bytes,
)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


# -- acceptance 1: three identical calls per dialect --------------------------------


def test_claude_code_third_identical_call_is_denied(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    third = hook(state, claude_input(3))
    assert third.returncode == 0
    out = json.loads(third.stdout)
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"].startswith(MESSAGE_START)
    assert "limit 3" in specific["permissionDecisionReason"]
    assert third.stderr == b""
    # a different call resets the streak; the old one starts again at 1
    assert_allowed(hook(state, claude_input(4, args={"command": "ls"})))
    assert_allowed(hook(state, claude_input(5)))
    assert_allowed(hook(state, claude_input(6)))
    assert json.loads(hook(state, claude_input(7)).stdout)["hookSpecificOutput"]


def test_codex_deny_has_exactly_three_fields(state: Path) -> None:
    assert_allowed(hook(state, codex_input(1)))
    assert_allowed(hook(state, codex_input(2)))
    out = json.loads(hook(state, codex_input(3)).stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert sorted(out["hookSpecificOutput"]) == [
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
    ]
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert_allowed(hook(state, codex_input(4, args={"command": "pwd"})))


def test_gemini_before_tool_deny(state: Path) -> None:
    assert_allowed(hook(state, gemini_input(1)))
    assert_allowed(hook(state, gemini_input(2)))
    third = hook(state, gemini_input(3))
    out = json.loads(third.stdout)
    assert sorted(out) == ["decision", "reason"]
    assert out["decision"] == "deny"
    assert out["reason"].startswith(MESSAGE_START)
    assert_allowed(hook(state, gemini_input(4, args={"command": "other"})))


@pytest.mark.parametrize("event", ["beforeMCPExecution", "preToolUse"])
def test_cursor_deny_and_string_tool_input(state: Path, event: str) -> None:
    # tool_input as a JSON string and as the object it encodes hash alike
    assert_allowed(hook(state, cursor_input(1, event=event)))
    assert_allowed(hook(state, cursor_input(2, args={"query": CANARY}, event=event)))
    out = json.loads(hook(state, cursor_input(3, event=event)).stdout)
    assert sorted(out) == ["agent_message", "permission", "user_message"]
    assert out["permission"] == "deny"
    assert out["agent_message"].startswith(MESSAGE_START)
    assert_allowed(hook(state, cursor_input(4, args='{"query": "else"}', event=event)))


def test_forced_agent_overrides_detection(state: Path) -> None:
    # no event name: a call for every decoder; --agent picks the dialect of the answer
    bare = json.loads(claude_input(1))
    del bare["hook_event_name"]
    for i in (1, 2):
        bare["tool_use_id"] = f"toolu_{i}"
        assert_allowed(hook(state, json.dumps(bare).encode(), "--agent", "gemini"))
    bare["tool_use_id"] = "toolu_3"
    out = json.loads(hook(state, json.dumps(bare).encode(), "--agent", "gemini").stdout)
    assert out["decision"] == "deny"


def test_forced_agent_reads_with_its_own_decoder(state: Path) -> None:
    # a Claude Code PreToolUse is not a Gemini pre-tool event: nothing to count
    for i in (1, 2, 3):
        result = hook(state, claude_input(i), "--agent", "gemini", "-m", "1")
        assert_allowed(result)
        assert result.stderr == b""
    assert not state.exists()


@pytest.mark.parametrize(
    "payload",
    [
        claude_input(1, hook_event_name="PostToolUse", tool_response={"stdout": CANARY}),
        claude_input(1, hook_event_name="Stop"),
        gemini_input(1).replace(b"BeforeTool", b"AfterTool"),
        cursor_input(1, event="afterMCPExecution"),
        cursor_input(1, event="beforeShellExecution"),
        json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit"}).encode(),
    ],
    ids=["post-tool-use", "stop", "after-tool", "after-mcp", "before-shell", "prompt"],
)
def test_events_that_are_not_pre_tool_calls_are_allowed_silently(
    state: Path, payload: bytes
) -> None:
    for _ in range(3):
        result = hook(state, payload, "-m", "1", "--fail-closed")
        assert_allowed(result)
        assert result.stderr == b""
    assert not state.exists()


def test_max_repeats_option_and_environment(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1), "-m", "2"))
    assert json.loads(hook(state, claude_input(2), "-m", "2").stdout)
    env = cli_env(DSH_LOOP_BRAKE_MAX_REPEATS="5")
    other = state.parent / "other.db"
    for i in range(1, 5):
        result = run_cli("hook", "--state", str(other), input=claude_input(i), env=env)
        assert_allowed(result)
    result = run_cli("hook", "--state", str(other), input=claude_input(5), env=env)
    assert "limit 5" in json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_duplicate_call_id_is_not_counted_again(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(1)))  # the same call seen twice
    assert_allowed(hook(state, claude_input(2)))
    denied = hook(state, claude_input(3))
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    again = hook(state, claude_input(3))  # same id again: same verdict, count stays 3
    assert again.stdout == denied.stdout


def test_subagent_has_its_own_streak(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    # a subagent's identical call neither trips nor extends the main streak
    assert_allowed(hook(state, claude_input(3, agent_id="agent-a")))
    main = hook(state, claude_input(4))
    assert "3 times" in json.loads(main.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    listing = run_cli("state", "list", "--state", str(state), "--json")
    sessions = {json.loads(line)["sessionId"] for line in listing.stdout.splitlines()}
    assert sessions == {"sess-1", "sess-1/agent-a"}


# -- acceptance 3: no argument value anywhere -------------------------------------------


def test_no_argument_value_in_store_outputs_listing_or_log(state: Path) -> None:
    log = state.parent.parent / "shadow.jsonl"
    args = {"command": CANARY, CANARY + "-key": [CANARY, {"nested": CANARY}]}
    outputs = b""
    for i in range(4):
        result = hook(state, claude_input(i, args=args))
        outputs += result.stdout + result.stderr
        result = hook(
            state, claude_input(i, session="shadowed", args=args), "--shadow", "--log", str(log)
        )
        assert_allowed(result)
        outputs += result.stdout + result.stderr
    assert b"deny" in outputs
    listing = run_cli("state", "list", "--state", str(state))
    listing_json = run_cli("state", "list", "--state", str(state), "--json")
    secret = CANARY.encode()
    assert secret not in outputs
    assert secret not in store_bytes(state)
    assert secret not in listing.stdout + listing.stderr + listing_json.stdout
    assert secret not in log.read_bytes()
    # the sqlite file bytes after a checkpoint too
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert secret not in store_bytes(state)


# -- shadow and fail-closed ---------------------------------------------------------------


def test_shadow_never_denies_and_logs_the_would_be_denial(state: Path) -> None:
    log = state.parent.parent / "shadow.jsonl"
    for i in range(4):
        assert_allowed(hook(state, claude_input(i), "--shadow", "--log", str(log)))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["count"] for r in records] == [3, 4]
    first = records[0]
    assert first["verdict"] == "deny"
    assert first["toolName"] == "Bash"
    assert first["sessionId"] == "sess-1"
    assert first["callId"] == "toolu_0002"
    assert first["maxRepeats"] == 3
    assert len(first["hashPrefix"]) == 12
    assert first["code"] == "LOOP_BRAKE"
    assert first["message"].startswith(MESSAGE_START)


def test_fail_closed_denies_when_the_brake_cannot_decide(state: Path) -> None:
    result = hook(state, claude_input(1), "--fail-closed", "-m", "0")
    assert result.returncode == 0
    reason = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "could not decide" in reason and "--fail-closed" in reason
    assert result.stderr.decode().count("\n") == 1
    # unparseable input: no dialect to answer in, so exit 2 (every agent blocks on 2)
    result = hook(state, b"{not json", "--fail-closed")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert b"not valid JSON" in result.stderr
    # shadow wins over fail-closed: never deny
    assert result.stdout == b""
    assert_allowed_with_warning(hook(state, b"{not json", "--fail-closed", "--shadow"))


# -- acceptance 5: failures give one stderr line and the documented exit --------------------


@pytest.mark.parametrize(
    "payload, expected",
    [
        (b"", "hook input is empty"),
        (b'{"session_id": "s", "tool_input": {"a": "' + CANARY.encode(), "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"session_id": "s", "tool_input": {}}', "hook input: tool_name missing"),
        (b'{"session_id": "s", "tool_name": 7, "tool_input": {}}', "tool_name not a string"),
        (b'{"session_id": 42, "tool_name": "Bash"}', "session_id is not a string"),
        (b'{"session_id": "s", "tool_name": "Bash", "agent_id": 1}', "agent_id is not a string"),
        (b'{"conversation_id": 1.5, "tool_name": "Bash"}', "conversation_id is not a string"),
        (
            b'{"session_id": "s", "tool_name": "Bash", "tool_use_id": true}',
            "tool_use_id is not a string or an integer",
        ),
        (b"\xff\xfe", "not valid UTF-8"),
    ],
)
def test_unparseable_input_fails_open_with_one_line(
    state: Path, payload: bytes, expected: str
) -> None:
    text = assert_allowed_with_warning(hook(state, payload))
    assert expected in text
    assert "allowed" in text
    assert CANARY not in text


def test_bad_options_fail_open_not_exit_2(state: Path) -> None:
    for args in (["-m", "zero"], ["-m", "0"], ["--ttl", "soon"], ["--agent", "vim"], ["--bogus"]):
        text = assert_allowed_with_warning(hook(state, claude_input(1), *args))
        assert "allowed" in text


def test_help_lists_the_options() -> None:
    result = run_cli("hook", "--help")
    assert result.returncode == 0
    for option in ("--agent", "--max-repeats", "--state", "--ttl", "--fail-closed", "--shadow"):
        assert option.encode() in result.stdout


def test_hook_path_imports_nothing_it_does_not_need(state: Path) -> None:
    """The hook runs before every tool call: no rich, no transcript formats, no reader."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loop_brake_cli", "hook", "--state", str(state)],
        input=claude_input(1),
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines()}
    for unwanted in ("rich", "loop_brake_cli.formats", "loop_brake_cli.readers.reader", "argparse"):
        assert unwanted not in imported
    assert "loop_brake_cli.hook.runner" in imported


def test_session_edges_follow_the_nullish_rule(state: Path) -> None:
    log = state.parent.parent / "log.jsonl"
    cursor = json.loads(cursor_input(4))
    cursor.update(conversation_id=None, session_id="cs")  # null falls back to session_id
    inputs = [
        claude_input(1, session=""),  # "" is a session of its own
        claude_input(2, session=None),  # null falls back to "default"
        claude_input(3, session="", agent_id="sub"),
        json.dumps(cursor).encode(),
    ]
    for payload in inputs:
        assert_allowed(hook(state, payload, "--shadow", "-m", "1", "--log", str(log)))
    assert [s for s, _, _, _ in logged(log)] == ["", "default", "/sub", "cs"]


def test_empty_tool_name_is_a_call(state: Path) -> None:
    payload = json.loads(claude_input(1))
    payload["tool_name"] = ""
    out = hook(state, json.dumps(payload).encode(), "-m", "1")
    reason = json.loads(out.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith('loop brake: tool "" called 1 times')
