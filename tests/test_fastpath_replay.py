"""Replay's fast path (orjson lines, orjson canonical form) against the exact one.

claude-code transcripts are read with ``fast_canonical.load_line`` and their
arguments hashed with ``fast_digest`` (marked by ``pipeline.plain_records``; with
and without the C reader's ``digest_json``); with
``fast_canonical.AVAILABLE`` off the same file takes ``parse_json`` and
``call_digest``. Records and verdicts must be equal, tricky values included.
"""

from __future__ import annotations

import io
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fastpath import VALUES

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import BadRecord, ToolCall
from loop_brake_cli.formats import claude_code
from loop_brake_cli.readers import fast_canonical, pipeline
from loop_brake_cli.readers.pipeline import judge
from loop_brake_cli.readers.reader import Source

pytestmark = pytest.mark.skipif(not fast_canonical.AVAILABLE, reason="orjson is not installed")

RAW_ARGS = [
    '{"f":1.0,"g":1e21,"h":1e-7,"i":-0.0,"j":1e16}',
    '{"n":12345678901234567890,"m":9007199254740993}',
    '{"\\ud83d\\ude00":1,"\\uff01":2,"\\ue000":3}',
    '{"s":"\\ud800"}',  # a lone surrogate: orjson declines the line
    '{"x":1e400}',
    '"{\\"a\\": 1.0}"',  # arguments given as a JSON string
    '"not json"',
    "null",
    '{"deep":' + "[" * 300 + "]" * 300 + "}",
    '{"deep":' + "[" * 1010 + "]" * 1010 + "}",
    '{"a":[1,2.5,"\\u2028",true,null,{"b":"\\u0000"}]}',
]


def _line(session: str, call_id: str, tool: str, raw_args: str) -> bytes:
    block = (
        ('{"type":"tool_use","id":' + json.dumps(call_id) + ',"name":' + json.dumps(tool))
        + ',"input":'
        + raw_args
        + "}"
    )
    head = '{"type":"assistant","sessionId":' + json.dumps(session)
    body = ',"uuid":"u","message":{"role":"assistant","content":[{"type":"text","text":"x"},'
    return (head + body + block + "]}}").encode("utf-8", "surrogatepass")


def _replay(data: bytes) -> list[tuple]:
    source = Source(io.BytesIO(data), "t", 1 << 24)
    out = []
    for record, verdict in judge(claude_code.parse(source), LoopBrake(2)):
        if verdict is None:
            out.append(("error", record.line, record.path, record.message))
        else:
            out.append((record.line, record.path, record.args_unparsed, verdict))
    return out


def _both(data: bytes, monkeypatch) -> tuple[list, list]:
    """The fast replay (with the C reader's digest_json where it is built), checked
    equal to the fast replay without it, and the exact one."""
    fast = _replay(data)
    with monkeypatch.context() as patch:
        patch.setattr(fast_canonical, "_digest_json", None)  # the sorted dump and hashlib
        assert _replay(data) == fast
        patch.setattr(fast_canonical, "AVAILABLE", False)
        exact = _replay(data)
    return fast, exact


def test_tricky_arguments_replay_as_on_the_exact_path(monkeypatch):
    lines = []
    for i, raw in enumerate(RAW_ARGS * 2):
        lines.append(_line("s", f"toolu_{i}", "Bash", raw))
        lines.append(_line("s", f"toolu_{i}", "Bash", raw))  # the same id: skipped
    lines.append(b'{"type":"assistant","sessionId":"s","message":{"content":[')  # truncated
    lines.append(b'{"type":"assistant","sessionId":"s","uuid":"u","x":' + b"[" * 1005)
    data = b"\n".join(lines) + b"\n"
    fast, exact = _both(data, monkeypatch)
    assert fast == exact
    assert sum(1 for row in fast if row[0] == "error") >= 3


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(VALUES, st.sampled_from(["Bash", "\U0001f600", "Read"])), max_size=12))
def test_any_arguments_replay_as_on_the_exact_path(calls):
    lines = []
    for i, (value, tool) in enumerate(calls):
        raw = json.dumps(value, ensure_ascii=False)
        lines.append(_line("s", f"t{i}", tool, raw))
        lines.append(_line("s", f"u{i}", tool, raw))
    data = b"\n".join(lines) + b"\n"
    with pytest.MonkeyPatch.context() as patch:
        fast, exact = _both(data, patch)
    assert fast == exact


def test_arguments_of_unknown_origin_are_hashed_the_exact_way():
    # orjson would serialise a UUID; canonical_json does not: judge must not take the
    # fast way for arguments no adapter marked as plain JSON.
    call = ToolCall("t", {"id": uuid.UUID(int=1)}, "s")
    ((record, verdict),) = judge([call], LoopBrake(3))
    assert verdict is None and isinstance(record, BadRecord)

    def marked(args):
        yield ToolCall("t", args, "s")

    ((_, verdict),) = judge(pipeline.plain_records(marked({"a": 1.0})), LoopBrake(3))
    exact = ToolCall("t", {"a": 1}, "s")
    ((_, expected),) = judge([exact], LoopBrake(3))
    assert verdict.hash_prefix == expected.hash_prefix
    # fast_digest, as the mark allows: orjson writes a UUID where call_digest refuses it
    ((record, verdict),) = judge(pipeline.plain_records(marked(call.args)), LoopBrake(3))
    assert verdict is not None
