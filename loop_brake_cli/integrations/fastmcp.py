"""The brake in a FastMCP server: FastMCP middleware on every ``tools/call``.

Needs ``pip install 'loop-brake-cli[fastmcp]'`` (the standalone ``fastmcp`` package,
4.x; the MCP SDK's own ``MCPServer`` is ``integrations.mcp``)::

    from fastmcp import FastMCP
    from loop_brake_cli.integrations.fastmcp import attach

    server = FastMCP("tools")
    brake = attach(server, max_repeats=3)   # every tool, mounted servers' too

``on_call_tool`` sees each call before FastMCP looks the tool up, so every tool of
the server is braked, whenever it was added. A denied call's tool never runs: the
client gets a tool result with ``isError`` and the core's denial text (never the
arguments), as FastMCP reports a failing tool, with the denial as data (``code``,
``count``, ``maxRepeats``, ``hashPrefix``) in the result's ``_meta`` under
``"loop-brake/denial"``. MCP has no way for a server to end a client's run, so a
policy's stop is a denial carrying the stop message. The result of a call that
ran feeds the policy's progress mode; a call a policy's ``warn_at`` warns gets
the warning as a last text block of its content (``integrations.mcp.with_warning``).

The session is the MCP client: its connection (a stdio or in-memory client, or a
Streamable HTTP session, ``Mcp-Session-Id``), its streak forgotten with it. The
stateless 2026-07-28 protocol (FastMCP's default ``Client``) has no connection
beyond one request: over stdio the server process has exactly one client, whose
requests share ``"fastmcp:stdio"``; over HTTP, or in memory, each request is a
session of its own and so is never denied, since the server cannot tell two
stateless clients apart and a shared streak would let one client's calls deny
another's. To brake those, pass ``session_key=``
(a function of FastMCP's ``MiddlewareContext``, returning a str or None for the
default) keyed on something that is one client's own, such as an authenticated
principal. ``dispose(server)`` removes the brake and forgets its streaks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..core.brake import LoopBrake
from ._denial import META_KEY, denial_fields
from ._session import BrakeOptions, SessionBrake, fresh_call_id
from .mcp import with_warning

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeMiddleware", "attach", "dispose"]

STDIO_SESSION = "fastmcp:stdio"
"""The session of every stateless request to a stdio server: its one client."""


class LoopBrakeMiddleware(Middleware):
    """FastMCP ``Middleware``: brakes ``tools/call`` and passes everything else on."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(brake, options, default_key=self._default_key, where="fastmcp")
        self.brake = self.seam.brake

    def _default_key(self, context: Any) -> str:
        """The client: its connection, the process's one client over stdio, else the
        request alone (stateless HTTP, where nothing tells two clients apart)."""
        ctx = context.fastmcp_context
        request = None if ctx is None else ctx.request_context
        if request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if ctx.transport == "stdio":
                return STDIO_SESSION  # a stdio server process serves exactly one client
            return self.seam.scoped_key(request, "fastmcp-request")
        # The SDK's ServerSession is new per request; its connection is the client's.
        connection = getattr(getattr(request, "session", None), "_connection", None)
        if connection is not None:
            return self.seam.scoped_key(connection, "fastmcp")
        return self.seam.scoped_key(context, "fastmcp-request")

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        params = context.message
        verdict = self.seam.judge(
            self.seam.session(context), params.name, params.arguments, fresh_call_id()
        )
        if verdict.denied:
            return ToolResult(
                content=verdict.message, is_error=True, meta={META_KEY: denial_fields(verdict)}
            )
        result = await call_next(context)
        self.seam.feed(verdict, result)
        return result if verdict.warning is None else with_warning(result, verdict.warning)


def attach(
    server: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Brake every tool of a ``FastMCP`` server; returns the brake. The middleware is
    added last, innermost of the user's middleware."""
    middleware = LoopBrakeMiddleware(brake, **options)
    server.add_middleware(middleware)
    return middleware.brake


def dispose(server: Any) -> None:
    """Remove every brake ``attach`` added to ``server`` and forget its streaks."""
    for middleware in [m for m in server.middleware if isinstance(m, LoopBrakeMiddleware)]:
        server.middleware.remove(middleware)
        middleware.brake.reset()
