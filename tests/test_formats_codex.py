"""The codex adapter on real Codex CLI rollouts and on edge cases.

Counts checked by hand against ../shared/samples-real/SOURCES.md: 3 (shell),
36 (write_stdin 20, exec_command 12, apply_patch 3, update_plan 1) with the
6 identical write_stdin polls, and 8 (exec_command 5, js 3 in mcp__node_repl__).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from adapter_helpers import (
    assert_never_raises,
    calls_and_errors,
    check_errors_hide,
    first_live_verdict,
    judge_all,
    mutated,
)
from adapter_helpers import parse_bytes as parse_records
from adapter_helpers import read as read_records
from conftest import ROOT, SHARED_SKIP, run_cli, shared_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import ToolCall
from loop_brake_cli.formats import codex
from loop_brake_cli.readers.pipeline import judge

FIXTURES = ROOT / "tests" / "fixtures" / "codex"
SAMPLE = ROOT / "samples" / "formats" / "codex.jsonl"
SHARED = shared_dir() / "samples-real" / "codex-cli"
POLLS = FIXTURES / "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
NAMESPACE = FIXTURES / "real--codemie-rollout-019e1695-EXCERPT-mcp-namespace.jsonl.gz"
SHELL = FIXTURES / "real--codemie-rollout-019b7f94-shell.jsonl"
CANARY = "CANARY-3d2e1f-do-not-print"


def read(path: Path) -> tuple[str, list]:
    """The calls and errors of a file (results and usage: test_formats_results_usage.py)."""
    fmt, records = read_records(path)
    return fmt, calls_and_errors(records)


def parse_bytes(fmt: str, data: bytes) -> list:
    return calls_and_errors(parse_records(fmt, data))


REAL = [
    (SHELL, 3, "019b7f94-51b4-7593-922e-ba12b5b73b52", {"shell": 3}),
    (
        POLLS,
        36,
        "019e1625-789d-76c0-80ab-3724b5ddb799",
        {"write_stdin": 20, "exec_command": 12, "apply_patch": 3, "update_plan": 1},
    ),
    (
        NAMESPACE,
        8,
        "019e1695-0522-7c83-8b39-0dd379793f80",
        {"exec_command": 5, "mcp__node_repl__js": 3},
    ),
]


@pytest.mark.parametrize(("path", "count", "session", "tools"), REAL, ids=lambda v: str(v)[-30:])
def test_real_rollouts(path: Path, count: int, session: str, tools: dict) -> None:
    fmt, records = read(path)
    assert fmt == "codex"
    assert all(isinstance(r, ToolCall) for r in records)
    assert len(records) == count
    assert {r.session for r in records} == {session}
    assert Counter(r.tool for r in records) == Counter(tools)
    assert not any(r.args_unparsed for r in records)


def test_six_identical_polls_are_one_streak_denied_from_the_third() -> None:
    _, records = read(POLLS)
    verdicts = list(judge(records, LoopBrake(3)))
    longest = max(verdicts, key=lambda rv: rv[1].count)
    assert longest[1].count == 6 and longest[0].tool == "write_stdin"
    streak = [(r.line, v.count, v.denied) for r, v in verdicts if r.line >= 82 and r.line <= 100]
    assert streak == [
        (82, 1, False),
        (87, 2, False),
        (90, 3, True),
        (93, 4, True),
        (96, 5, True),
        (100, 6, True),
    ]
    assert sum(v.denied for _, v in verdicts) == 4
    # the boundary a --sweep shows: at maxRepeats 7 the legitimate polling passes
    assert not any(v.denied for _, v in judge(records, LoopBrake(7)))
    assert any(v.denied for _, v in judge(records, LoopBrake(6)))


def test_custom_tool_call_input_is_hashed_as_text_not_unparseable() -> None:
    _, records = read(POLLS)
    patches = [r for r in records if r.tool == "apply_patch"]
    assert len(patches) == 3
    assert all(isinstance(r.args, str) and r.args.startswith("*** Begin Patch") for r in patches)
    assert not any(r.args_unparsed for r in patches)


def test_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--edge-cases.jsonl")
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        if verdict is None:
            got.append(("bad", record.line))
        else:
            got.append(
                (record.line, record.tool, record.call_id, verdict.count, record.args_unparsed)
            )
    assert got == [
        (4, "exec_command", "c1", 1, False),  # arguments "" is {}
        (6, "exec_command", "c2", 2, False),  # "{}" is the same call; line 5 is an event_msg echo
        (7, "exec_command", "c3", 1, True),  # invalid JSON: hashed as the string, counted
        (8, "mcp__fs__read", "c4", 1, False),
        (9, "apply_patch", "c5", 1, False),
        # line 10 records c4 again
        (11, "local_shell", None, 1, False),
        (12, "local_shell", None, 2, False),
        (13, "write_stdin", "c6", 1, False),
        (14, "write_stdin", "c7", 2, False),  # same object, keys in another order
        (15, "write_stdin", "c8", 3, False),
        ("bad", 17),
        ("bad", 18),
        (20, "update_plan", "c9", 1, False),
    ]
    assert {r.session for r in records if isinstance(r, ToolCall)} == {"sess-C"}


def test_legacy_layout() -> None:
    fmt, records = read(FIXTURES / "synthetic--legacy-layout.jsonl")
    assert fmt == "codex"
    assert [(r.line, r.tool, r.session, r.call_id) for r in records] == [
        (4, "shell", "legacy-1", "call_1"),
        (7, "shell", "legacy-1", "call_2"),
    ]


def test_truncated_lines_are_reported_even_without_a_call() -> None:
    output = {"type": "response_item", "payload": {"type": "function_call_output", "output": "x"}}
    text = json.dumps(output)
    records = parse_bytes("codex", f"{text}\n{text[:30]}\n".encode())
    assert [(type(r).__name__, r.line) for r in records] == [("BadRecord", 2)]


def test_calls_before_session_meta_are_default_session() -> None:
    line = {"type": "response_item", "payload": {"type": "function_call", "name": "x"}}
    (record,) = parse_bytes("codex", json.dumps(line).encode())
    assert record.session == "default" and record.args == {}


def test_live_pipe_verdict_before_input_ends() -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    verdict = first_live_verdict("codex", lines[0] + lines[1])
    assert verdict["toolName"] == "exec_command" and verdict["callId"] == "call_s1"


def test_filter_on_the_sample() -> None:
    result = run_cli("filter", "--format", "codex", str(SAMPLE))
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(v["toolName"], v["count"], v["verdict"]) for v in verdicts] == [
        ("exec_command", 1, "pass"),
        ("write_stdin", 1, "pass"),
        ("write_stdin", 2, "pass"),
        ("write_stdin", 3, "deny"),
    ]


def test_canary_never_in_errors() -> None:
    def item(payload: object) -> dict:
        return {"timestamp": "t", "type": "response_item", "payload": payload}

    rows = [
        item({"type": "function_call", "arguments": json.dumps({"k": CANARY})}),
        item({"type": "function_call", "name": "x", "call_id": {"k": CANARY}}),
        item({"type": "function_call", "name": "x", "namespace": [CANARY]}),
        item({"type": "custom_tool_call", "input": CANARY}),
        {**item(CANARY), "kind": "function_call"},
        {"type": "session_meta", "payload": {"id": [CANARY]}},
        [CANARY],
        item({"type": "function_call", "name": "x", "arguments": "{" + CANARY}),
    ]
    data = ("\n".join(json.dumps(r) for r in rows) + '\n{"payload":"' + CANARY).encode()
    errors, out = check_errors_hide("codex", data, CANARY)
    assert errors == 8
    assert b'"verdict":"pass"' in out  # the unparseable call is still judged


@pytest.mark.parametrize(
    "path",
    [SHELL, POLLS, NAMESPACE, FIXTURES / "synthetic--edge-cases.jsonl", SAMPLE],
    ids=lambda p: p.name,
)
def test_detect(path: Path) -> None:
    fmt, _ = read(path)
    assert fmt == "codex"


@pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_SKIP)
def test_detect_the_shared_originals() -> None:
    counts = {}
    for path in SHARED.glob("*.jsonl"):
        fmt, records = read(path)
        assert fmt == "codex", path.name
        counts[path.name[:60]] = len(records)
    assert sorted(counts.values()) == [3, 8, 36]


def test_sniff_a_session_meta_longer_than_the_head() -> None:
    head = b'{"timestamp":"2026-05-11T08:27:17.490Z","type":"session_meta","payload":{"x":"'
    assert codex.sniff(head + b"y" * 70000)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(codex._CALLS)), _JSON, _JSON, _JSON)
def test_fuzz_odd_payloads_never_raise(kind: str, a, b, c) -> None:
    rows = [
        {"type": "session_meta", "payload": {"id": a}},
        {"type": "response_item", "payload": {"type": kind, "name": b, "arguments": c}},
        {"type": "response_item", "payload": {"type": kind, "name": "n", "call_id": a, "input": b}},
        {"type": kind, "action": c, "call_id": b},
    ]
    judge_all("codex", "\n".join(json.dumps(r) for r in rows).encode())


def test_type_fields_of_any_json_type_never_raise() -> None:
    rows = [
        {"type": [], "payload": {}, "k": 'x_call"'},
        {"type": "response_item", "payload": {"type": ["function_call"]}, "k": "function_call"},
        {"type": {}, "payload": {"type": {}}, "k": '_call"'},
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert_never_raises("codex", data)


_LINES = [
    json.loads(line)
    for line in (FIXTURES / "synthetic--edge-cases.jsonl").read_text().splitlines()
    if line.endswith("}")
]


@settings(max_examples=200, deadline=None)
@given(st.lists(mutated(_LINES), min_size=3, max_size=3))
def test_fuzz_mutated_lines_never_raise(lines) -> None:
    judge_all("codex", "\n".join(json.dumps(line) for line in lines).encode())
