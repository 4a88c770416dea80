"""The otel adapter on OTLP/JSON fixtures written from the specification.

No real OTLP/JSON export with execute_tool spans was found (FORMATS.md, "Not
found"); tests/fixtures/otel/README.md says how these were written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import (
    assert_never_raises,
    check_errors_hide,
    judge_all,
    mutated,
    parse_bytes,
    read,
)
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.records import BadRecord, ToolCall
from loop_brake_cli.formats import otel
from loop_brake_cli.readers.pipeline import judge

FIXTURES = ROOT / "tests" / "fixtures" / "otel"
TREE = FIXTURES / "synthetic--conversation-tree.json"
JSONL = FIXTURES / "synthetic--file-exporter.jsonl"
SAMPLE = ROOT / "samples" / "formats" / "otel.json"
CANARY = "CANARY-1b2c3d-do-not-print"
TRACE_2 = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


def spans_doc(*spans: dict) -> dict:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def tool_span(span_id: str, args: dict | None, **extra: object) -> dict:
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}},
    ]
    if args is not None:
        attributes.append({"key": "gen_ai.tool.call.arguments", "value": args})
    return {"traceId": "ab" * 16, "spanId": span_id, "attributes": attributes, **extra}


def test_conversation_tree() -> None:
    fmt, records = read(TREE)
    assert fmt == "otel"
    got = []
    for record, verdict in judge(records, LoopBrake(3)):
        where = record.path.replace("$.resourceSpans", "R").replace(".scopeSpans[0].spans", "")
        if verdict is None:
            got.append(("bad", where))
        else:
            got.append((where, record.tool, record.session, record.call_id, verdict.count))
    assert got == [
        # ordered by startTimeUnixNano, not by where the exporter put them
        ("R[1][4]", "get_time", "conv_2", "call_8", 1),  # conversation id on the span itself
        ("R[0][2]", "get_weather", "conv_1", "call_1", 1),  # from the invoke_agent parent
        ("R[0][1]", "get_weather", "conv_1", "call_2", 2),  # kvlistValue == the JSON string
        ("R[0][0]", "get_weather", "conv_1", "call_3", 3),
        ("R[0][3]", "lookup", "conv_1", "call_4", 1),  # through two levels of ancestors
        ("R[1][0]", "search", TRACE_2, "call_5", 1),  # no conversation: the trace id
        ("bad", "R[1][1]"),  # arguments not recorded (opt-in)
        ("bad", "R[1][2]"),  # no tool name
        # R[1][5] is R[0][2] exported twice
    ]


def test_structured_arguments_decode_to_plain_json() -> None:
    _, records = read(TREE)
    lookup = next(r for r in records if isinstance(r, ToolCall) and r.tool == "lookup")
    assert lookup.args == {"id": 42, "tags": ["a", True, 1.5]}
    search = next(r for r in records if isinstance(r, ToolCall) and r.tool == "search")
    assert search.args_unparsed and isinstance(search.args, str)


def test_file_exporter_json_lines() -> None:
    fmt, records = read(JSONL)
    assert fmt == "otel"
    assert isinstance(records[0], BadRecord) and records[0].line == 4
    calls = records[1:]
    assert [(r.line, r.call_id, r.session) for r in calls] == [
        (3, "call_a", "conv_J"),  # started first, though written after
        (1, "call_b", "conv_J"),  # its parent is on line 2
    ]
    assert calls[0].path == "$.resourceSpans[0].scopeSpans[0].spans[0]"
    assert call_hash(calls[0].tool, calls[0].args) == call_hash(calls[1].tool, calls[1].args)


def test_snake_case_and_legacy_scope_names() -> None:
    span = tool_span("01" * 8, {"stringValue": '{"a":1}'})
    span["start_time_unix_nano"] = 5
    doc = {"resource_spans": [{"instrumentationLibrarySpans": [{"spans": [span]}]}]}
    (record,) = parse_bytes("otel", json.dumps(doc).encode())
    assert record.args == {"a": 1}
    assert record.path == "$.resourceSpans[0].instrumentationLibrarySpans[0].spans[0]"


def test_a_broken_document_is_one_located_error() -> None:
    text = TREE.read_text().splitlines()
    text[40] = text[40] + ","  # a trailing comma on line 41
    records = parse_bytes("otel", "\n".join(text).encode())
    assert len(records) == 1 and isinstance(records[0], BadRecord)
    assert records[0].line is not None and 40 <= records[0].line <= 43


def test_other_signals_in_the_same_file_are_skipped() -> None:
    lines = [
        json.dumps({"resourceLogs": [{"scopeLogs": []}]}),
        json.dumps(spans_doc(tool_span("07" * 8, {"stringValue": "{}"}))),
        json.dumps({"resourceMetrics": []}),
        json.dumps({"something": "else"}),
    ]
    assert otel.sniff("\n".join(lines).encode())
    records = parse_bytes("otel", "\n".join(lines).encode())
    assert [type(r).__name__ for r in records] == ["BadRecord", "ToolCall"]
    assert records[0].line == 4 and records[1].line == 2


def test_tool_name_from_the_span_name_when_the_attribute_is_absent() -> None:
    span = tool_span("08" * 8, {"stringValue": "{}"}, name="execute_tool get_weather")
    span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.tool.name"]
    nameless = tool_span("09" * 8, {"stringValue": "{}"}, name="execute_tool")
    nameless["attributes"] = span["attributes"]
    records = parse_bytes("otel", json.dumps(spans_doc(span, nameless)).encode())
    assert isinstance(records[0], ToolCall) and records[0].tool == "get_weather"
    assert isinstance(records[1], BadRecord)


def test_older_pydantic_ai_running_tool_spans() -> None:
    legacy = {
        "traceId": "cd" * 16,
        "spanId": "0a" * 8,
        "name": "running tool",
        "startTimeUnixNano": "1",
        "attributes": [
            {"key": "gen_ai.tool.name", "value": {"stringValue": "multiply"}},
            {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_x"}},
            {"key": "tool_arguments", "value": {"stringValue": '{"a": 15, "b": 7}'}},
        ],
    }
    chat = {**legacy, "spanId": "0b" * 8, "name": "chat gpt-4o"}  # not a tool span
    (record,) = parse_bytes("otel", json.dumps(spans_doc(legacy, chat)).encode())
    assert (record.tool, record.call_id, record.args) == ("multiply", "call_x", {"a": 15, "b": 7})


def test_empty_argument_values() -> None:
    doc = spans_doc(
        tool_span("01" * 8, {"stringValue": ""}, startTimeUnixNano="1"),
        tool_span("02" * 8, {}, startTimeUnixNano="2"),
    )
    records = parse_bytes("otel", json.dumps(doc).encode())
    assert [(r.args, r.args_unparsed) for r in records] == [({}, False), ({}, False)]


def test_filter_on_the_sample() -> None:
    result = run_cli("filter", "--format", "otel", str(SAMPLE))
    (verdict,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert verdict["toolName"] == "get_forecast" and verdict["sessionId"] == "conv_sample_1"
    assert verdict["path"] == "$.resourceSpans[0].scopeSpans[0].spans[0]"


def test_canary_never_in_errors() -> None:
    secret = {"stringValue": json.dumps({"k": CANARY})}
    doc = spans_doc(
        {
            "traceId": "ab" * 16,
            "spanId": "03" * 8,
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.call.arguments", "value": secret},
            ],
        },
        tool_span("04" * 8, None, name=CANARY),
        CANARY,
    )
    checked = [
        check_errors_hide("otel", data, CANARY)
        for data in (
            json.dumps(doc).encode(),
            b'{"resourceSpans":[' + CANARY.encode() + b"]}",
            (json.dumps(doc) + "\n" + '{"x":"' + CANARY).encode(),
        )
    ]
    assert checked[0][0] == 3
    assert all(out for _, out in checked)  # each error was reported, located


@pytest.mark.parametrize("path", [TREE, JSONL, SAMPLE], ids=lambda p: p.name)
def test_detect(path: Path) -> None:
    fmt, _ = read(path)
    assert fmt == "otel"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "stringValue",
                    "intValue",
                    "kvlistValue",
                    "arrayValue",
                    "values",
                    "key",
                    "value",
                    "x",
                ]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(_JSON, _JSON, _JSON, _JSON)
def test_fuzz_odd_spans_never_raise(args, ids, start, attributes) -> None:
    docs = [
        spans_doc(tool_span("05" * 8, args, parentSpanId=ids, startTimeUnixNano=start)),
        spans_doc({"spanId": ids, "traceId": start, "attributes": attributes}),
        {"resourceSpans": [{"scopeSpans": attributes}]},
        {"resourceSpans": [attributes]},
    ]
    data = "\n".join(json.dumps(doc) for doc in docs).encode()
    judge_all("otel", data)


@pytest.mark.parametrize("depth", [100, 240, 5000])
def test_deep_nesting_is_an_error_not_a_crash(depth: int) -> None:
    opening = '{"kvlistValue":{"values":[{"key":"k","value":'
    value = opening * depth + "{}" + "}]}}" * depth
    span = json.dumps(tool_span("06" * 8, {"stringValue": "{}"}))
    span = span.replace('{"stringValue": "{}"}', value)
    data = ('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}").encode()
    for record in parse_bytes("otel", data):
        assert isinstance(record, (ToolCall, BadRecord))


def test_type_fields_of_any_json_type_never_raise() -> None:
    rows = [
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": [],
                                    "spanId": {},
                                    "attributes": [
                                        {"key": [], "value": {"stringValue": []}},
                                        {
                                            "key": "gen_ai.operation.name",
                                            "value": {"stringValue": ["execute_tool"]},
                                        },
                                    ],
                                }
                            ]
                        }
                    ]
                }
            ]
        }
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert_never_raises("otel", data)


_TREE = json.loads(TREE.read_text())


@settings(max_examples=200, deadline=None)
@given(mutated([_TREE]))
def test_fuzz_mutated_documents_never_raise(document) -> None:
    judge_all("otel", json.dumps(document).encode())
