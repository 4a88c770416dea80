"""The cassette adapter: real VCR cassettes (responses only, SSE streams), canary, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    assert_canary_hidden,
    assert_never_raises,
    calls,
    json_shapes,
    parse_bytes,
    read,
    summary,
)
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord

P = "pydantic-ai__cassettes-"
QUESTION = "What is this repository about? What are its main features and purpose?"
REAL = {
    P + "test_openai__test_multiple_agent_tool_calls.yaml": [
        ("get_capital", {"country": "France"}, None),  # Gemini generateContent, no id
        ("get_capital", {"country": "England"}, "call_SkEQ3ZGSJC8m6AvaIGNuuKdm"),
    ],
    P + "test_openai__test_compatible_api_with_tool_calls_without_id.yaml": [
        ("get_current_time", {}, None),  # id "" is absent
    ],
    P + "test_openai__test_run_stream_sync_streams_real_model.yaml": [
        ("get_capital", {"country": "UK"}, "call_ZR5UUuTt3pf61kjwAJIYdVMj"),  # SSE fragments
    ],
    P + "test_openai_responses__test_openai_responses_model_simple_response_with_tool_call.yaml": [
        ("get_capital", {"country": "PotatoLand"}, "call_YfwRsW8sUxDKipwyhWTzOXCA"),
    ],
    P + "test_openai_responses__test_openai_responses_stream.yaml": [
        ("get_capital", {"country": "France"}, "call_kL0PCQV7M2WMoVX8V8OtYSAL"),
    ],
    P + "test_anthropic__test_multiple_parallel_tool_calls.yaml": [
        ("retrieve_entity_info", {"name": name}, ident)
        for name, ident in [
            ("Alice", "toolu_0167cfEnoQaPviGdVXA95zcu"),
            ("Bob", "toolu_01EEe2V5HD1Ac4rKiUR4HD2T"),
            ("Charlie", "toolu_01XFyAjstT3966qvRynZyVPo"),
            ("Daisy", "toolu_013mnQZbgtK2oe3Mo3XKJsx3"),
        ]
    ],
    P + "test_anthropic__test_anthropic_tool_with_thinking.yaml": [
        ("get_user_country", {}, "toolu_01YGzqpRE16Vricda3Aqcejo"),
    ],
    P + "test_tool_search__test_anthropic_native_tool_search_streaming.yaml": [
        (
            "tool_search_tool_bm25",
            {"query": "USD EUR exchange rate currency conversion"},
            "srvtoolu_01S5swZdBmTzLDVzwcT5LbHp",
        ),
        (
            "get_exchange_rate",
            {"from_currency": "USD", "to_currency": "EUR"},
            "toolu_01EFn5wTNBYA8Reni8rbmnHT",
        ),
    ],  # fmt: skip
    P + "test_anthropic__test_anthropic_mcp_servers_stream.yaml": [
        (
            "ask_question",
            {
                "repoName": "pydantic/pydantic-ai",
                "question": QUESTION,
            },
            "mcptoolu_01FZmJ5UspaX5BB9uU339UT1",
        ),
    ],  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_cassettes(name: str) -> None:
    path = FIXTURES / "cassette" / name
    fmt, records = read(path)
    assert fmt == "cassette"
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert [(c.tool, c.args, c.call_id) for c in calls(records)] == REAL[name]
    assert {c.session for c in calls(records)} == {str(path)}
    assert all(c.path.startswith("$.interactions[") for c in calls(records))
    assert all(".request" not in c.path for c in calls(records))  # requests repeat history


@pytest.mark.parametrize("name", sorted(REAL))
def test_shared_copies(shared_samples: Path, name: str) -> None:
    folder = "anthropic-messages" if "anthropic" in name else "openai-chat"
    fmt, records = read(shared_samples / folder / name)
    assert (fmt, len(calls(records))) == ("cassette", len(REAL[name]))


def test_stream_locations() -> None:
    _, records = read(
        FIXTURES / "cassette" / (P + "test_openai_responses__test_openai_responses_stream.yaml")
    )
    (call,) = calls(records)
    assert call.path == "$.interactions[0].response.body.string#9"  # response.output_item.done


def test_edge_cases() -> None:
    fmt, records = read(FIXTURES / "cassette/synthetic--edge-cases.yaml")
    assert fmt == "cassette"
    base = "$.interactions[{}].response."
    sse = base + "body.string#"
    assert summary(records) == [
        # chat SSE: two parallel calls joined from fragments; the request's history is not read
        ("get_weather", {"city": "Paris"}, "call_p1", None, sse.format(0) + "2", False),
        ("get_time", {}, "call_p2", None, base.format(0) + "body.string#0", False),
        # interaction 1 is an error response
        ("list_files", {}, "toolu_s1", None, base.format(2) + "body.string#1", False),
        ("search", '{"q": "unterm', "toolu_s2", None, base.format(2) + "body.string#4", True),
        ("get_capital", {"country": "France"}, "call_r1", None,
         base.format(3) + "body.string.output[0]", False),
        # an unquoted YAML date stays the string the JSON had
        ("book", {"date": "2024-01-01", "seats": 2}, "fc-gem-1", None,
         base.format(4) + "parsed_body.candidates[0].content.parts[0].functionCall", False),
        # interaction 5 records the same response again: the same call, once
        ("BAD", None, base.format(6) + "body.string"),
        ("BAD", None, "$.interactions[7]"),
    ]  # fmt: skip


def test_not_yaml_is_one_located_error() -> None:
    records = parse_bytes("cassette", b"interactions:\n- request: {\n  response: [\n")
    assert len(records) == 1 and isinstance(records[0], BadRecord)
    assert records[0].line is not None
    assert parse_bytes("cassette", b"version: 1\n") == [
        BadRecord("no interactions list at the top level")
    ]


def _chat_response(call_id: str, arguments: str) -> dict:
    function = {"name": "t", "arguments": arguments}
    return {"choices": [{"message": {"tool_calls": [{"id": call_id, "function": function}]}}]}


def test_canary_never_printed(tmp_path: Path) -> None:
    import yaml

    secret = json.dumps({"k": CANARY})
    interactions = [
        {"request": {"parsed_body": {"messages": [{"content": CANARY}]}},
         "response": {"parsed_body": _chat_response(f"c{n}", secret)}}
        for n in range(3)
    ]  # fmt: skip
    interactions += [
        {"response": {"parsed_body": _chat_response("c9", CANARY + "{")}},
        {"response": {"body": {"string": '{"choices": [' + CANARY}}},
        {"response": {"body": {"string": "data: {" + CANARY + "\n"}}},
    ]
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions}))
    assert_canary_hidden("cassette", path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("interactions:\n- request: {}\n  response: {" + CANARY + "\n")
    result = run_cli("filter", "--format", "cassette", str(broken))
    assert CANARY not in (result.stdout + result.stderr).decode()


YAML_KEYS = st.sampled_from(
    ["interactions", "request", "response", "parsed_body", "body", "string", "choices", "message",
     "tool_calls", "function", "name", "arguments", "output", "content", "candidates", "parts",
     "functionCall", "args", "type", "id", "delta", "index"]
)  # fmt: skip
VALUES = json_shapes(
    YAML_KEYS,
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=6)
    | st.sampled_from(["data: {}\n", "data: [DONE]\n", "tool_use", "function_call", "{"]),
)


SSE_KEYS = st.sampled_from(
    ["type", "index", "choices", "delta", "tool_calls", "function", "name", "arguments", "id",
     "content_block", "partial_json", "item", "response", "output", "candidates"]
)  # fmt: skip
SSE_WORDS = st.sampled_from(
    ["content_block_start", "content_block_delta", "content_block_stop", "tool_use",
     "response.output_item.done", "response.completed", "function_call", "{", '{"a":']
)  # fmt: skip
SSE_VALUES = json_shapes(
    SSE_KEYS,
    st.none() | st.integers(0, 2) | st.text(max_size=4) | SSE_WORDS,
    list_size=3,
    max_leaves=25,
)


def _cassette_of_stream(events: list) -> bytes:
    import yaml

    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    return yaml.safe_dump({"interactions": [{"response": {"body": {"string": text}}}]}).encode()


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=600)
    | VALUES.map(lambda v: ("interactions:\n" + json.dumps([v])).encode())
    | VALUES.map(lambda v: json.dumps({"interactions": [{"response": v}]}).encode())
    | st.lists(SSE_VALUES, max_size=6).map(_cassette_of_stream)
)
def test_never_raises(data: bytes) -> None:
    assert_never_raises("cassette", data)


def test_gzip_binary_body() -> None:
    import gzip

    import yaml

    body = _chat_response("c1", "{}")
    packed = gzip.compress(json.dumps(body).encode())
    doc = {"interactions": [{"request": {}, "response": {"body": {"string": packed}}}]}
    (call,) = parse_bytes("cassette", yaml.safe_dump(doc).encode())
    assert (call.tool, call.call_id) == ("t", "c1")


def test_stream_index_of_any_type() -> None:
    """An ``index`` that is a list or an object (hostile input) keys nothing and raises nothing."""
    events = [
        {"choices": [{"index": [1], "delta": {"tool_calls": [
            {"index": {"a": 1}, "id": "c", "function": {"name": "t", "arguments": "{}"}}]}}]},
        {"type": "content_block_start", "index": [2],
         "content_block": {"type": "tool_use", "name": "u", "id": "x", "input": {}}},
    ]  # fmt: skip
    records = parse_bytes("cassette", _cassette_of_stream(events))
    assert sorted(r.tool for r in records) == ["t", "u"]
