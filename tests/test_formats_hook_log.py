"""The claude-hooks adapter: Claude Code hook-event logs, one PreToolUse = one call.

The real fasthooks hook log records the same session as the fasthooks main
transcript: its 10 PreToolUse events are that transcript's 10 tool_use blocks
(SOURCES.md: "0 tool_use blocks; it holds PreToolUse events").
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
    read,
)
from conftest import ROOT
from hypothesis import given, settings

from loop_brake_cli.brake import LoopBrake
from loop_brake_cli.canonical import call_hash
from loop_brake_cli.pipeline import judge
from loop_brake_cli.records import ToolCall

FIXTURES = ROOT / "tests" / "fixtures" / "claude-hooks"
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "claude-code"
SAMPLE = ROOT / "samples" / "formats" / "claude-hooks.jsonl"
CANARY = "CANARY-9a7b3c-do-not-print"


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


def test_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--hooks.jsonl")
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        if verdict is None:
            got.append(("bad", record.line))
        else:
            got.append((record.line, record.tool, record.session, record.call_id, verdict.count))
    assert got == [
        (2, "Bash", "sess-H", "toolu_a", 1),  # PostToolUse (line 3) is not a call
        (4, "Bash", "sess-H", "toolu_b", 2),  # line 5 logs toolu_b again
        (6, "Read", "sess-H/ag1", "toolu_c", 1),
        (7, "Bash", "sess-H", "toolu_d", 3),
        ("bad", 8),
        ("bad", 9),
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
    assert errors == 5


@pytest.mark.parametrize(
    "path",
    [FIXTURES / "real--fasthooks-hook-logs.jsonl", FIXTURES / "synthetic--hooks.jsonl", SAMPLE],
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
