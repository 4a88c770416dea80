"""The C reader of event lines (``loop_brake_cli/readers/_event_scan.c``) against the exact path.

``scan_event(line)`` either answers ``(tool, session, call_id, digest, hash_prefix,
session_json, call_json)`` or says None, and the fast path trusts an answer without
looking again. So, for every line here, an answer must be exactly what the exact
path makes of the line (``canonical.parse_json`` -> ``wire.event_line.decode`` ->
``canonical.call_digest``, the ids encoded by ``json.encoder.encode_basestring``),
and a line the exact path rejects, or reads as anything but a call with a string id,
must get None. Lines come from hypothesis (the common shape and its near misses:
aliases, agent ids, nulls, escaped and non-ASCII ids, duplicates, whitespace
anywhere, every number spelling, every escape), from byte mutations of valid lines
(``fuzz``, also the driver of manual sanitizer runs), and from size edges (nesting,
megabyte strings, thousands of members). Lines inside
the subset the C claims must get an answer, so a reader that always says None fails.
Its SHA-256 is checked against hashlib with both compressions, its digests against
Node.js. Skipped, with the reason, where the extension is not built, except in CI,
where it must be.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from json.encoder import encode_basestring
from typing import Any

import pytest
from conftest import ROOT, node_canonical
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hash_node import random_documents

from loop_brake_cli.core.canonical import JSONInputError, call_digest, canonical_json, parse_json
from loop_brake_cli.core.records import ToolCall
from loop_brake_cli.readers import fastpath
from loop_brake_cli.readers.wire.event_line import decode as decode_event

try:
    from loop_brake_cli.readers import _event_scan
except ImportError:  # pragma: no cover - where no C compiler was there at install
    _event_scan = None

NOT_BUILT = (
    "the C reader loop_brake_cli.readers._event_scan is not built "
    "(pip install -e . builds it; or python setup.py build_ext --inplace)"
)
built = pytest.mark.skipif(_event_scan is None, reason=NOT_BUILT)


# ---- the oracle ------------------------------------------------------------------------


def exact_answer(line: bytes) -> tuple | None:
    """What the exact path makes of a line, in scan_event's shape; None where it is not
    a call with a string call id (an error, another record, no id, an integer id)."""
    try:
        obj = parse_json(line)
    except JSONInputError:
        return None
    record = decode_event(obj, 1)
    if record.__class__ is not ToolCall or record.call_id.__class__ is not str:
        return None
    digest = call_digest(record.tool, record.args)
    return (
        record.tool,
        record.session,
        record.call_id,
        digest,
        digest[:6].hex().encode(),
        encode_basestring(record.session).encode("utf-8", "surrogatepass"),
        encode_basestring(record.call_id).encode("utf-8", "surrogatepass"),
    )


def check(line: bytes) -> bool:
    """Whether scan_event answered; fails the test if an answer is not the exact one."""
    got = _event_scan.scan_event(line)
    if got is None:
        return False
    expected = exact_answer(line)
    assert expected is not None, f"answered a line the exact path does not take: {line[:300]!r}"
    assert [type(x) for x in got] == [str, str, str, bytes, bytes, bytes, bytes]
    assert got == expected, line[:300]
    return True


# ---- generated lines -------------------------------------------------------------------

WS = st.sampled_from(["", "", "", "", " ", "\t", "\n", "\r", " \r\n\t", "  "])
# pieces of string text: plain characters (code-point and UTF-16 order part at the
# astral ones against U+E000..U+FFFF), every escape kind, and raw control characters
PLAIN_CHARS = ["a", "Z", "0", " ", "/", "%", "'", "{", "}", "[", "]", ",", ":", "\x7f"]
PLAIN_CHARS += ["\u00e9", "\u2028", "\u2029", "\ufeff", "\ue000", "\uff01", "\uffff"]
PLAIN_CHARS += ["\U0001f600", "\U00010000", "\U0010ffff", "\u0301"]
ESCAPES = ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041", "\\u00e9"]
ESCAPES += ["\\u001f", "\\u0000", "\\ud83d\\ude00", "\\ud800", "\\udfff", "\\uE000", "\\u2028"]
ESCAPES += ["\\x", "\\", "\\U0041", "\\u12"]
RAW_CONTROL = ["\x00", "\x01", "\x1f", "\t", "\n", "\r", "\x08"]
STRING_PIECES = st.one_of(
    st.sampled_from(PLAIN_CHARS),
    st.sampled_from(PLAIN_CHARS),
    st.sampled_from(ESCAPES),
    st.text(max_size=3).filter(lambda s: '"' not in s and "\\" not in s),
)
STRINGS = st.one_of(
    st.lists(STRING_PIECES, max_size=6).map(lambda parts: '"' + "".join(parts) + '"'),
    st.lists(st.sampled_from(RAW_CONTROL + PLAIN_CHARS), min_size=1, max_size=3).map(
        lambda parts: '"' + "".join(parts) + '"'
    ),
)
KEYS = st.one_of(
    st.sampled_from(["", "a", "b", "A", "10", "2", "1", "a b", "k\x7f", "~", "__proto__"]).map(
        json.dumps
    ),
    st.sampled_from(["\u00e9", "\U0001f600", "\ue000", "\uff01", "a\U0001f600", "a\uff01"]).map(
        lambda key: json.dumps(key, ensure_ascii=False)
    ),
    st.sampled_from(['"\\u0061"', '"a\\"b"', '"\\n"', '"\\ud800"', '"\\ud83d\\ude00"']),
    STRINGS,
)
NUMBER_LITERALS = [
    "0",
    "-0",
    "0.5",
    "-0.5",
    "0.25",
    "2.5",
    "1.0",
    "1.50",
    "-0.0",
    "0.0",
    "1e5",
    "1E5",
    "1e+5",
    "1e-5",
    "2.5e3",
    "0.000001",
    "0.0000012",
    "0.0000001",
    "0.00000105",
    "123456789012345",
    "1234567890123456",
    "123456789012345.5",
    "12345678901234.5",
    "0.123456789012345",
    "0.1234567890123456",
    "0.000001234567890123",
    "9007199254740991",
    "9007199254740993",
    "18446744073709551616",
    "0.1",
    "0.30000000000000004",
    "5e-324",
    "1.7976931348623157e308",
    "1e400",
    "-1e400",
    "1e21",
    "1e-7",
    "100",
    "10.01",
    # not JSON
    "01",
    "-01",
    "00",
    "1.",
    ".5",
    "+1",
    "-",
    "1e",
    "1e+",
    "0x10",
    "NaN",
    "Infinity",
    "-Infinity",
    "1.5.2",
    "--1",
]


@st.composite
def integers_text(draw: Any) -> str:
    """An integer of 1 to 20 digits, either sign."""
    digits = draw(st.integers(1, 20))
    value = draw(st.integers(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1))
    return ("-" if draw(st.booleans()) else "") + str(value)


@st.composite
def decimals_text(draw: Any) -> str:
    """A decimal literal: integer part, fraction (leading and trailing zeros), exponent."""
    whole = draw(st.sampled_from(["0", "1", "12", "100", "123456789", "99999999999999"]))
    zeros = "0" * draw(st.integers(0, 8))
    fraction = zeros + str(draw(st.integers(0, 10**12)))
    if draw(st.booleans()):
        fraction = fraction.rstrip("0") or "5"
    exponent = draw(st.sampled_from(["", "", "", "e5", "E-3", "e+0", "e-7", "e21"]))
    return ("-" if draw(st.booleans()) else "") + whole + "." + fraction + exponent


NUMBERS = st.one_of(
    st.sampled_from(NUMBER_LITERALS),
    integers_text(),
    decimals_text(),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
SCALARS = st.one_of(
    NUMBERS,
    STRINGS,
    st.sampled_from(["true", "false", "null", "tru", "nul", "True", "fals"]),
)


@st.composite
def containers(draw: Any, inner: Any) -> str:
    """An array or object of ``inner`` values, whitespace anywhere, duplicate keys at times."""
    if draw(st.booleans()):
        items = draw(st.lists(inner, max_size=4))
        body = ",".join(draw(WS) + item + draw(WS) for item in items)
        return "[" + body + ("" if items else draw(WS)) + "]"
    keys = draw(st.lists(KEYS, max_size=4))
    if keys and draw(st.integers(0, 9)) == 0:
        keys.append(keys[0])  # a duplicate name
    members = [draw(WS) + key + draw(WS) + ":" + draw(WS) + draw(inner) + draw(WS) for key in keys]
    return "{" + ",".join(members) + ("" if members else draw(WS)) + "}"


VALUES = st.recursive(SCALARS, containers, max_leaves=10)

ID_STRINGS = st.one_of(
    st.sampled_from(['"s1"', '"c1"', '""', '"%d%s"', '"\x7f"', '"\u00e9"', '"\U0001f600"']),
    st.sampled_from(['"a\\"b"', '"\\u0073"', '"\\ud800"', '"a\\\\"', '"\\n"', '"\\/"']),
    st.text(max_size=6).map(lambda s: json.dumps(s, ensure_ascii=False)),
)
PLAIN_IDS = st.sampled_from(['"s1"', '"c1"', '""', '"\u00e9"', '"\U0001f600"', '"a b"'])
ID_VALUES = st.one_of(PLAIN_IDS, ID_STRINGS, st.sampled_from(["1", "7.0", "1e3", "null", "[]"]))
ARGS_VALUES = st.one_of(st.deferred(lambda: SUBSET_VALUES), VALUES, VALUES, st.just("null"))
# each role: its member name and value in the common shape, and the names it may take
# when it is off (None: left out)
ROLES = {
    "tool": ("tool", PLAIN_IDS, ["toolName", "name", '"\\u0074ool"', None], ID_VALUES),
    "args": ("args", st.deferred(lambda: SUBSET_VALUES), ["arguments", "input", None], ARGS_VALUES),
    "session": ("sessionId", PLAIN_IDS, ["session_id", "agentId", "agent_id", None], ID_VALUES),
    "call": ("callId", PLAIN_IDS, ["call_id", "id", '"call\\u0049d"', None], ID_VALUES),
}
EXTRA_NAMES = ["n", "type", "tool", "args", "sessionId", "callId", "agentId", "toolName", "x\\y"]


def _name(name: str) -> str:
    return name if name.startswith('"') else '"' + name + '"'


@st.composite
def event_lines(draw: Any) -> bytes:
    """An event line: the common shape, or a near miss of it in one role, or in several."""
    off = draw(st.sampled_from(["none", "none", "tool", "args", "session", "call", "all"]))
    members = []
    for role, (name, value, aliases, near_values) in ROLES.items():
        if off in (role, "all"):
            if draw(st.booleans()):
                name = draw(st.sampled_from(aliases))
            value = near_values
        if name is not None:
            members.append((_name(name), draw(value)))
    if draw(st.integers(0, 3)) == 0:
        for extra in draw(st.lists(st.sampled_from(EXTRA_NAMES), min_size=1, max_size=2)):
            members.append((_name(extra), draw(st.one_of(VALUES, ID_STRINGS))))
    members = draw(st.permutations(members))
    body = ",".join(
        draw(WS) + name + draw(WS) + ":" + draw(WS) + value + draw(WS) for name, value in members
    )
    text = draw(WS) + "{" + body + "}" + draw(WS)
    return text.encode("utf-8", "surrogatepass")


# ---- the subset the C claims: lines it must answer ------------------------------------

# no control character below U+0020 (DEL and U+0080..U+009F are written raw by both)
ID_TEXT = st.text(
    st.characters(min_codepoint=0x20, blacklist_categories=("Cs",), blacklist_characters='"\\'),
    max_size=8,
)
# characters whose JSON.stringify escape is a short one (\" \\ \b \f \n \r \t), plus the rest
SUBSET_TEXT = st.text(
    st.one_of(
        st.characters(min_codepoint=0x20, blacklist_categories=("Cs",)),
        st.sampled_from('"\\\b\f\n\r\t\x7f\x85'),
    ),
    max_size=8,
)
# member names: printable ASCII (and DEL) without escapes, so byte order is UTF-16 order
SUBSET_KEYS = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7F, blacklist_characters='"\\'), max_size=4
)


@st.composite
def subset_numbers(draw: Any) -> str:
    """A number JavaScript prints as written: an integer of at most 15 digits (not -0), or
    a decimal of at most 15 significant digits, at least 1e-6, not ending in 0."""
    sign = "-" if draw(st.booleans()) else ""
    if draw(st.booleans()):
        value = draw(st.integers(-(10**15) + 1, 10**15 - 1))
        return str(value)
    whole = draw(st.integers(0, 10**7))
    room = 15 - (len(str(whole)) if whole else 0)  # significant digits left
    tail = str(draw(st.integers(1, 10 ** draw(st.integers(1, room)) - 1))).rstrip("0")
    leading = draw(st.integers(0, 5 if whole == 0 else room - len(tail)))
    return sign + str(whole) + "." + "0" * leading + tail


SUBSET_SCALARS = st.one_of(
    subset_numbers(),
    SUBSET_TEXT.map(lambda s: json.dumps(s, ensure_ascii=False)),
    st.sampled_from(["true", "false", "null"]),
)


@st.composite
def subset_containers(draw: Any, inner: Any) -> str:
    if draw(st.booleans()):
        items = draw(st.lists(inner, max_size=4))
        return "[" + ",".join(draw(WS) + item + draw(WS) for item in items) + "]"
    keys = draw(st.lists(SUBSET_KEYS, max_size=5, unique=True))
    members = [
        draw(WS) + json.dumps(k, ensure_ascii=False) + draw(WS) + ":" + draw(WS) + draw(inner)
        for k in keys
    ]
    return "{" + draw(WS) + ",".join(members) + draw(WS) + "}"


SUBSET_VALUES = st.recursive(SUBSET_SCALARS, subset_containers, max_leaves=12)


@st.composite
def subset_lines(draw: Any) -> bytes:
    """A common-shape line inside the subset: scan_event must answer it."""
    members = [
        ('"tool"', json.dumps(draw(ID_TEXT), ensure_ascii=False)),
        ('"args"', draw(SUBSET_VALUES.filter(lambda v: v != "null"))),
        ('"sessionId"', json.dumps(draw(ID_TEXT), ensure_ascii=False)),
        ('"callId"', json.dumps(draw(ID_TEXT), ensure_ascii=False)),
    ]
    if draw(st.booleans()):
        members.append(
            ('"' + draw(st.sampled_from(["n", "meta", "ts"])) + '"', draw(SUBSET_VALUES))
        )
    members = draw(st.permutations(members))
    body = ",".join(draw(WS) + n + draw(WS) + ":" + draw(WS) + v + draw(WS) for n, v in members)
    return (draw(WS) + "{" + body + "}" + draw(WS)).encode("utf-8")


# Lines of the common shape that any useful reader answers.
PLAIN = [
    b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c1"}',
    b'{"tool":"t","args":{"b":1,"a":2,"c":{"z":[1,2,{"y":0,"x":-3}],"m":true}},'
    b'"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"f":0.25,"g":2.5,"h":-0.5,"i":0.000001,"j":123456789.125},'
    b'"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"s":"a\\nb\\"c\\\\d\\te\\rf\\bg\\fh"},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"s":"\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xee\x80\x80\x7f"},'
    b'"sessionId":"s","callId":"c"}',
    '{"tool":"\u00e9dit","args":[],"sessionId":"\U0001f600","callId":"\u00e9"}'.encode(),
    b' {\t"callId" : "c" ,\r\n"sessionId":"s", "args" : { } , "tool" : "t" } \r',
    b'{"tool":"t","args":{"10":1,"2":2,"":3,"a b":4,"~":5,"A":6},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"just a string","sessionId":"","callId":""}',
    b'{"tool":"","args":42,"sessionId":"s","callId":"c","ts":1.5,"meta":{"b":[null]}}',
    b'{"tool":"50%done %d","args":{"n":123456789012345},"sessionId":"%s","callId":"%%"}',
    b'{"tool":"t","args":[true,false,null,-7,[[[]]],{}],"sessionId":"s","callId":"c"}',
]


# ---- the tests -------------------------------------------------------------------------


@built
@pytest.mark.parametrize("line", PLAIN)
def test_plain_common_lines_are_answered_exactly(line: bytes) -> None:
    assert check(line)


@built
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subset_lines())
def test_lines_inside_the_subset_are_answered_exactly(line: bytes) -> None:
    assert check(line), line


@built
@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_lines())
def test_an_answer_is_always_the_exact_one(line: bytes) -> None:
    check(line)


@built
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(VALUES, SUBSET_VALUES), min_size=1, max_size=3))
def test_any_args_text_in_the_common_shape(values: list[str]) -> None:
    # the args member alone varied, in every position: answered only when exact
    for value in values:
        for line in (
            '{"tool":"t","args":' + value + ',"sessionId":"s","callId":"c"}',
            '{"args":' + value + ',"tool":"t","sessionId":"s","callId":"c"}',
            '{"tool":"t","sessionId":"s","callId":"c","args":' + value + "}",
        ):
            check(line.encode("utf-8", "surrogatepass"))


NEAR_MISSES = [
    # aliases, agent ids, nulls: the exact decoder's business, so None
    b'{"toolName":"t","args":{},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","arguments":{},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":null,"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{},"agentId":"a","callId":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","agent_id":"a","callId":"c"}',
    b'{"tool":"t","args":{},"session_id":"s","callId":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","call_id":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","id":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s"}',
    b'{"tool":"t","sessionId":"s","callId":"c"}',
    b'{"args":{},"sessionId":"s","callId":"c"}',
    # ids that are not plain strings
    b'{"tool":"t","args":{},"sessionId":"s","callId":7}',
    b'{"tool":"t","args":{},"sessionId":"s","callId":null}',
    b'{"tool":"t","args":{},"sessionId":"s\\"","callId":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","callId":"\\u0063"}',
    b'{"tool":"\\u0074","args":{},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","callId":"\\ud800"}',
    # names spelled with escapes, duplicates
    b'{"\\u0074ool":"t","args":{},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{},"sessionId":"s","callId":"c","callId":"d"}',
    b'{"tool":"t","args":{},"args":{},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"a":1,"a":2},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"\xc3\xa9":1},"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":{"\\u0061":1},"sessionId":"s","callId":"c"}',
    # numbers and strings JavaScript writes otherwise
    b'{"tool":"t","args":1.0,"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":-0,"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":1e5,"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":0.0000001,"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":1234567890123456,"sessionId":"s","callId":"c"}',
    # a lone surrogate: the exact path writes it
    b'{"tool":"t","args":"\\ud800","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\\udc00\\ud800","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\\ud800\\u0041","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\\ud800\\","sessionId":"s","callId":"c"}',
    # not JSON
    b'{"tool":"t","args":{},"sessionId":"s","callId":"c"} x',
    b'{"tool":"t","args":{},"sessionId":"s","callId":"c",}',
    b'{"tool":"t","args":[1,],"sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\x01","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\xed\xa0\x80","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":"\xc0\xaf","sessionId":"s","callId":"c"}',
    b'{"tool":"t","args":01,"sessionId":"s","callId":"c"}',
    b'\xef\xbb\xbf{"tool":"t","args":{},"sessionId":"s","callId":"c"}',
    b"",
    b" ",
    b"{}",
    b"[]",
]


# Escapes JSON.stringify writes otherwise are rewritten, not declined: arguments with a
# \u escape sent whole streams to the slower path (issue 30).
REWRITTEN_ESCAPES = [
    '"\\/"',
    '"\\u00e9"',
    '"\\u00E9\\u00e9"',
    '"x\\u0041y"',
    '"\\u0000\\u0008\\u0009\\u000a\\u000C\\u000d\\u001F\\u001f"',
    '"\\u0022\\u005C\\u002f\\u007f\\u0080\\u07ff\\u0800"',
    '"\\u2028\\u2029\\ufeff\\uE000\\uFFFF"',
    '"\\ud83d\\ude00\\uD800\\uDC00\\udbff\\udfff"',
    '{"k":"\\u00e9","a":["\\/","\\ud83d\\ude00"]}',
    '"' + "a" * 100_000 + "\\u00e9" + "b" * 100_000 + '"',
]


@built
@pytest.mark.parametrize("args", REWRITTEN_ESCAPES, ids=range(len(REWRITTEN_ESCAPES)))
def test_escapes_javascript_writes_otherwise_are_rewritten_exactly(args: str) -> None:
    line = f'{{"tool":"t","args":{args},"sessionId":"s","callId":"c"}}'.encode()
    assert check(line)
    assert _event_scan.digest_json(b"t\n", args.encode()) == call_digest("t", parse_json(args))


@built
@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses_are_declined(line: bytes) -> None:
    assert _event_scan.scan_event(line) is None


# Members the event line drops need only be JSON: real lines carry nanosecond and
# microsecond timestamps, exponents, escapes and repeated keys in their metadata, and
# declining them sent whole streams to the Python path (issue 30).
DROPPED_VALUES = [
    "1733097600.123456",
    "1733097600123456789",
    "1e9",
    "1.0",
    "-0",
    "1E+400",
    "0.0000001",
    "1" + "0" * 400,
    '"caf\\u00e9 \\/ \\ud800 \\uDFFF \\\\ \\""',
    '{"a":1,"a":2,"\\u0074ool":"x","n":{"k":[1.50,-0.0]}}',
    '[true,false,null,{},[],""]',
    '{"tool":"other","sessionId":"elsewhere","args":{"q":"secret"}}',
]


@built
@pytest.mark.parametrize("dropped", DROPPED_VALUES)
@pytest.mark.parametrize("name", ["ts", "meta", "toolName", "session_id", "id", "type"])
def test_dropped_members_may_hold_any_json(dropped: str, name: str) -> None:
    line = f'{{"{name}":{dropped},"tool":"t","args":{{"q":1}},"sessionId":"s","callId":"c"}}'
    assert check(line.encode()), line
    tail = f'{{"tool":"t","args":{{"q":1}},"sessionId":"s","callId":"c","{name}":{dropped}}}'
    assert check(tail.encode()), tail


DROPPED_NOT_JSON = [
    '"\\x"',
    '"\\u12"',
    '"\\u12g4"',
    '"\\"',
    '"a\x01b"',
    '"a\x1fb"',  # the last raw control character
    "01",
    "1.",
    ".5",
    "-",
    "1e",
    "1e+",
    "+1",
    "NaN",
    "Infinity",
    "tru",
    "nul",
    "[1,]",
    '{"a":1,}',
    '{"a" 1}',
    "{1:2}",
    "",
]


@built
@pytest.mark.parametrize("dropped", DROPPED_NOT_JSON)
def test_a_dropped_member_that_is_not_json_is_declined(dropped: str) -> None:
    line = f'{{"ts":{dropped},"tool":"t","args":{{}},"sessionId":"s","callId":"c"}}'
    assert _event_scan.scan_event(line.encode()) is None, line
    assert exact_answer(line.encode()) is None


@built
@pytest.mark.parametrize("depth", [62, 63, 64, 65, 1000])
def test_dropped_members_nested_past_the_limit_are_declined_not_misread(depth: int) -> None:
    line = (
        '{"m":' + "[" * depth + "]" * depth + ',"tool":"t","args":{},"sessionId":"s","callId":"c"}'
    )
    got = _event_scan.scan_event(line.encode())
    assert (got is not None) == (depth < 64)
    if got is not None:
        assert check(line.encode())


@built
@pytest.mark.parametrize("depth", [1, 62, 63, 64, 65, 1000, 5000])
@pytest.mark.parametrize("kind", ["[]", "{}"])
def test_deep_nesting(depth: int, kind: str) -> None:
    if kind == "[]":
        deep = "[" * depth + "]" * depth
    else:
        deep = '{"a":' * depth + "{}" + "}" * depth
    line = '{"tool":"t","args":' + deep + ',"sessionId":"s","callId":"c"}'
    answered = check(line.encode())
    levels = depth + (kind == "{}")  # the args value's own nesting
    assert answered == (levels <= 63)  # with the line's own object: 64 levels at most
    assert check_digest_json(deep.encode()) == (levels <= 64)
    # deep elsewhere than args, and cut short at the deepest point
    check(('{"tool":"t","args":{},"m":' + deep + ',"sessionId":"s","callId":"c"}').encode())
    check(('{"tool":"t","args":' + deep[: len(deep) // 2]).encode())


@built
def test_huge_lines() -> None:
    big = "x" * (1 << 20)
    assert check_digest_json(('{"s":"' + big + '","n":[1.5,"' + big + '"]}').encode())
    assert check(('{"tool":"t","args":{"s":"' + big + '"},"sessionId":"s","callId":"c"}').encode())
    assert check(('{"tool":"t","args":{},"sessionId":"' + big + '","callId":"c"}').encode())
    escaped = "\\n\u00e9\\\\" * (1 << 17)
    line = '{"tool":"t","args":["' + escaped + '"],"sessionId":"s","callId":"c"}'
    assert check(line.encode())
    assert not check(line[: len(line) // 2].encode())
    numbers = ",".join(str(i * 7919 % 100003) + ".5" for i in range(100_000))
    assert check(('{"tool":"t","args":[' + numbers + '],"sessionId":"s","callId":"c"}').encode())


@built
@pytest.mark.parametrize("count", [2, 64, 65, 1000, 5000])
def test_many_members(count: int) -> None:
    keys = [f"k{i * 7919 % count}" for i in range(count)]  # a permutation: all distinct
    args = "{" + ",".join(f'"{k}":{i}' for i, k in enumerate(keys)) + "}"
    line = '{"tool":"t","args":' + args + ',"sessionId":"s","callId":"c"}'
    assert check(line.encode())
    # the same members nested one level deeper in each of several objects at once
    nested = "[" + ",".join([args] * 3) + ',{"z":' + args + "}]"
    assert check(('{"tool":"t","args":' + nested + ',"sessionId":"s","callId":"c"}').encode())
    duplicated = args[:-1] + ',"' + keys[-1] + '":0}'
    assert not check(
        ('{"tool":"t","args":' + duplicated + ',"sessionId":"s","callId":"c"}').encode()
    )
    extras = ",".join(f'"e{i}":[{i}]' for i in range(count))
    assert check(('{"tool":"t",' + extras + ',"args":{},"sessionId":"s","callId":"c"}').encode())


def random_number_text(rnd: random.Random) -> str:
    """A number literal of 1 to 17 significant digits with the point anywhere, seven
    places left of them included (runs of 9s and of 0s at times: rounding edges)."""
    digits = rnd.randint(1, 17)
    mantissa = str(rnd.randint(10 ** (digits - 1), 10**digits - 1))
    if digits > 2 and rnd.random() < 0.3:
        mantissa = mantissa[0] + rnd.choice("09") * (digits - 2) + mantissa[-1]
    point = rnd.randint(-7, digits)  # digits before the point; below 0: zeros after it
    if point <= 0:
        text = "0." + "0" * -point + mantissa
    elif point >= digits:
        text = mantissa
    else:
        text = mantissa[:point] + "." + mantissa[point:]
    return ("-" if rnd.random() < 0.5 else "") + text


@built
def test_numbers_around_the_fifteen_digit_edge() -> None:
    rnd = random.Random(15)
    answered = 0
    for _ in range(100_000):
        number = random_number_text(rnd)
        answered += check(
            b'{"tool":"t","args":[%b],"sessionId":"s","callId":"c"}' % number.encode()
        )
    assert 50_000 < answered < 90_000  # inside the subset, and outside it


# ---- mutation fuzz ---------------------------------------------------------------------

# bytes a mutation inserts: JSON punctuation, escapes, literals, member names, and
# invalid UTF-8 (a lone surrogate, overlongs, beyond U+10FFFF, stray continuations)
INSERTS = [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b" ", b"\t", b"\r", b"\n", b"\x00"]
INSERTS += [b"\x1f", b"\x7f", b"0", b"-", b".", b"e", b"E", b"+", b"9" * 16, b"\\u", b"\\ud800"]
INSERTS += [b"\\u0041", b"\\n", b"\\/", b"null", b"true", b"1.0", b"-0", b"1e5", b"0.0000001"]
INSERTS += [b'"agentId":"a",', b'"callId":"d",', b'"tool":1,', b'"args":null,', b'"a":1,']
INSERTS += [b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80"]
INSERTS += [b"\xed\xbf\xbf", b"\xf0\x80\x80\xaf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80"]
INSERTS += [
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
]


def mutate(rnd: random.Random, line: bytes) -> bytes:
    """One byte-level mutation of a line, or two to four."""
    data = bytearray(line)
    for _ in range(1 if rnd.random() < 0.6 else rnd.randint(2, 4)):
        at = rnd.randint(0, len(data))
        roll = rnd.randrange(9)
        if roll == 0:
            del data[at:]  # truncated
        elif roll == 1 and data:
            data[min(at, len(data) - 1)] ^= 1 << rnd.randrange(8)
        elif roll == 2 and data:
            data[min(at, len(data) - 1)] = rnd.randrange(256)
        elif roll == 3:
            data[at:at] = bytes([rnd.randrange(256)])
        elif roll == 4:
            del data[at : at + rnd.randint(1, 4)]
        elif roll == 5 and data:
            start = rnd.randrange(len(data))
            data[at:at] = data[start : start + rnd.randint(1, 12)]  # a copied slice
        else:
            data[at:at] = rnd.choice(INSERTS)
    return bytes(data)


def fuzz_corpus(rnd: random.Random, count: int) -> list[bytes]:
    """Inputs to mutate: PLAIN, and common-shape lines whose arguments are random
    documents (``test_hash_node``'s generator: every number spelling and escape, some
    invalid) or values inside the subset; and those arguments alone (for digest_json)."""
    lines = list(PLAIN)
    docs = random_documents(count, seed=rnd.randrange(1 << 30))
    docs += [("t", _random_subset_value(rnd, 3)) for _ in range(count)]
    for tool, raw in docs:
        session = rnd.choice(["s1", "\u00e9", "\U0001f600", ""])
        order = [
            '"tool":' + json.dumps(tool, ensure_ascii=False),
            '"args":' + raw,
            '"sessionId":' + json.dumps(session, ensure_ascii=False),
            '"callId":"c' + str(rnd.randrange(100)) + '"',
        ]
        rnd.shuffle(order)
        lines.append(("{" + ",".join(order) + "}").encode("utf-8", "surrogatepass"))
        lines.append(raw.encode("utf-8", "surrogatepass"))
    return lines


def check_digest_json(data: bytes) -> bool:
    """Whether ``digest_json`` (the same reader, for replay) answered for ``data``; fails
    the test if an answer is not sha256(head + the canonical form of the value)."""
    got = _event_scan.digest_json(b"t\n", data)
    if got is None:
        return False
    try:
        value = parse_json(data)
    except JSONInputError:
        pytest.fail(f"digest_json answered for text parse_json rejects: {data[:300]!r}")
    assert got == hashlib.sha256(b"t\n" + canonical_json(value).encode()).digest(), data[:300]
    return True


def fuzz(rounds: int, seed: int = 0) -> tuple[int, int, int]:
    """``rounds`` mutated inputs through ``check`` and ``check_digest_json``; returns
    (inputs run, scan_event answers, digest_json answers).

    Also the driver of the manual sanitizer runs: from tests/,
    ``python -c "import test_event_scan as t; print(t.fuzz(10**6, 7))"``."""
    rnd = random.Random(seed)
    corpus = fuzz_corpus(rnd, 400)
    run = scanned = digested = 0
    for _ in range(rounds):
        data = rnd.choice(corpus)
        if run >= len(corpus):  # the corpus itself first, then its mutations
            data = mutate(rnd, mutate(rnd, data) if rnd.random() < 0.2 else data)
        else:
            data = corpus[run]
        run += 1
        scanned += check(data)
        digested += check_digest_json(data)
    return run, scanned, digested


@built
def test_mutated_lines_never_crash_and_any_answer_is_exact() -> None:
    run, scanned, digested = fuzz(200_000, seed=1)
    assert run == 200_000
    # some mutations keep a line valid and inside the subset
    assert scanned > 2000 and digested > 8000


@built
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(subset_lines(), event_lines()), st.randoms(use_true_random=False))
def test_mutations_of_generated_lines(line: bytes, rnd: random.Random) -> None:
    for data in (line, mutate(rnd, line)):
        check(data)
        check_digest_json(data)


@built
def test_only_bytes_are_read() -> None:
    with pytest.raises(TypeError):
        _event_scan.scan_event('{"tool":"t","args":{},"sessionId":"s","callId":"c"}')
    with pytest.raises(TypeError):
        _event_scan.scan_event(bytearray(PLAIN[0]))


# ---- SHA-256 ---------------------------------------------------------------------------

SHA_LENGTHS = [*range(301), 1000, 4095, 4096, 65_535, 65_536, 1_000_003]


def _sha_inputs() -> list[bytes]:
    rnd = random.Random(3)
    return [rnd.randbytes(n) for n in SHA_LENGTHS]


@built
def test_sha256_equals_hashlib() -> None:
    for data in _sha_inputs():
        assert _event_scan.sha256(data) == hashlib.sha256(data).digest(), len(data)
    assert _event_scan.sha256(memoryview(b"abc")) == hashlib.sha256(b"abc").digest()


SUBPROCESS_SCRIPT = """
import json, random, sys
from loop_brake_cli.readers import _event_scan
rnd = random.Random(3)
lengths = json.loads(sys.argv[1])
lines = [line.encode("latin-1") for line in json.loads(sys.argv[2])]
print(json.dumps({
    "sha_ni": _event_scan.SHA_NI,
    "sha": [_event_scan.sha256(rnd.randbytes(n)).hex() for n in lengths],
    "scan": [_event_scan.scan_event(line)[3].hex() for line in lines],
}))
"""


@built
@pytest.mark.parametrize("no_sha_ni", [True, False])
def test_sha256_in_a_subprocess_with_each_compression(no_sha_ni: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LOOP_BRAKE_NO_SHA_NI"}
    if no_sha_ni:
        env["LOOP_BRAKE_NO_SHA_NI"] = "1"
    lines = [line.decode("latin-1") for line in PLAIN]
    out = subprocess.run(
        [sys.executable, "-c", SUBPROCESS_SCRIPT, json.dumps(SHA_LENGTHS), json.dumps(lines)],
        capture_output=True,
        check=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    got = json.loads(out.stdout)
    if no_sha_ni:
        assert got["sha_ni"] == 0
    else:
        assert got["sha_ni"] == _event_scan.SHA_NI
    assert got["sha"] == [hashlib.sha256(data).hexdigest() for data in _sha_inputs()]
    assert got["scan"] == [exact_answer(line)[3].hex() for line in PLAIN]


# ---- against Node.js -------------------------------------------------------------------


def _node_batch(count: int) -> list[tuple[str, str]]:
    """(tool, args text) pairs: random documents (every spelling; many outside the
    subset) and documents generated inside it."""
    rnd = random.Random(21)
    tools = ["search", "\u00e9dit", "\U0001f600", "t%d", "", "a b"]
    docs = [(rnd.choice(tools), raw) for _, raw in random_documents(count, seed=21)]
    for _ in range(count):
        docs.append((rnd.choice(tools), _random_subset_value(rnd, 3)))
    return docs


def _random_subset_value(rnd: random.Random, depth: int) -> str:
    """A value inside the subset (random.Random: thousands of them, quickly)."""
    roll = rnd.randrange(8 if depth else 5)
    if roll == 0:
        return str(rnd.randint(-(10**15) + 1, 10**15 - 1))
    if roll == 1:
        text = f"{rnd.uniform(-1e6, 1e6):.{rnd.randint(1, 8)}f}".rstrip("0")
        return text + "1" if text.endswith(".") else text
    if roll == 2:
        return "0." + "0" * rnd.randint(0, 5) + str(rnd.randint(1, 10**9)).rstrip("0")
    if roll == 3:
        chars = ["a", "\n", '"', "\\", "\t", "\b", "\f", "\r", "\x7f", "\x85", "\u2028"]
        chars += ["\u00e9", "\U0001f600", "\ue000", "\uffff"]
        text = "".join(rnd.choice(chars) for _ in range(rnd.randint(0, 6)))
        return json.dumps(text, ensure_ascii=False)
    if roll == 4:
        return rnd.choice(["true", "false", "null"])
    if roll == 5:
        return "[" + ",".join(_random_subset_value(rnd, depth - 1) for _ in range(3)) + "]"
    keys = {"".join(rnd.choice("ab1~ Z_") for _ in range(rnd.randint(0, 3))) for _ in range(4)}
    members = [json.dumps(k) + ":" + _random_subset_value(rnd, depth - 1) for k in keys]
    return "{" + ",".join(members) + "}"


@built
def test_digests_equal_nodes(node: str) -> None:
    answered = []
    for tool, raw in _node_batch(4000):
        raw = raw.replace("\r", " ").replace("\n", " ")  # whitespace only: strings escape them
        line = '{"tool":' + json.dumps(tool, ensure_ascii=False) + ',"args":' + raw
        line += ',"sessionId":"s","callId":"c"}'
        got = _event_scan.scan_event(line.encode("utf-8", "surrogatepass"))
        if got is not None:
            answered.append((tool, raw, got[3].hex(), got[4].decode()))
    payload = json.dumps([{"tool": t, "raw": r} for t, r, _, _ in answered])
    theirs = node_canonical(node, payload.encode("ascii"))
    mismatches = [
        (tool, raw)
        for (tool, raw, digest, prefix), expected in zip(answered, theirs, strict=True)
        if expected.get("hash") != digest or digest[:12] != prefix
    ]
    assert not mismatches, mismatches[:5]
    assert len(answered) > 4000  # the subset's documents, and some of the random ones


# ---- the switch and CI -----------------------------------------------------------------


@built
def test_pure_python_switches_the_reader_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOP_BRAKE_PURE_PYTHON", raising=False)
    assert fastpath.scanner() is _event_scan.scan_event
    monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")
    assert fastpath.scanner() is None


def test_ci_builds_the_c_reader() -> None:
    """CI installs the checkout (pip install -e), which builds the optional extension;
    a compiler error there would otherwise pass unseen, every line read by orjson."""
    if not os.environ.get("CI"):
        pytest.skip("only in CI (CI set), where pip install -e . must have built the C reader")
    assert _event_scan is not None, NOT_BUILT
    assert fastpath._scan_event is _event_scan.scan_event  # and the fast path took it
