"""The mcp adapter on real goose and Claude Desktop logs and on edge cases.

Counts checked by hand against ../shared/samples-real/SOURCES.md: goose
5 + 5 + 1 + 1, Claude Desktop excerpt 9 (3 before the reconnect at line 155,
6 after it; the call with id 52 has no arguments).
"""

from __future__ import annotations

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
)
from adapter_helpers import parse_bytes as parse_all
from adapter_helpers import read as read_all
from conftest import ROOT, SHARED_SKIP, shared_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult
from loop_brake_cli.readers.pipeline import judge

FIXTURES = ROOT / "tests" / "fixtures" / "mcp"
SAMPLE = ROOT / "samples" / "formats" / "mcp.jsonl"
SHARED = shared_dir() / "samples-real" / "mcp"
DESKTOP = FIXTURES / "real--odoo-mcp-claude-desktop-EXCERPT-lines200-720.log.gz"
CANARY = "CANARY-7c6d5e-do-not-print"


def read(path: Path, fmt: str | None = None) -> tuple[str, list]:
    """The records but results (tests/test_mcp_results.py checks those)."""
    name, records = read_all(path, fmt)
    return name, [r for r in records if not isinstance(r, ToolResult)]


def parse_bytes(fmt: str, data: bytes) -> list:
    return [r for r in parse_all(fmt, data) if not isinstance(r, ToolResult)]


GOOSE = [
    (
        "real--goose-cargorun--quiet-pgoose-server--bingoosed--mcpdeveloper.stdio.log",
        {"text_editor": 3, "shell": 1, "list_windows": 1},
    ),
    ("real--goose-github-mcp-serverstdio.stdio.log", {"get_file_contents": 1}),
    (
        "real--goose-npx-y_modelcontextprotocol_server-everything.stdio.log",
        {"echo": 1, "add": 1, "longRunningOperation": 1, "structuredContent": 1, "sampleLLM": 1},
    ),
    ("real--goose-uvxmcp-server-fetch.stdio.log", {"fetch": 1}),
]


@pytest.mark.parametrize(("name", "tools"), GOOSE, ids=lambda v: str(v)[:40])
def test_real_goose_logs(name: str, tools: dict) -> None:
    fmt, records = read(FIXTURES / name)
    assert fmt == "mcp"
    assert all(isinstance(r, ToolCall) for r in records)
    assert Counter(r.tool for r in records) == Counter(tools)
    assert [r.call_id for r in records] == list(range(1, len(records) + 1))
    assert {r.session for r in records} == {"mcp#1"}


def test_meta_is_never_hashed() -> None:
    _, records = read(FIXTURES / GOOSE[0][0])
    first = records[0]
    assert first.args == {"command": "view", "path": "/tmp/goose_test/goose.txt"}
    assert all("_meta" not in r.args for r in records)


def test_real_claude_desktop_log() -> None:
    fmt, records = read(DESKTOP)
    assert fmt == "mcp"
    assert all(isinstance(r, ToolCall) for r in records)
    assert [(r.session, r.call_id) for r in records] == [
        ("odoo#1", 81),
        ("odoo#1", 84),
        ("odoo#1", 141),
        ("odoo#2", 46),
        ("odoo#2", 49),
        ("odoo#2", 52),
        ("odoo#2", 125),
        ("odoo#2", 130),
        ("odoo#2", 173),
    ]
    assert {r.tool for r in records} == {"execute_method"}
    no_arguments = records[5]
    assert no_arguments.line == 260 and no_arguments.args == {}
    # near-repeats differ in their fields: no identical streak
    assert all(v.count == 1 for _, v in judge(records, LoopBrake(3)))


def test_raw_jsonrpc_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--raw-jsonrpc-reconnect.jsonl")
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        if verdict is None:
            got.append(("bad", record.line, record.path))
        else:
            row = (record.line, record.path, record.tool, record.session, verdict.count)
            got.append(row + (("duplicate",) if verdict.duplicate else ()))
    assert got == [
        (4, None, "search", "mcp#1", 1),
        (5, None, "search", "mcp#1", 2),  # only _meta differs
        (6, None, "search", "mcp#1", 2, "duplicate"),  # request 2 logged again: not counted
        # line 7 is the server's own request
        (8, None, "search", "mcp#1", 3),
        (9, None, "list", "mcp#1", 1),  # no arguments: {}
        (10, None, "list", "mcp#1", 2),  # arguments as the JSON string "{}"
        (11, "$[0]", "list", "mcp#1", 3),  # inside a batch
        ("bad", 12, "$.params"),
        ("bad", 13, None),
        (15, None, "list", "mcp#2", 1),  # after the reconnect ids restart, a new streak
    ]


