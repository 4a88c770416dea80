"""Lone surrogates in the hook's identifiers count as ``filter`` counts them (issue 23).

``"tool_name":"\\ud800x"`` is valid JSON that is not valid Unicode text. The hook
keeps its streaks in SQLite, whose text must be UTF-8, and used to fail open with
``internal error (UnicodeEncodeError)`` on every such call: the loop was never
denied. Each agent dialect, through the hook's real entry point, must now deny the
third identical call, and report the identifiers as they came (escaped JSON).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loop_brake_cli import LoopBrake
from loop_brake_cli.hook.runner import main as hook_main
from loop_brake_cli.stores.sqlite_store import StateStore

TOOL = '"\\ud800x"'
SESSION = '"s\\udfff"'


def pre_tool_input(agent: str, call_id: str) -> bytes:
    """One pre-tool input in ``agent``'s dialect, with surrogates in every identifier."""
    if agent == "cursor":
        head = f'"hook_event_name":"preToolUse","generation_id":"g1","conversation_id":{SESSION}'
    else:
        event = "BeforeTool" if agent == "gemini" else "PreToolUse"
        head = f'"hook_event_name":"{event}","cwd":"/w","session_id":{SESSION}'
    tail = "" if agent == "gemini" else f',"tool_use_id":"{call_id}\\udc00"'
    return f'{{{head},"tool_name":{TOOL},"tool_input":{{"q":1}}{tail}}}'.encode()


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "cursor"])
def test_surrogate_identifiers_are_counted_and_denied_at_the_third_call(
    agent: str, tmp_path: Path
) -> None:
    state, log = tmp_path / "state.db", tmp_path / "denials.jsonl"
    decisions = []
    for number in (1, 2, 3, 4):
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", agent, "--state", str(state), "--log", str(log)]
        assert hook_main(argv, io.BytesIO(pre_tool_input(agent, f"t{number}")), out, err) == 0
        assert "internal error" not in err.getvalue(), err.getvalue()
        decisions.append("deny" if b'"deny"' in out.getvalue() else "allow")
    assert decisions == ["allow", "allow", "deny", "deny"]
    first = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    assert (first["toolName"], first["sessionId"], first["count"]) == ("\ud800x", "s\udfff", 3)
    if agent != "gemini":  # Gemini CLI sends no call id
        assert first["callId"] == "t3\udc00"
    rows, skipped = StateStore(str(state)).sessions("s\udfff")
    assert skipped == 0 and [(row.tool, row.count) for row in rows] == [("\ud800x", 4)]


def test_sessions_differing_only_in_their_lone_surrogate_stay_apart(tmp_path: Path) -> None:
    """As in ``filter``'s memory: the stored key is the string itself, not U+FFFD."""
    store = StateStore(str(tmp_path / "state.db"))
    digest = bytes(32)
    for session in ("s\ud800", "s\udc00", "s\ufffd", "s\ud800"):
        state, duplicate = store.count_call(session, "t\udfff", digest, None, 3)
        verdict = LoopBrake(3).slot_verdict(state, session, None, duplicate)
        assert verdict.session_id == session and verdict.tool_name == "t\udfff"
    assert verdict.count == 2
    assert store.reset("s\udc00") == 1
    rows, _ = store.sessions()
    assert sorted(row.session for row in rows) == ["s\ud800", "s\ufffd"]
