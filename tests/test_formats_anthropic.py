"""The anthropic adapter: real samples, edge cases, server-side blocks, canary, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

from adapter_helpers import (
    CANARY,
    FIXTURES,
    assert_canary_hidden,
    assert_never_raises,
    bytes_or_json,
    calls,
    json_shapes,
    longest_streak,
    parse_bytes,
    read,
    summary,
)
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.formats import detect, get


def test_real_parallel_tool_use() -> None:
    path = (
        FIXTURES
        / "anthropic/DERIVED__pydantic-ai__test_multiple_parallel_tool_calls__messages.json"
    )
    fmt, records = read(path)
    assert fmt == "anthropic"
    assert [(c.tool, c.args, c.path) for c in calls(records)] == [
        ("retrieve_entity_info", {"name": name}, f"$.messages[1].content[{index}]")
        for index, name in enumerate(["Alice", "Bob", "Charlie", "Daisy"], 1)
    ]
    assert calls(records)[0].call_id == "toolu_0167cfEnoQaPviGdVXA95zcu"
    assert {c.session for c in calls(records)} == {str(path)}
    assert longest_streak(records) == (1, 0)


def test_shared_sample(shared_samples: Path) -> None:
    name = (
        "anthropic-messages/DERIVED__pydantic-ai__test_multiple_parallel_tool_calls__messages.json"
    )
    fmt, records = read(shared_samples / name)
    assert (fmt, len(calls(records))) == ("anthropic", 4)


def test_edge_cases_and_server_side_blocks() -> None:
    fmt, records = read(FIXTURES / "anthropic/synthetic--edge-cases.json")
    assert fmt == "anthropic"
    assert summary(records) == [
        ("lookup", {"key": "a"}, "toolu_1", None, "$.messages[1].content[1]", False),
        ("lookup", {}, "toolu_2", None, "$.messages[1].content[2]", False),
        # messages[3] repeats toolu_1 exactly: the same call recorded twice, emitted once
        ("web_search", {"query": "loop"}, "srvtoolu_1", None, "$.messages[4].content[0]", False),
        ("ask_question", {"q": "x"}, "mcptoolu_1", None, "$.messages[4].content[2]", False),
        ("lookup", '{"key": "unterminated', "toolu_3", None, "$.messages[4].content[4]", True),
        ("BAD", None, "$.messages[4].content[5]"),
        ("BAD", None, "$.messages[5]"),
        ("BAD", None, "$.messages[6].content"),
    ]


def test_response_object_and_jsonl() -> None:
    block = {"type": "tool_use", "id": "toolu_9", "name": "t", "input": {"a": 1}}
    response = {
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": "tool_use",
    }
    lines = [
        response,
        dict(response, content=[dict(block, id="toolu_10")]),
        {"role": "user", "content": "hi"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode() + b"\n"
    assert get("anthropic").sniff(data)
    records = parse_bytes("anthropic", data)
    assert [(r.call_id, r.line, r.path) for r in records] == [
        ("toolu_9", 1, "$.content[0]"),
        ("toolu_10", 2, "$.content[0]"),
    ]


def test_claude_code_lines_are_not_taken() -> None:
    block = {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}
    line = {"parentUuid": None, "isSidechain": False, "type": "assistant", "sessionId": "s",
            "uuid": "u", "message": {"role": "assistant", "content": [block]}}  # fmt: skip
    head = json.dumps(line).encode() + b"\n"
    assert not get("anthropic").sniff(head)
    assert detect(head, "x").INFO.name == "claude-code"


def test_canary_never_printed(tmp_path: Path) -> None:
    block = {"type": "tool_use", "name": "t", "input": {"token": CANARY}}
    content = [dict(block, id=f"toolu_{n}") for n in range(3)]
    content += [
        dict(block, id="toolu_x", input=CANARY + "{"),
        {"type": "tool_use", "name": 5, "input": CANARY},
    ]
    path = tmp_path / "messages.json"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": CANARY},
                    {"role": "assistant", "content": content},
                    CANARY,
                ]
            }
        )
    )
    assert_canary_hidden("anthropic", path)
    broken = tmp_path / "broken.json"
    broken.write_text('{"messages": [{"role": "assistant", "content": "' + CANARY)
    result = run_cli("filter", "--format", "anthropic", str(broken))
    assert CANARY not in (result.stdout + result.stderr).decode()


JSON_KEYS = st.sampled_from(
    ["role", "content", "type", "id", "name", "input", "messages", "stop_reason", "tool_use_id"]
)
LEAVES = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
WORDS = st.sampled_from(["assistant", "tool_use", "server_tool_use", "mcp_tool_use", "{", "{}"])
JSON_VALUES = json_shapes(JSON_KEYS, LEAVES | WORDS)


@settings(max_examples=200, deadline=None)
@given(data=bytes_or_json(JSON_VALUES))
def test_never_raises(data: bytes) -> None:
    assert_never_raises("anthropic", data)
