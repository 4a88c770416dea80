"""The openai-chat and openai-responses adapters: real samples, edge cases, canary, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    assert_canary_hidden,
    assert_never_raises,
    bytes_or_json,
    calls,
    calls_and_errors,
    json_shapes,
    longest_streak,
    parse_bytes,
    read,
    summary,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord, ToolCall
from loop_brake_cli.formats import get

# -- real samples ---------------------------------------------------------------

REAL_FIXTURES = {
    "openai-chat/DERIVED__pydantic-ai__test_compatible_api_with_tool_calls_without_id"
    "__chat_messages.json": ("openai-chat", ["get_current_time"]),
    "openai-chat/DERIVED__pydantic-ai__test_multiple_agent_tool_calls__chat_messages.json": (
        "openai-chat",
        ["get_capital", "get_capital"],
    ),
    "openai-responses/DERIVED__pydantic-ai__test_openai_responses_model_simple_response"
    "_with_tool_call__responses_input.json": ("openai-responses", ["get_capital"]),
}


@pytest.mark.parametrize("name", sorted(REAL_FIXTURES))
def test_real_fixture_detected_and_counted(name: str) -> None:
    fmt, tools = REAL_FIXTURES[name]
    detected, records = read(FIXTURES / name)
    assert detected == fmt
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert [c.tool for c in calls(records)] == tools
    assert {c.session for c in calls(records)} == {str(FIXTURES / name)}


def test_real_chat_ids_and_arguments() -> None:
    _, records = read(
        FIXTURES / "openai-chat/DERIVED__pydantic-ai__test_multiple_agent_tool_calls"
        "__chat_messages.json"
    )
    first, second = calls(records)
    assert (first.args, first.call_id, first.path) == (
        {"country": "France"},
        "pyd_ai_504f8147f83f44f3a5f14d87bfd01bda",
        "$.messages[1].tool_calls[0]",
    )
    assert (second.args, second.call_id) == (
        {"country": "England"},
        "call_SkEQ3ZGSJC8m6AvaIGNuuKdm",
    )


def test_responses_call_id_not_item_id() -> None:
    _, records = read(
        FIXTURES / "openai-responses/DERIVED__pydantic-ai__test_openai_responses_model_simple"
        "_response_with_tool_call__responses_input.json"
    )
    (call,) = calls(records)
    assert call.call_id == "call_YfwRsW8sUxDKipwyhWTzOXCA"
    assert call.path == "$.input[1]"
    assert call.args == {"country": "PotatoLand"}


SHARED_CHAT = {
    "openai-chat/DERIVED__pydantic-ai__test_compatible_api_with_tool_calls_without_id"
    "__chat_messages.json": ("openai-chat", 1, 1),
    "openai-chat/DERIVED__pydantic-ai__test_multiple_agent_tool_calls__chat_messages.json": (
        "openai-chat",
        2,
        1,
    ),
    "openai-chat/DERIVED__pydantic-ai__test_openai_responses_model_simple_response_with"
    "_tool_call__responses_input.json": ("openai-responses", 1, 1),
    "trajectories/openhands/DERIVED__gsmoon97-swe-agent-eval__django__django-16667"
    "__chat_messages_only.json": ("openai-chat", 50, 30),
}


@pytest.mark.parametrize("name", sorted(SHARED_CHAT))
def test_shared_samples(shared_samples: Path, name: str) -> None:
    """SOURCES.md's counts: format detected, calls, longest identical streak."""
    fmt, count, streak = SHARED_CHAT[name]
    detected, records = read(shared_samples / name)
    assert detected == fmt
    assert len(calls(records)) == count
    assert longest_streak(records)[0] == streak


def test_derived_stuck_loop_as_chat(shared_samples: Path) -> None:
    path = (
        shared_samples / "trajectories/openhands/DERIVED__gsmoon97-swe-agent-eval__django__"
        "django-16667__chat_messages_only.json"
    )
    _, records = read(path)
    assert longest_streak(records) == (30, 28)
    assert {c.tool for c in calls(records)[-30:]} == {"str_replace_editor"}


# -- synthetic edge cases -----------------------------------------------------------


def test_chat_edge_cases() -> None:
    path = FIXTURES / "openai-chat/synthetic--edge-cases.jsonl"
    fmt, records = read(path)
    assert fmt == "openai-chat"
    assert summary(records) == [
        ("get_weather", {"city": "Paris"}, "call_a", 2, "$.tool_calls[0]", False),
        # line 4 repeats line 2's call (same id, name, arguments): emitted once
        ("get_time", {}, None, 5, "$.tool_calls[0]", False),  # "" arguments, "" id
        ("get_time", {}, "call_b", 5, "$.tool_calls[1]", False),
        ("search", '{"q": "unterminated', "call_c", 6, "$.tool_calls[0]", True),
        ("get_weather", {"city": "Lyon"}, None, 7, "$.tool_calls[0]", False),  # reused id
        ("BAD", 8, None),
        ("BAD", 9, "$.tool_calls[0]"),
        ("apply_patch", "*** Begin Patch", "call_e", 10, "$.tool_calls[0]", False),
    ]
    assert longest_streak(records)[0] == 2  # the two get_time {} calls


