"""The hash contract's edges and the call-id rule, as expected values written from the
documented rules (canonical.py's specification, docs/semantics.md) and, where Node.js
runs, as JSON.parse and the plugin's canonical form give them.

The differential tests (fast path against exact path, C against Python, hook against
replay) share ``canonical`` and ``wire/fields``, so a break there changes both sides
alike: these tests hold the expected values themselves."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import node_canonical

from loop_brake_cli.core.canonical import (
    JSONInputError,
    call_hash,
    canonical_json,
    hash_prefix,
    parse_arguments,
    parse_json,
)
from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult
from loop_brake_cli.readers.wire import event_line
from loop_brake_cli.readers.wire.fields import FieldError, call_id_of, session_of, tool_of

# (JSON text, the canonical form JSON.parse + sorted JSON.stringify give), from the rule
CANONICAL = [
    ("9007199254740993", "9007199254740992"),  # a double: 2**53 + 1 is not one
    ("9007199254740992", "9007199254740992"),
    ("123456789012345678", "123456789012345680"),
    ("1e21", "1e+21"),
    ("100000000000000000000", "100000000000000000000"),
    ("1e-7", "1e-7"),
    ("0.000001", "0.000001"),
    ("1.5e-10", "1.5e-10"),
    ("-0", "0"),
    ("-0.0", "0"),
    ("1.0", "1"),
    ("1e400", "null"),
    ('"\\f\\b\\u0001\\u001f\\/"', '"\\f\\b\\u0001\\u001f/"'),
    ('"\\ud800"', '"\\ud800"'),
    ('{"a\\ud83d\\ude00": 1, "a\\uff01": 2}', '{"a\U0001f600":1,"a\uff01":2}'),
    ('{"b": 1, "a": [true, null, {"d": 1, "c": 2}]}', '{"a":[true,null,{"c":2,"d":1}],"b":1}'),
    (' \t\r\n{"a": 1} \t\r\n', '{"a":1}'),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL, ids=[c[0] for c in CANONICAL])
def test_canonical_form_of_documented_edges(text: str, canonical: str) -> None:
    assert canonical_json(parse_json(text)) == canonical


def test_the_edges_are_what_node_gives(node: str) -> None:
    items = [{"tool": "t", "raw": text} for text, _ in CANONICAL]
    items += [{"tool": "t", "raw": text} for text in NOT_JSON]
    got = node_canonical(node, json.dumps(items).encode())
    assert [item.get("canonical") for item in got[: len(CANONICAL)]] == [c for _, c in CANONICAL]
    assert all("error" in item for item in got[len(CANONICAL) :])
    for item in got[: len(CANONICAL)]:
        assert item["hash"] == call_hash("t", parse_json(item["raw"]))


def test_a_large_integer_parses_as_the_double_javascript_sees() -> None:
    assert parse_json("9007199254740993") == 2**53
    assert parse_json("[9007199254740993]") == [2**53]


NOT_JSON = ["{}\x0c", "{}\u00a0", "\x0c{}", "\u00a0{}", "{}\x0b", "", "   ", "{} x"]


@pytest.mark.parametrize("text", NOT_JSON, ids=repr)
def test_only_json_whitespace_surrounds_a_value(text: str) -> None:
    with pytest.raises(JSONInputError):
        parse_json(text)


def test_a_bad_utf8_byte_is_located_by_its_1_based_column() -> None:
    with pytest.raises(JSONInputError) as caught:
        parse_json(b'{"a":"\xff"}')
    assert caught.value.column == 7 and str(caught.value) == "not valid UTF-8 at column 7"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ({}, False)),
        ("", ({}, False)),
        ("   ", ({}, False)),
        ("\t\n", ({}, False)),
        ('{"a": 1}', ({"a": 1}, False)),
        (" [1] ", ([1], False)),
        ("not json", ("not json", True)),
        ("{}\x0c", ("{}\x0c", True)),
        ({"a": 1}, ({"a": 1}, False)),
        (5, (5, False)),
    ],
    ids=repr,
)
def test_parse_arguments(value: object, expected: tuple) -> None:
    assert parse_arguments(value) == expected


def test_the_hash_is_sha256_of_tool_newline_canonical_form() -> None:
    expected = hashlib.sha256(b'grep\n{"a":[1,"x"],"b":null}').hexdigest()
    assert call_hash("grep", {"b": None, "a": [1, "x"]}) == expected
    lone = hashlib.sha256("\ufffd\n{}".encode()).hexdigest()
    assert call_hash("\ud800", {}) == lone
    assert hash_prefix(bytes.fromhex(expected)) == expected[:12] == hash_prefix(expected)


# -- call ids, sessions, tool names (wire/fields.py, docs/semantics.md) -------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("c1", "c1"),
        ("", ""),
        (0, 0),
        (2**53, 2**53),
        (-(2**53), -(2**53)),
        (7.0, 7),
        (float(2**53), 2**53),
    ],
    ids=repr,
)
def test_call_ids(value: object, expected: object) -> None:
    got = call_id_of(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "value", [2**53 + 1, -(2**53) - 1, 7.5, float(2**54), True, False, [1], {"a": 1}], ids=repr
)
def test_not_call_ids(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        call_id_of(value, "callId")
    assert str(caught.value) == "callId is not a string or an integer"


def test_sessions_and_tool_names() -> None:
    assert session_of("s", "ag") == "s"
    assert session_of(None, "ag") == "ag"
    assert session_of(None, None) == "default"
    assert session_of("", "ag") == ""  # ?? : the empty string is a session of its own
    assert session_of("s", "ag", subagent=True) == "s/ag"
    assert session_of(None, "ag", subagent=True) == "default/ag"
    assert session_of("s", None, subagent=True) == "s"
    for bad in (5, 2.0, True, ["s"]):
        with pytest.raises(FieldError, match="^sessionId is not a string$"):
            session_of(bad)
        with pytest.raises(FieldError, match="^agentId is not a string$"):
            session_of("s", bad)
    assert tool_of("") == ""
    with pytest.raises(FieldError, match="^tool name not a string$"):
        tool_of(5)
    with pytest.raises(FieldError, match="^tool name missing$"):
        tool_of(None)


def test_an_event_line_with_a_large_integer_call_id_is_a_call() -> None:
    line = b'{"tool":"x","args":{},"sessionId":"s","callId":9007199254740993}'
    record = event_line.decode(parse_json(line), 1)
    assert isinstance(record, ToolCall) and record.call_id == 2**53
    over = event_line.decode(parse_json(line.replace(b"993}", b"993.0e1}")), 1)
    assert isinstance(over, BadRecord) and over.message == "callId is not a string or an integer"


def test_event_line_aliases_and_defaults() -> None:
    decode = event_line.decode
    call = decode({"toolName": "x", "name": "y", "sessionId": "", "agentId": "ag"})
    assert isinstance(call, ToolCall) and (call.tool, call.session) == ("x", "")
    call = decode({"tool": "", "name": "y"})
    assert isinstance(call, ToolCall) and call.tool == "" and call.args == {}
    assert call.session == "default" and call.call_id is None
    call = decode({"name": "y", "input": [1], "agent_id": "ag", "id": 3})
    assert isinstance(call, ToolCall) and (call.tool, call.args) == ("y", [1])
    assert (call.session, call.call_id) == ("ag", 3)
    result = {"type": "result", "sessionId": "s", "callId": "c", "result": 1}
    assert isinstance(decode(result), BadRecord)  # without the progress mode, as before
    assert isinstance(decode(result, 1, results=True), ToolResult)
    both = dict(result, resultDigest="a" * 64)
    assert isinstance(decode(both, 1, results=True), BadRecord)
