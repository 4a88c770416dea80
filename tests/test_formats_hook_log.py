"""The claude-hooks format (formats/hook_log.py): logs of agent hook inputs.

One hook input per line, of any of the four agents, read by that agent's own
decoder (the live hook's): a pre-tool event is one call, a repeated tool_use_id
is marked a duplicate by the streak step (not dropped). The real fasthooks hook
log records the same session as the fasthooks main transcript: its 10
PreToolUse events are that transcript's 10 tool_use blocks (SOURCES.md: "0
tool_use blocks; it holds PreToolUse events").
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from adapter_helpers import (
    assert_never_raises,
    check_errors_hide,
    judge_all,
    mutated,
)
from adapter_helpers import parse_bytes as parse_all
from adapter_helpers import read as read_all
from conftest import ROOT
from hypothesis import given, settings

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.records import ToolCall, ToolResult, Usage
from loop_brake_cli.readers.pipeline import judge

FIXTURES = ROOT / "tests" / "fixtures" / "claude-hooks"
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "claude-code"
SAMPLE = ROOT / "samples" / "formats" / "claude-hooks.jsonl"
CANARY = "CANARY-9a7b3c-do-not-print"


def read(path: Path, fmt: str | None = None) -> tuple[str, list]:
    """The records but results and usage (tests/test_hook_results.py checks results)."""
    name, records = read_all(path, fmt)
    return name, [r for r in records if not isinstance(r, (ToolResult, Usage))]


def parse_bytes(fmt: str, data: bytes) -> list:
    return [r for r in parse_all(fmt, data) if not isinstance(r, (ToolResult, Usage))]


def test_real_hook_log_counts_its_pre_tool_use_events() -> None:
    fmt, records = read(FIXTURES / "real--fasthooks-hook-logs.jsonl")
    assert fmt == "claude-hooks"
    assert all(isinstance(r, ToolCall) for r in records)
    assert len(records) == 10
    assert Counter(r.tool for r in records) == Counter({"Bash": 5, "Write": 3, "Read": 2})
    assert {r.session for r in records} == {"c45af7b1-cb7c-4e51-93db-8cbb250a877a"}


def test_real_hook_log_matches_the_transcript_call_for_call() -> None:
    _, hooks = read(FIXTURES / "real--fasthooks-hook-logs.jsonl")
    _, transcript = read(TRANSCRIPTS / "real--fasthooks-main-transcript.jsonl")
    assert [call_hash(r.tool, r.args) for r in hooks] == [
        call_hash(r.tool, r.args) for r in transcript
    ]


def judged(path: Path) -> list[tuple]:
    _, records = read(path)
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        if verdict is None:
            got.append(("bad", record.line, record.message))
        else:
            got.append(
                (record.line, record.tool, record.session, record.call_id, verdict.count)
                + (("duplicate",) if verdict.duplicate else ())
            )
    return got


def test_edge_cases() -> None:
    assert judged(FIXTURES / "synthetic--hooks.jsonl") == [
        (2, "Bash", "sess-H", "toolu_a", 1),  # PostToolUse (line 3) is not a call
        (4, "Bash", "sess-H", "toolu_b", 2),
        (5, "Bash", "sess-H", "toolu_b", 2, "duplicate"),  # logged twice: not counted again
        (6, "Read", "sess-H/ag1", "toolu_c", 1),
        (7, "Bash", "sess-H", "toolu_d", 3),
        ("bad", 8, "tool_name missing"),
        (
            "bad",
            9,
            "not valid JSON: expecting property name enclosed in double quotes at column 55",
        ),
    ]


def test_codex_gemini_and_cursor_logs() -> None:
    assert judged(FIXTURES / "synthetic--codex.jsonl") == [
        (2, "shell", "cx-1", "call_1", 1),  # PostToolUse (3) and Stop (6) are not calls
        (4, "shell", "cx-1/worker-1", "call_2", 1),  # a subagent's own streak
        (5, "shell", "cx-1", "call_3", 2),
    ]
    assert judged(FIXTURES / "synthetic--gemini.jsonl") == [
        (2, "read_file", "gm-1", None, 1),  # AfterTool (3) is not a call
        (4, "read_file", "gm-1", None, 2),
        (5, "read_file", "gm-1", None, 3),
    ]
    # beforeShellExecution holds a command, not a tool call; a JSON-string
    # tool_input hashes as the object it encodes
    assert judged(FIXTURES / "synthetic--cursor.jsonl") == [
        (3, "database_query", "cu-1", None, 1),
        (5, "database_query", "cu-1", "tu-2", 2),
    ]


def test_one_log_may_mix_agents_and_event_renames() -> None:
    lines = [
        {"session_id": "s", "event": "PreToolUse", "tool_name": "a", "tool_input": None},
        {"session_id": "s", "event": "PostToolUse", "tool_name": "a"},
        {"session_id": "s", "event": "BeforeTool", "tool_name": "a", "tool_input": "{}"},
        {"conversation_id": "s", "event": "preToolUse", "tool_name": "a", "tool_input": {}},
        {"session_id": "s", "turn_id": "t", "tool_name": "a"},  # no event name: a call
        {"session_id": "s", "hook_event_name": ["PreToolUse"], "tool_name": "a"},
        {"session_id": 42, "hook_event_name": "PreToolUse", "tool_name": "a"},
        {"session_id": "", "hook_event_name": "PreToolUse", "tool_name": "a"},
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": 7},
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "a", "tool_use_id": 7},
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "a", "tool_use_id": 7.0},
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "a", "tool_use_id": "7"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    records = parse_bytes("claude-hooks", data)
    got = [
        (r.line, r.session, r.call_id) if isinstance(r, ToolCall) else (r.line, r.message)
        for r in records
    ]
    assert got == [
        (1, "s", None),
        (3, "s", None),
        (4, "s", None),
        (5, "s", None),
        (7, "session_id is not a string"),
        (8, "", None),
        (9, "tool_name not a string"),
        (10, "s", 7),
        (11, "s", 7),
        (12, "s", "7"),
    ]
    verdicts = [v for _, v in judge(records, LoopBrake(9)) if v is not None]
    assert [(v.count, v.duplicate) for v in verdicts] == [
        (1, False),
        (2, False),
        (3, False),
        (4, False),
        (1, False),
        (5, False),
        (5, True),  # tool_use_id 7.0 is the id 7 again
        (6, False),  # "7" is another id
    ]


def test_canary_never_in_errors() -> None:
    rows = [
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_input": {"k": CANARY}},
        {"session_id": {"x": CANARY}, "event": "PreToolUse", "tool_name": "Bash"},
        {"session_id": "s", "event": "PreToolUse", "tool_name": "Bash", "tool_use_id": [CANARY]},
        [CANARY],
    ]
    data = ("\n".join(json.dumps(r) for r in rows) + '\n{"tool_input":"' + CANARY).encode()
    errors, _ = check_errors_hide("claude-hooks", data, CANARY)
    assert errors == 5  # the missing tool_name, the three bad fields, the cut line


@pytest.mark.parametrize(
    "path",
    [*sorted(FIXTURES.iterdir()), SAMPLE],
    ids=lambda p: p.name,
)
def test_detect(path: Path) -> None:
    fmt, records = read(path)
    assert fmt == "claude-hooks"
    assert any(isinstance(r, ToolCall) for r in records)


def test_type_fields_of_any_json_type_never_raise() -> None:
    rows = [
        {"hook_event_name": [], "session_id": "s"},
        {"event": {"a": 1}, "session_id": "s"},
        {"event": ["PreToolUse"], "tool_name": "x"},
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert_never_raises("claude-hooks", data)


_EVENTS = [json.loads(line) for line in SAMPLE.read_text().splitlines()]


@settings(max_examples=150, deadline=None)
@given(mutated(_EVENTS))
def test_fuzz_mutated_events_never_raise(line) -> None:
    judge_all("claude-hooks", json.dumps(line).encode())