def test_responses_edge_cases() -> None:
    path = FIXTURES / "openai-responses/synthetic--edge-cases.jsonl"
    fmt, records = read(path)
    assert fmt == "openai-responses"
    summary = [
        (r.tool, r.call_id, r.line, r.path, r.args_unparsed)
        if isinstance(r, ToolCall)
        else ("BAD", r.line, r.path)
        for r in calls_and_errors(records)
    ]
    assert summary == [
        ("get_capital", "call_1", 2, "$.output[0]", False),
        # line 3 (the next request's input) repeats call_1; line 4 (…added) is not a call
        ("get_time", "call_2", 5, "$.item", False),
        # line 6 (response.completed) repeats call_2
        ("search", "call_3", 7, "$.output[0]", True),
        ("BAD", 8, "$.output[0]"),
        ("BAD", 9, None),
    ]


def test_chat_forms_array_object_and_response() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "function": {"name": "t", "arguments": '{"a":1}'}}],
    }
    for doc, path in (
        ([message], "$[0].tool_calls[0]"),
        ({"messages": [message]}, "$.messages[0].tool_calls[0]"),
        ({"choices": [{"message": message}]}, "$.choices[0].message.tool_calls[0]"),
        (
            {"messages": [], "response": {"choices": [{"message": message}]}},
            "$.response.choices[0].message.tool_calls[0]",
        ),
    ):
        data = json.dumps(doc, indent=2).encode()
        assert get("openai-chat").sniff(data)
        (call,) = parse_bytes("openai-chat", data)
        assert (call.tool, call.args, call.path) == ("t", {"a": 1}, path)


def test_other_formats_are_not_taken_for_chat() -> None:
    anthropic = b'[{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]'
    claude = b'{"parentUuid":null,"isSidechain":false,"message":{"role":"assistant"}}\n'
    codex = b'{"type":"response_item","payload":{"type":"function_call","name":"x"}}\n'
    for head in (anthropic, claude, codex, b"not json", b""):
        assert not get("openai-chat").sniff(head)
        assert not get("openai-responses").sniff(head)


def test_invalid_document_is_located() -> None:
    (bad,) = parse_bytes("openai-chat", b'{\n  "messages": [\n    {"role": }\n  ]\n}\n')
    assert isinstance(bad, BadRecord)
    assert bad.line == 3


# -- canary and fuzz --------------------------------------------------------------


def _canary_files(tmp_path: Path) -> dict[str, Path]:
    secret_args = json.dumps({"token": CANARY})
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {"role": "user", "content": CANARY},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "t", "arguments": secret_args}},
                        {"id": "c2", "function": {"name": "t", "arguments": secret_args}},
                        {"id": "c3", "function": {"name": "t", "arguments": secret_args}},
                        {"id": "c4", "function": {"name": "t", "arguments": CANARY + "{"}},
                        {"id": "c5", "function": {"name": 7, "arguments": secret_args}},
                    ],
                },
            ]
        )
        + '\n{"role": "assistant", "'
        + CANARY
        + "\n"
    )
    responses = tmp_path / "responses.json"
    item = {"type": "function_call", "call_id": "c", "name": "t", "arguments": secret_args}
    responses.write_text(
        json.dumps(
            {
                "input": [item, dict(item, call_id="d"), dict(item, call_id="e")],
                "output": [dict(item, arguments=CANARY), {"type": "function_call", "x": CANARY}],
            }
        )
    )
    return {"openai-chat": chat, "openai-responses": responses}


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
def test_canary_never_printed(tmp_path: Path, fmt: str) -> None:
    assert_canary_hidden(fmt, _canary_files(tmp_path)[fmt])


JSON_KEYS = st.sampled_from(
    ["role", "tool_calls", "function", "name", "arguments", "id", "messages", "choices",
     "message", "type", "call_id", "input", "output", "item", "response", "custom",
     "function_call", "object"]
)  # fmt: skip
JSON_VALUES = json_shapes(
    JSON_KEYS,
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(["assistant", "function_call", "custom", "", "{}", "{", "response"])
    | st.text(max_size=5),
)


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
@settings(max_examples=150, deadline=None)
@given(data=bytes_or_json(JSON_VALUES))
def test_never_raises(fmt: str, data: bytes) -> None:
    assert_never_raises(fmt, data)
