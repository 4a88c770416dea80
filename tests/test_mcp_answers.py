"""mcp_shared.answers: the JSON-RPC answers the MCP front-ends write, from docs/mcp-proxy.md.

A denial is a tool error carrying the client's id bytes, and says ``resultType:
complete`` only to a request in the 2026-07-28 envelope (its ``_meta`` protocol
version key, not any ``_meta``); a warning is one more text block at the end of
``result.content``, whatever that array holds, the server's other bytes kept; a
line that is not strict JSON is answered -32700 with a null id.
"""

from __future__ import annotations

import json

import pytest

from loop_brake_cli.mcp_shared.answers import (
    MODERN_META_KEY,
    PARSE_ERROR,
    append_warning,
    denial_answer,
    is_modern,
    parse_error,
)


def test_a_denial_is_a_tool_error_with_the_ids_own_bytes() -> None:
    line = denial_answer(b"12345678901234567891", "denied")
    assert line.startswith(b'{"jsonrpc":"2.0","id":12345678901234567891,')
    assert json.loads(line)["result"] == {
        "content": [{"type": "text", "text": "denied"}],
        "isError": True,
    }
    modern = json.loads(denial_answer(b'"a"', "denied", modern=True))
    assert modern["id"] == "a" and modern["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    "meta, modern",
    [
        ({MODERN_META_KEY: "2026-07-28"}, True),
        ({"progressToken": 1}, False),
        ({}, False),
        (None, False),
    ],
)
def test_only_the_protocol_version_key_makes_a_request_modern(meta: object, modern: bool) -> None:
    params: dict[str, object] = {"name": "echo", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    assert (
        is_modern({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}) is modern
    )


@pytest.mark.parametrize(
    "content, blocks",
    [
        (b"[]", 1),
        (b'[ {"type": "text", "text": "done"} ]', 2),
        (b'[{"type":"text","text":"a"},{"type":"text","text":"b"}]', 3),
    ],
)
def test_a_warning_is_the_last_block_of_the_results_content(content: bytes, blocks: int) -> None:
    data = b'{"jsonrpc":"2.0","id":7,"result":{"content":' + content + b',"isError":false}}'
    warned = append_warning(data, "warned: 2 of 3")
    parsed = json.loads(warned)
    assert len(parsed["result"]["content"]) == blocks
    assert parsed["result"]["content"][-1] == {"type": "text", "text": "warned: 2 of 3"}
    assert parsed["result"]["isError"] is False and parsed["id"] == 7


def test_no_content_array_leaves_the_response_as_it_was() -> None:
    for data in (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":"text"}}',
        b'{"jsonrpc":"2.0","id":7,"result":{}}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}',
    ):
        assert append_warning(data, "w") == data


def test_a_line_that_is_not_strict_json_is_a_parse_error() -> None:
    answer = json.loads(parse_error("loop-brake mcp-proxy", "column 6"))
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR == -32700
