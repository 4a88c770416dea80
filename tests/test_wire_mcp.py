"""The MCP decoder's connection and pairing rules (wire/mcp.py's docstring), message by
message: which request starts a connection, which is a call, and which response is
the result of which call. Recorded logs and the live proxy both decode through it."""

from __future__ import annotations

from loop_brake_cli.core.records import ToolCall, ToolResult
from loop_brake_cli.readers.wire.mcp import MAX_PENDING, Connections


def _call(call_id: object) -> dict:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": "t"}}


def _response(call_id: object, **member: object) -> dict:
    return {"jsonrpc": "2.0", "id": call_id, **(member or {"result": {"content": []}})}


def test_only_an_initialize_request_with_an_id_starts_a_connection() -> None:
    wire = Connections()
    assert wire.client_message({"jsonrpc": "2.0", "id": 0, "method": "initialize"}) is None
    assert wire.session() == "mcp#1"  # a log that opens with initialize stays on 1
    call = wire.client_message(_call(1))
    assert isinstance(call, ToolCall) and call.session == "mcp#1"
    assert wire.client_message({"jsonrpc": "2.0", "method": "initialize"}) is None
    assert wire.session() == "mcp#1"  # a notification: no new connection
    wire.client_message({"jsonrpc": "2.0", "id": 5, "method": "initialize"})
    assert wire.session() == "mcp#2"
    assert wire.session("other") == "other#1"


def test_a_tools_call_without_an_id_is_a_notification() -> None:
    wire = Connections()
    notification = _call(None)
    del notification["id"]
    assert wire.client_message(notification) is None
    call = wire.client_message(_call(None))  # "id": null is a request without an id
    assert isinstance(call, ToolCall) and call.call_id is None


def test_a_response_is_the_result_of_its_pending_call_once() -> None:
    wire = Connections()
    wire.client_message(_call(1))
    assert wire.server_message(_response("1")) is None  # "1" is not 1
    result = wire.server_message(_response(1))
    assert isinstance(result, ToolResult) and result.call_id == 1
    assert result.result == {"content": []} and result.session == "mcp#1"
    assert wire.server_message(_response(1)) is None  # answered already
    wire.client_message(_call("x"))
    error = wire.server_message(_response("x", error={"code": -32602, "message": "no"}))
    assert isinstance(error, ToolResult)
    assert error.result == {"error": {"code": -32602, "message": "no"}}


def test_at_most_max_pending_calls_wait_oldest_forgotten_first() -> None:
    assert MAX_PENDING == 4096
    wire = Connections()
    for call_id in range(MAX_PENDING):
        wire.client_message(_call(call_id))
    assert isinstance(wire.server_message(_response(0)), ToolResult)  # exactly 4,096: kept
    wire.client_message(_call(0))
    wire.client_message(_call(MAX_PENDING))  # one more: the oldest (1) goes
    assert wire.server_message(_response(1)) is None
    assert isinstance(wire.server_message(_response(2)), ToolResult)
    assert isinstance(wire.server_message(_response(0)), ToolResult)
