"""The brake in an MCP Python SDK server: server middleware on ``tools/call``.

Needs ``pip install 'loop-brake-cli[mcp]'`` (the ``mcp`` package, 2.x)::

    from mcp.server.mcpserver import MCPServer
    from loop_brake_cli.integrations.mcp import attach

    server = MCPServer("tools")
    brake = attach(server, max_repeats=3)   # every tool, registered before or after

Every ``tools/call`` passes the middleware before the SDK looks the tool up, so
every tool of the server is braked, whenever it was added. A denied call's
body never runs: the client gets a tool result with ``isError`` and the core's
denial text (never the arguments), as the SDK reports a failing tool, and the
denial as data (``code``, ``count``, ``maxRepeats``, ``hashPrefix``) in the
result's ``_meta`` under ``"loop-brake/denial"``.

The session is the MCP session: the transport's session id (``Mcp-Session-Id``
over Streamable HTTP) when there is one, else the connection (one stdio or
in-memory client). A stateless request (the 2026-07-28 single-exchange
protocol builds a fresh connection per request and has no session) counts in
the server-wide session ``"mcp"``; pass ``session_key=`` (a function of the
middleware's ``ServerRequestContext``) to key such calls yourself.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..brake import LoopBrake
from ._denial import META_KEY, denial_fields, make_brake

__all__ = ["LoopBrakeMiddleware", "attach", "dispose", "mcp_session_key"]

STATELESS_SESSION = "mcp"

_numbers = itertools.count(1)
_connection_keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def mcp_session_key(ctx: Any) -> str:
    """The MCP session of a request: the transport session id, else the connection."""
    session = getattr(ctx, "session", None)
    connection = getattr(session, "_connection", None)  # ServerSession keeps it private
    if connection is None:
        return STATELESS_SESSION
    session_id = getattr(connection, "session_id", None)
    if session_id is not None:
        return str(session_id)
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if getattr(connection, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
        return STATELESS_SESSION  # a fresh connection per request: nothing to key on
    key = _connection_keys.get(connection)
    if key is None:
        key = _connection_keys[connection] = f"mcp#{next(_numbers)}"
    return key


class LoopBrakeMiddleware:
    """``ServerMiddleware``: brakes ``tools/call`` and passes everything else on."""

    def __init__(
        self,
        brake: LoopBrake | None = None,
        *,
        max_repeats: object = None,
        session_key: Callable[[Any], str] | None = None,
    ) -> None:
        self.brake = make_brake(brake, max_repeats)
        self.session_key = session_key or mcp_session_key

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        params = ctx.params
        if ctx.method != "tools/call" or ctx.request_id is None or not isinstance(params, Mapping):
            return await call_next(ctx)
        name, args = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(args, (Mapping, type(None))):
            return await call_next(ctx)  # malformed: the SDK's own validation answers
        verdict = self.brake.check(name, args, session_id=self.session_key(ctx))
        if not verdict.denied:
            return await call_next(ctx)
        from mcp.types import CallToolResult, TextContent

        return CallToolResult(
            content=[TextContent(type="text", text=verdict.message)],
            is_error=True,
            _meta={META_KEY: denial_fields(verdict)},
        )


def attach(
    server: Any,
    brake: LoopBrake | None = None,
    *,
    max_repeats: object = None,
    session_key: Callable[[Any], str] | None = None,
) -> LoopBrake:
    """Brake every tool of ``server`` (``MCPServer`` or ``Server``); returns the brake.

    The middleware is appended to ``server.middleware``, innermost of the user's
    middleware, so one added earlier sees the call before the brake does."""
    middleware = LoopBrakeMiddleware(brake, max_repeats=max_repeats, session_key=session_key)
    server.middleware.append(middleware)
    return middleware.brake


def dispose(server: Any) -> None:
    """Remove every brake ``attach`` added to ``server`` and forget its streaks."""
    for middleware in [m for m in server.middleware if isinstance(m, LoopBrakeMiddleware)]:
        server.middleware.remove(middleware)
        middleware.brake.reset()