def test_claude_desktop_wrapping_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--claude-desktop-two-servers.log")
    got = [
        ("bad", r.line) if isinstance(r, BadRecord) else (r.line, r.session, r.call_id)
        for r in records
    ]
    assert got == [
        (4, "alpha#1", 1),
        (5, "beta#1", 1),  # the other bracket order; another server, its own connection
        (7, "alpha#1", 2),
        # line 8: a tools/call sent by the server is not the agent's call
        (13, "alpha#2", 1),
        ("bad", 14),
    ]


def test_goose_wrapping_edge_cases() -> None:
    _, records = read(FIXTURES / "synthetic--goose-stdio.log")
    verdicts = list(judge(records, LoopBrake(3)))
    assert [(r.line, v.count, v.denied) for r, v in verdicts] == [
        (5, 1, False),
        (8, 2, False),  # STDOUT requests, STDIN responses and broken STDOUT lines are ignored
        (10, 3, True),
    ]


def test_ids_restarting_without_a_logged_initialize_are_not_swallowed() -> None:
    def call(ident: int, name: str) -> str:
        params = {"name": name, "arguments": {}}
        return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})

    lines = [call(1, "a"), call(1, "a"), call(2, "b"), call(1, "c")]
    records = parse_bytes("mcp", "\n".join(lines).encode())
    verdicts = [(r.line, r.tool, v.count, v.duplicate) for r, v in judge(records, LoopBrake(3))]
    # the decoder drops nothing; only the id of the session's last call is a repeat
    assert verdicts == [
        (1, "a", 1, False),
        (2, "a", 1, True),
        (3, "b", 1, False),
        (4, "c", 1, False),
    ]


def test_same_call_hashes_alike_in_every_wrapping() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 9}}
    text = json.dumps(call)
    lines = [
        text,
        "STDIN: " + text,
        f"2026-01-01T00:00:00Z [info] [x] Message from client: {text} {{ metadata: undefined }}",
    ]
    hashes = {call_hash(r.tool, r.args) for r in parse_bytes("mcp", "\n".join(lines).encode())}
    assert hashes == {call_hash("t", {"a": 1})}


def test_live_pipe_verdict_before_input_ends() -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    verdict = first_live_verdict("mcp", b"".join(lines[:4]))
    assert verdict["toolName"] == "get_forecast" and verdict["sessionId"] == "mcp#1"


def test_canary_never_in_errors() -> None:
    def call(params: object, ident: object = 1) -> dict:
        return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}

    rows = [
        json.dumps(call({"arguments": {"k": CANARY}})),
        json.dumps(call(CANARY)),
        json.dumps(call({"name": "t", "arguments": {"k": CANARY}}, {"k": CANARY})),
        json.dumps([CANARY]),
        "STDIN: {" + CANARY,
        f"2026-01-01T00:00:00Z [info] [s] Message from client: {{{CANARY}",
        '{"jsonrpc":"2.0","params":{"arguments":"' + CANARY,
    ]
    data = "\n".join(rows).encode()
    errors, _ = check_errors_hide("mcp", data, CANARY)
    assert errors == 6  # the object id is a call judged without a call id (issue 23)


@pytest.mark.parametrize(
    "path",
    [
        *(FIXTURES / name for name, _ in GOOSE),
        DESKTOP,
        FIXTURES / "synthetic--raw-jsonrpc-reconnect.jsonl",
        FIXTURES / "synthetic--claude-desktop-two-servers.log",
        FIXTURES / "synthetic--goose-stdio.log",
        SAMPLE,
    ],
    ids=lambda p: p.name[:50],
)
def test_detect(path: Path) -> None:
    fmt, _ = read(path)
    assert fmt == "mcp"


@pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_SKIP)
def test_detect_the_shared_originals() -> None:
    counts = []
    for path in SHARED.glob("*.log"):
        fmt, records = read(path)
        assert fmt == "mcp", path.name
        counts.append(len(records))
    assert sorted(counts) == [1, 1, 5, 5, 9]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    _JSON,
    _JSON,
    _JSON,
    st.sampled_from(["", "STDIN: ", "STDOUT: ", "t [info] [s] Message from client: "]),
)
def test_fuzz_odd_messages_never_raise(ident, params, name, prefix) -> None:
    rows = [
        {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params},
        {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name}},
        {"jsonrpc": "2.0", "id": ident, "method": "initialize"},
        [params, {"method": "tools/call", "params": {"name": "n", "arguments": name}}],
    ]
    data = "\n".join(prefix + json.dumps(r) for r in rows).encode()
    judge_all("mcp", data)


def test_type_fields_of_any_json_type_never_raise() -> None:
    rows = [
        {"jsonrpc": "2.0", "method": [], "id": 1},
        {"jsonrpc": "2.0", "method": {}, "params": []},
        [{"method": ["tools/call"]}],
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert_never_raises("mcp", data)


_MESSAGES = [
    json.loads(line)
    for line in (FIXTURES / "synthetic--raw-jsonrpc-reconnect.jsonl").read_text().splitlines()
    if line.endswith(("}", "]"))
]
_PREFIXES = ["", "STDIN: ", "STDOUT: ", "2026-01-01T00:00:00Z [info] [s] Message from client: "]


@settings(max_examples=200, deadline=None)
@given(st.lists(mutated(_MESSAGES), min_size=3, max_size=3), st.sampled_from(_PREFIXES))
def test_fuzz_mutated_messages_never_raise(rows, prefix) -> None:
    judge_all("mcp", "\n".join(prefix + json.dumps(r) for r in rows).encode())


def test_a_retry_continues_its_call_only_after_the_server_asked_for_input() -> None:
    """2026-07-28 (basic/patterns/mrtr): a call answered with an InputRequiredResult is
    retried, with a new id, carrying the client's answers (inputResponses) and the
    server's requestState; that is the same call going on, so a tool that asks twice is
    not denied at its third request. Issue 36.1: the params alone prove nothing (the
    server runs such a request as a new call), so a retry the server did not ask for
    (no input_required, a stale or altered requestState, another call's arguments,
    a second retry of one answer) is counted like any call."""
    from loop_brake_cli.readers.wire.mcp import Connections

    connections = Connections()
    params = {"name": "deploy", "arguments": {"env": "prod"}}
    answers = {"confirm": {"action": "accept"}}
    records = []

    def client(number: int, p: dict) -> None:
        message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": p}
        record = connections.client_message(message, line=number)
        if record is not None:
            records.append(record)

    def asks(number: int, state: str | None, original: int = 1) -> None:
        result = {"resultType": "input_required", "inputRequests": {"confirm": {}}}
        if state is not None:
            result["requestState"] = state
        answer = {"jsonrpc": "2.0", "id": number, "result": result}
        # the call's result so far, paired with the call it continues
        assert connections.server_message(answer).call_id == original  # type: ignore[union-attr]

    client(1, params)  # counted
    asks(1, "s1")
    client(2, dict(params, inputResponses=answers, requestState="s1"))  # continues 1
    asks(2, "s2")
    client(3, dict(params, inputResponses=answers, requestState="s2"))  # continues it again
    done = connections.server_message(
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [], "isError": False}}
    )
    assert done is not None and done.call_id == 1  # the result of the call it continued
    client(4, dict(params, inputResponses=answers, requestState="s2"))  # replayed: counted
    client(5, dict(params, inputResponses={}))  # never asked for: counted
    client(6, dict(params, requestState=None))  # null: an ordinary call
    client(7, params)
    asks(7, None, 7)  # asked without a requestState: a retry must carry none
    client(8, dict(params, inputResponses=answers, requestState="forged"))  # counted
    client(9, dict(params, inputResponses=answers))  # continues 7 (one retry per answer)
    client(10, dict(params, inputResponses=answers))  # a second retry: counted
    other = {"name": "deploy", "arguments": {"env": "staging"}}
    client(11, other)
    asks(11, "t", 11)
    client(12, dict(params, inputResponses=answers, requestState="t"))  # not 11's call
    assert [r.line for r in records] == [1, 4, 5, 6, 7, 8, 10, 11, 12]
    counts = [v.count for _, v in judge(records, LoopBrake(9))]
    assert counts == [1, 2, 3, 4, 5, 6, 7, 1, 1]
