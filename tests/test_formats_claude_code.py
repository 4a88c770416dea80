"""The claude-code adapter on real Claude Code transcripts and on edge cases.

Expected counts were checked by hand against ../shared/samples-real/SOURCES.md
(see tests/fixtures/SOURCES.md for where each fixture comes from).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from adapter_helpers import (
    assert_never_raises,
    check_errors_hide,
    first_live_verdict,
    judge_all,
    mutated,
    parse_bytes,
    read,
)
from conftest import ROOT, SHARED_SKIP, run_cli, shared_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage
from loop_brake_cli.formats import claude_code
from loop_brake_cli.formats._common import RecentIds
from loop_brake_cli.readers.pipeline import judge
from loop_brake_cli.readers.reader import Source

FIXTURES = ROOT / "tests" / "fixtures" / "claude-code"
SAMPLE = ROOT / "samples" / "formats" / "claude-code.jsonl"
SHARED = shared_dir() / "samples-real" / "claude-code"
CANARY = "CANARY-5f1e0c-do-not-print"


REAL = [
    # file, calls, sessions, tools
    (
        "real--fasthooks-main-transcript.jsonl",
        10,
        {"c45af7b1-cb7c-4e51-93db-8cbb250a877a"},
        {"Bash": 5, "Write": 3, "Read": 2},
    ),
    ("real--fasthooks-agent-sidechain.jsonl", 0, set(), {}),
    (
        "real--codemie-4c2ddfdc.jsonl",
        6,
        {"4c2ddfdc-b619-4525-8d03-1950fb1b0257"},
        {"Write": 3, "Read": 1, "Edit": 1, "Bash": 1},
    ),
    (
        "real--codemie-incremental-subagents-turn-1.jsonl",
        7,
        {"e9fb405b-169f-40eb-9396-7e75076f045d"},
        {"Bash": 6, "Task": 1},
    ),
]


@pytest.mark.parametrize(("name", "count", "sessions", "tools"), REAL)
def test_real_transcripts(name: str, count: int, sessions: set, tools: dict) -> None:
    fmt, records = read(FIXTURES / name)
    assert fmt == "claude-code"
    calls = [r for r in records if isinstance(r, ToolCall)]
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert len(calls) == count
    assert {c.session for c in calls} == sessions
    assert Counter(c.tool for c in calls) == Counter(tools)
    assert len({c.call_id for c in calls}) == count  # each tool_use once
    # SOURCES.md: no loop in any of them (longest identical run 1)
    assert all(v.count == 1 for _, v in judge(calls, LoopBrake(3)))


def test_split_response_lines_are_counted_once() -> None:
    # the main transcript's msg_01WMh3… response is written over 4 lines, 3 of them tool_use
    _, records = read(FIXTURES / "real--fasthooks-main-transcript.jsonl")
    lines = [c.line for c in records if isinstance(c, ToolCall)]
    assert lines == [4, 12, 21, 29, 37, 38, 44, 45, 46, 52]


def test_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--edge-cases.jsonl")
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        if isinstance(record, (ToolResult, Usage)):
            continue  # tests/test_formats_results_usage.py checks those
        if verdict is None:
            got.append(("bad", record.line, record.path))
        else:
            got.append((record.line, record.tool, record.session, record.call_id, verdict.count))
    assert got == [
        (5, "Bash", "sess-A", "toolu_1", 1),
        (6, "Bash", "sess-A", "toolu_2", 2),
        # line 7 repeats the whole msg_1 response: nothing new
        (9, "Bash", "sess-A", "toolu_3", 3),
        (11, "Read", "sess-A/agent-1", "toolu_4", 1),
        (12, "Read", "sess-A/agent-1", "toolu_5", 2),
        (13, "Bash", "sess-A", "toolu_6", 4),  # the subagent did not break the streak
        (14, "Grep", "sess-A/sidechain", "toolu_7", 1),
        ("bad", 15, None),
        ("bad", 16, "$.message.content[0]"),
        (20, "TodoRead", "sess-A", "toolu_8", 1),
    ]


def test_missing_input_is_empty_object_and_string_content_is_skipped() -> None:
    _, records = read(FIXTURES / "synthetic--edge-cases.jsonl")
    last = records[-1]
    assert isinstance(last, ToolCall) and last.args == {} and not last.args_unparsed
    assert last.path == "$.message.content[1]"


def test_truncated_lines_are_reported_even_without_a_call() -> None:
    user = {"type": "user", "sessionId": "s", "uuid": "u", "message": {"content": "hi"}}
    text = json.dumps(user)
    records = parse_bytes("claude-code", f"{text}\n{text[:20]}\nnot json\n".encode())
    assert [(type(r).__name__, r.line) for r in records] == [("BadRecord", 2), ("BadRecord", 3)]


def test_dedupe_memory_is_bounded() -> None:
    seen = RecentIds(size=4)
    for index in range(10):
        assert not seen.seen(f"id{index}")
    assert seen.seen("id9")
    assert not seen.seen("id0")  # long forgotten: a far-away repeat counts again


def test_dedupe_remembers_every_id_among_the_last_size_looked_up() -> None:
    size = 4
    seen = RecentIds(size=size)
    looked_up: list[str] = []
    for index in range(200):
        key = f"id{(index * 7) % 13}"  # repeats near and far
        expected = key in looked_up[-size:] or None  # within the window: surely seen
        got = seen.seen(key)
        if expected:
            assert got, (index, key)
        if key not in looked_up:
            assert not got, (index, key)  # never a false "seen"
        looked_up.append(key)


class Trickle(io.RawIOBase):
    """A stream that hands out one line per read, like a live ``tail -f``."""

    def __init__(self, data: bytes) -> None:
        self.chunks = data.splitlines(keepends=True)
        self.reads = 0

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        self.reads += 1
        return self.chunks.pop(0) if self.chunks else b""


def test_streams_each_call_as_its_line_arrives() -> None:
    stream = Trickle(SAMPLE.read_bytes())
    records = claude_code.parse(Source(stream, "<live>"))
    first = next(records)
    assert isinstance(first, ToolCall) and first.line == 2
    assert stream.reads == 2  # nothing after the call's own line was read
    result = next(records)  # the call's result, as its line arrives
    assert isinstance(result, ToolResult) and result.line == 3 and stream.reads == 3
    second = next(records)
    assert second.line == 4 and stream.reads == 4


def test_live_pipe_verdict_before_input_ends() -> None:
    """``tail -f session.jsonl | loop-brake filter --format claude-code``."""
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    verdict = first_live_verdict("claude-code", lines[0] + lines[1])  # stdin still open
    assert verdict["verdict"] == "pass" and verdict["toolName"] == "Bash"
    assert verdict["callId"] == "toolu_01"


def test_filter_on_the_sample_denies_the_third_identical_call() -> None:
    result = run_cli("filter", "--format", "claude-code", str(SAMPLE))
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [v["verdict"] for v in verdicts] == ["pass", "pass", "deny", "deny"]
    assert {v["sessionId"] for v in verdicts} == {"5d0c8a9e-1f2b-4c3d-9e8f-0a1b2c3d4e5f"}


def _canary_lines() -> bytes:
    secret = {"command": f"echo {CANARY}", "token": CANARY}
    base = {"type": "assistant", "sessionId": "s", "uuid": "u", "kind": "tool_use"}
    rows = [
        {**base, "message": {"content": [{"type": "tool_use", "input": secret}]}},  # no name
        {**base, "message": {"content": [{"type": "tool_use", "id": 7, "name": "Bash"}]}},
        {**base, "message": {"content": {"secret": CANARY}}},
        {**base, "message": CANARY},
        {**base, "sessionId": {"k": CANARY}, "message": {"content": []}},
        [CANARY],
        {
            **base,
            "message": {
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": secret}]
            },
        },
    ]
    text = "\n".join(json.dumps(row) for row in rows)
    return (text + "\n" + '{"type":"assistant","x":"' + CANARY + '"\n').encode()


def test_canary_never_in_errors() -> None:
    errors, out = check_errors_hide("claude-code", _canary_lines(), CANARY)
    assert errors == 7
    assert b'"verdict":"error"' in out and b'"verdict":"pass"' in out


@pytest.mark.parametrize(
    "path",
    [*(FIXTURES / name for name, *_ in REAL), FIXTURES / "synthetic--edge-cases.jsonl", SAMPLE],
    ids=lambda p: p.name,
)
def test_detect(path: Path) -> None:
    fmt, _ = read(path)
    assert fmt == "claude-code"


@pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_SKIP)
def test_detect_the_shared_originals() -> None:
    for path in SHARED.glob("*.jsonl"):
        fmt, _ = read(path)
        expected = "claude-hooks" if "hook_logs" in path.name else "claude-code"
        assert fmt == expected, path.name


def test_sniff_a_first_line_longer_than_the_head() -> None:
    line = {"parentUuid": None, "isSidechain": False, "sessionId": "s", "type": "user"}
    head = (json.dumps(line, separators=(",", ":"))[:-1] + ',"message":"' + "x" * 70000).encode()
    assert claude_code.sniff(head[: 1 << 16])
    snapshot = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{"x":"' + b"y" * 70000
    assert claude_code.sniff(snapshot[: 1 << 16])
    assert not claude_code.sniff(b'{"type":"summary","x":"' + b"y" * 70000)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_JSON, _JSON, _JSON)
def test_fuzz_odd_shapes_never_raise(content, block, session) -> None:
    rows = [
        {"type": "assistant", "sessionId": session, "message": {"content": content}},
        {
            "type": "assistant",
            "sessionId": "s",
            "isSidechain": True,
            "agentId": session,
            "message": {"content": [block, {"type": "tool_use", "name": "x", "id": block}]},
        },
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    judge_all("claude-code", data)


def test_type_fields_of_any_json_type_never_raise() -> None:
    rows = [
        {"type": [], "sessionId": "s", "uuid": "u", "kind": "tool_use"},
        {"type": {}, "x": "tool_use"},
        {"type": ["assistant"], "message": {"content": [{"type": ["tool_use"], "name": "x"}]}},
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert_never_raises("claude-code", data)


_CALL_LINES = [
    json.loads(line)
    for path in (FIXTURES / "synthetic--edge-cases.jsonl", SAMPLE)
    for line in path.read_text().splitlines()
    if '"tool_use"' in line and line.endswith("}")
]


@settings(max_examples=200, deadline=None)
@given(mutated(_CALL_LINES))
def test_fuzz_mutated_real_lines_never_raise(line) -> None:
    judge_all("claude-code", json.dumps(line).encode())
