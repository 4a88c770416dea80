"""The filter fast path against the exact path: the same bytes out, the same tallies.

Whole event streams (valid calls with tricky arguments, aliases, duplicates, bad
lines) go through ``fastpath.filter_events`` and through the exact chain
``formats.events.parse`` -> ``judge`` -> ``verdict_record`` -> ``json_line``.
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import JSONInputError, canonical_json, parse_json
from loop_brake_cli.formats import events as events_format
from loop_brake_cli.readers import fast_canonical, fastpath, prove
from loop_brake_cli.readers.output import LineWriter
from loop_brake_cli.readers.pipeline import Tally, write_verdicts
from loop_brake_cli.readers.reader import Source
from loop_brake_cli.readers.shard import select_shard

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

KEYS = st.sampled_from(["a", "b", "10", "2", "\U0001f600", "\uff01", "\ue000", "k\u00e9", ""])
STRINGS = st.one_of(
    st.sampled_from(
        ["", "x", "v1.0", "1e-7", "re-run", "\u2028", "\x7f", '\x00\n\t"\\', "\U0001f600"]
    ),
    st.text(max_size=8),
)
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, 1.0, -0.0, 1e21, 1e-7, 1e16, 1e-6, 123456789.0, 2**53, 2**53 + 1]),
)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(KEYS, st.text(max_size=3)), inner, max_size=4),
    ),
    max_leaves=12,
)


def _event_line(draw_value, tool, session, call_id, shape) -> bytes:
    event: dict = {}
    event["toolName" if shape == 1 else "tool"] = tool
    if shape != 2:
        event["arguments" if shape == 3 else "args"] = draw_value
    if session is not None:
        event["agentId" if shape == 4 else "sessionId"] = session
    if call_id is not None:
        event["id" if shape == 5 else "callId"] = call_id
    return json.dumps(event, ensure_ascii=shape == 6).encode("utf-8", "surrogatepass")


EVENTS = st.builds(
    _event_line,
    VALUES,
    st.sampled_from(["search", "read", "\u00e9dit", "\U0001f600", 'a"b']),
    st.sampled_from([None, "s1", "s2", "\u00e9", "s\ud800"]),
    st.one_of(
        st.none(), st.sampled_from(["c1", "c2"]), st.integers(-(2**60), 2**60), st.text(max_size=3)
    ),
    st.integers(0, 7),
)
BAD = st.sampled_from(
    [
        b"{",
        b"[]",
        b"null",
        b'{"tool": 1}',
        b'{"tool": "x", "sessionId": 5}',
        b"\xff\xfe",
        b'{"tool": "x", "callId": true}',
        b'{"tool": "x", "callId": 1.5}',
        b'{"tool": "x", "callId": 1.0}',
        b'{"tool":"x","args":' + b"[" * 300 + b"]" * 300 + b"}",
        b'{"tool":"x","args":1e400}',
        b'{"tool":"x","args":{"n":12345678901234567890}}',
        b'{"tool":"x","callId":12345678901234567890}',
        b'{"tool":"\\ud800","args":{}}',
        b"   ",
        b"\r",
        b'{"tool":"x"} x',
        b"NaN",
    ]
)
LINES = st.lists(st.one_of(EVENTS, EVENTS, EVENTS, BAD), min_size=1, max_size=40)


def _exact(data: bytes, max_repeats: int, wanted, shard=None, file=None) -> tuple[bytes, Tally]:
    out = io.BytesIO()
    writer, tally = LineWriter(out), Tally()
    source = Source(io.BytesIO(data), "t", 1 << 20, writer.flush)
    records = events_format.parse(source)
    if shard is not None:
        records = select_shard(records, *shard)
    write_verdicts(records, LoopBrake(max_repeats), tally, writer, wanted, file)
    writer.flush()
    return out.getvalue(), tally


def _fast(data: bytes, max_repeats: int, wanted, shard=None, file=None) -> tuple[bytes, Tally]:
    out = io.BytesIO()
    writer, tally = LineWriter(out), Tally()
    source = Source(io.BytesIO(data), "t", 1 << 20, writer.flush)
    fastpath.filter_events(source, LoopBrake(max_repeats), tally, writer, wanted, file, shard)
    writer.flush()
    return out.getvalue(), tally


def _repeat(lines: list[bytes], repeats: list[int]) -> bytes:
    """Repeat some lines so that streaks and duplicate call ids happen."""
    out = []
    for line, times in zip(lines, repeats + [1] * len(lines), strict=False):
        out.extend([line] * times)
    return b"\n".join(out) + b"\n"


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    LINES,
    st.lists(st.integers(1, 4), max_size=40),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([{"pass", "deny", "error"}, {"deny"}, {"pass", "error"}]),
    st.sampled_from([None, "f.jsonl", '\u00e9 "q".jsonl']),
)
def test_fast_path_writes_the_exact_bytes(event_reader, lines, repeats, max_repeats, wanted, file):
    data = _repeat(lines, repeats)
    fast, fast_tally = _fast(data, max_repeats, wanted, file=file)
    exact, exact_tally = _exact(data, max_repeats, wanted, file=file)
    assert fast == exact
    assert fast_tally == exact_tally


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(LINES, st.lists(st.integers(1, 3), max_size=40), st.sampled_from([(0, 2), (1, 2), (2, 3)]))
def test_fast_path_shards_like_the_exact_path(event_reader, lines, repeats, shard):
    data = _repeat(lines, repeats)
    wanted = {"pass", "deny", "error"}
    assert _fast(data, 3, wanted, shard) == _exact(data, 3, wanted, shard)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans())
def test_fast_canonical_is_the_canonical_form_or_declines(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    try:
        exact_value = parse_json(text)
    except JSONInputError:
        return
    try:
        fast_value = prove._loads(text)
    except prove._DecodeError:
        return  # the fast path hands such lines to the exact parser
    fast = fastpath.fast_canonical(fast_value)
    if fast is not None:
        assert fast == canonical_json(exact_value).encode("utf-8")


PAD = "v1.0 re-run 1e-7 " * 300  # over fast_canonical.LONG, with what the byte looks decline


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans())
def test_long_output_proved_from_its_value_is_the_canonical_form(value, ascii_only):
    """no_float: where it says a value needs no look at its bytes, orjson's sorted
    output is canonical_json's, however long."""
    text = json.dumps({"pad": PAD, "v": [value, PAD]}, ensure_ascii=ascii_only)
    try:
        exact_value = parse_json(text)
        fast_value = prove._loads(text)
    except (JSONInputError, prove._DecodeError):
        return
    if fast_canonical.no_float(fast_value, 1 << 20):
        try:
            fast = prove._dumps(fast_value, option=prove._OPTIONS)
        except prove._EncodeError:
            return
        assert fast == canonical_json(exact_value).encode("utf-8")
    fast = fastpath.fast_canonical(fast_value)
    if fast is not None:
        assert fast == canonical_json(exact_value).encode("utf-8")


