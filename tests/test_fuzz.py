"""Fuzz: the line reader and every registered adapter take arbitrary bytes calmly.

* ``Source.lines()`` on arbitrary bytes, read in random chunk sizes, with random
  line limits: never raises, and every line is accounted for (the numbers it
  yields plus the blank lines it skips are exactly the newline-separated lines,
  each yielded one carrying the right bytes or TOO_LONG).
* Every adapter in ``formats.ADAPTERS`` (iterated at test time, so new ones are
  fuzzed too), on arbitrary bytes (read in random chunk sizes, with small and
  large line limits) and on arbitrary JSON shapes built from the keys transcripts
  use, with a canary among the values: ``sniff`` answers a bool, the records are
  sound (tests/adapter_helpers.py, ``assert_records_sound``), the same whatever the
  chunk sizes, each verdict is the one counted from the definition
  (``assert_judged_as_counted``), and no located error quotes the canary. On
  arbitrary bytes read whole, also: no record is a read failure
  (``assert_never_raises``).

Bounded to a few seconds.
"""

from __future__ import annotations

import io
import json

import pytest
from adapter_helpers import assert_judged_as_counted, assert_never_raises, assert_records_sound
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stream_helpers import ChunkedStream, expected_lines

from loop_brake_cli import formats
from loop_brake_cli.core.records import BadRecord
from loop_brake_cli.readers.reader import BOM, Source

LINE_BYTES = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"", b" ", b"\r", b"\t \r", b"{}", b"x" * 70, b"\xef\xbb\xbf", b"\r\r"]),
)
DOCUMENTS = st.builds(
    lambda bom, lines, end: (BOM if bom else b"") + b"\n".join(lines) + (b"\n" if end else b""),
    st.booleans(),
    st.lists(LINE_BYTES, max_size=25),
    st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, st.lists(st.integers(1, 64), max_size=6), st.integers(1, 80))
def test_line_reader_accounts_for_every_line(data, sizes, limit):
    source = Source(ChunkedStream(data, sizes), "fuzz", max_line_bytes=limit)
    got = list(source.lines())
    want, total = expected_lines(data, limit)
    assert got == want
    blank = total - len(got)
    assert len({number for number, _ in got}) + blank == total


CANARY = "canary-fuzz-3f9a-not-in-any-error"
ARBITRARY = st.one_of(
    st.binary(max_size=300),
    st.lists(
        st.sampled_from(
            [b"{", b"}", b"[", b"]", b'"', b":", b",", b"\n", b"null", b"1e999", b"\\u", b'"type"']
            + [b'"tool_use"', b'"role"', b'"content"', b'"name"', b'"input"', b'"arguments"']
            + [b'"tool_calls"', b'"function"', b'"message"', b'"id"', b'"method"', b'"params"']
            + [b'"tools/call"', b'"payload"', b'"function_call"', b"\xff", b"\xef\xbb\xbf"]
            + [b'"' + CANARY.encode() + b'"', CANARY.encode()]
        ),
        max_size=80,
    ).map(b"".join),
)


VOCAB = st.sampled_from(
    ["type", "role", "content", "name", "input", "arguments", "tool_calls", "function", "id"]
    + ["message", "method", "params", "payload", "tool_use", "tool_use_id", "sessionId"]
    + ["session_id", "messages", "output", "call_id", "function_call", "attributes", "spans"]
    + ["tools/call", "assistant", "user", "tool", "text", "tool_result", "response_item"]
)
SHAPES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 5),
        st.floats(),
        VOCAB,
        st.text(max_size=4),
        st.just(CANARY),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(VOCAB, inner, max_size=5)),
    max_leaves=25,
)
JSONISH = st.one_of(
    SHAPES.map(lambda v: json.dumps(v).encode()),  # one document
    st.lists(SHAPES, max_size=6).map(  # JSON lines
        lambda vs: b"\n".join(json.dumps(v).encode() for v in vs)
    ),
)


@pytest.mark.parametrize("fmt", formats.names())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_adapter_takes_arbitrary_bytes_whole(fmt: str, data: bytes) -> None:
    """sniff answers a bool; parse of the whole input yields calls and located errors only."""
    assert_never_raises(fmt, data)


def assert_properties(adapter, data: bytes, limit: int, sizes: list[int]) -> None:
    """What an adapter promises of any input (the module's docstring)."""
    assert adapter.sniff(data).__class__ is bool
    whole = list(adapter.parse(Source(io.BytesIO(data), "fuzz", max_line_bytes=limit)))
    assert_records_sound(whole)
    if sizes:
        chunked = Source(ChunkedStream(data, sizes), "fuzz", max_line_bytes=limit)
        assert list(adapter.parse(chunked)) == whole  # how the bytes arrive changes nothing
    assert_judged_as_counted(whole)
    assert not [r.message for r in whole if r.__class__ is BadRecord and CANARY in r.message]


@pytest.mark.parametrize("adapter", formats.ADAPTERS, ids=lambda m: m.INFO.name)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=JSONISH, sizes=st.lists(st.integers(1, 50), max_size=4))
def test_adapter_on_arbitrary_json_shapes(adapter, data, sizes):
    assert_properties(adapter, data, 1 << 20, sizes)


@pytest.mark.parametrize("adapter", formats.ADAPTERS, ids=lambda m: m.INFO.name)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=ARBITRARY, limit=st.sampled_from([16, 1 << 20]), sizes=st.lists(st.integers(1, 50)))
def test_adapter_on_arbitrary_bytes(adapter, data, limit, sizes):
    assert_properties(adapter, data, limit, sizes)