@pytest.mark.parametrize(
    ("value", "budget", "expected"),
    [
        ({"a": [1, "x", None, True, {"b": [[]]}]}, 100, True),
        ("a long string", 0, True),
        ({"a": [1, {"b": 1.0}]}, 100, False),
        (1.5, 100, False),
        ({"k\u00e9": 1}, 100, False),
        ({"a": [{"\U0001f600": 1}]}, 100, False),
        ({"a": list(range(50))}, 10, False),
    ],
)
def test_no_float_declines_floats_non_ascii_keys_and_many_members(value, budget, expected):
    assert fast_canonical.no_float(value, budget) is expected


@pytest.mark.parametrize(
    "variants",
    [
        (b'{"v":1.0}', b'{"v":1}'),  # canonical: both 1
        (b'{"v":1e21}', b'{"v":1000000000000000000000}'),
        (rb'{"\ud83d\ude00":1,"\uff01":2}', rb'{"\uff01":2,"\ud83d\ude00":1}'),
    ],
)
def test_long_lines_whose_orjson_form_differs_are_judged_exactly(event_reader, variants):
    """Long arguments that orjson writes otherwise than canonical_json: the third call
    of one canonical form is denied on the fast path as on the exact one."""
    pad = json.dumps(PAD).encode()
    lines = [
        b'{"tool":"t","args":{"pad":%s,"x":%s},"sessionId":"s","callId":"c%d"}'
        % (pad, variants[i % 2], i)
        for i in range(3)
    ]
    data = b"\n".join(lines) + b"\n"
    fast, fast_tally = _fast(data, 2, {"pass", "deny", "error"})
    assert (fast, fast_tally) == _exact(data, 2, {"pass", "deny", "error"})
    assert b"deny" in fast


@pytest.mark.parametrize(
    "text",
    [
        "1.0",
        "1e21",
        "1e-7",
        "1e16",
        "-0.0",
        "0.00001",
        "[1e400]",
        "9007199254740993",
        '{"\\ud83d\\ude00":1,"\\uff01":2}',
        "12345678901234567890123",
        "[0.1,0.2,0.30000000000000004]",
    ],
)
def test_tricky_values_are_declined_or_exact(text):
    value = parse_json(text) if "1e400" not in text else None
    try:
        parsed = prove._loads(text)
    except prove._DecodeError:
        return
    fast = fastpath.fast_canonical(parsed)
    if fast is not None:
        assert fast == canonical_json(value).encode("utf-8")


def test_escapes_match_python_json_for_every_character_class():
    # Verdict strings come from orjson-parsed values; orjson's escaping must equal
    # json_line's (ensure_ascii=False) for every character that can reach it.
    chars = "".join(chr(c) for c in range(0x80)) + "\u2028\u2029\ufeff\uffff\U0001f600\xe9"
    assert prove._dumps(chars) == json.dumps(chars, ensure_ascii=False).encode()


@pytest.mark.parametrize("depth", [997, 998, 1010, 1023])
@pytest.mark.parametrize("kind", ["list", "object"])
def test_a_line_nesting_near_the_exact_limit_is_judged_as_the_exact_path_does(
    event_reader, depth, kind
):
    """orjson reads 1,024 levels, parse_json gives up near 1,000 ("nested too deep"):
    a line between the two (2,000 bytes or more) must be the exact path's error on the
    fast path too, and one below it the same call. Nested in a member beside the
    arguments, which is never dumped (a dump of deep arguments declines on its own)."""
    if kind == "list":
        deep = b"[" * depth + b"]" * depth
    else:
        deep = b'{"a":' * depth + b"{}" + b"}" * depth
    line = b'{"tool":"x","args":{},"x":' + deep + b',"sessionId":"s","callId":"c"}'
    data = line + b"\n" + line.replace(b'"c"', b'"d"') + b"\n"
    wanted = {"pass", "deny", "error"}
    assert _fast(data, 2, wanted) == _exact(data, 2, wanted)
