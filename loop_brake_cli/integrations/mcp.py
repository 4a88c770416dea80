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
result's ``_meta`` under ``"loop-brake/denial"``. MCP has no way for a server to
end a client's run, so a policy's stop is a denial carrying the stop message.

The session is the MCP session: the transport's session id (``Mcp-Session-Id``
over Streamable HTTP) when there is one, else the client's stream: a stdio
server's one client in either protocol (the 2026-07-28 one makes a connection
per request, all on the one stream), one SSE connection, an in-memory handshake
client; else one request, in the stateless modes (the in-process 2026-07-28
single-exchange protocol, the SDK's default ``Client(server)``, and stateless
HTTP). A stateless request therefore never shares a streak with
another request, and so is never denied: the server cannot tell two clients
apart, and a shared streak would let one client's calls deny another's (and tell
it what the other called). To brake stateless clients, pass ``session_key=`` (a
function of the middleware's ``ServerRequestContext`` returning a str, or None
for the default), keyed on something that is one client's own:
``principal_session_key`` keys each authenticated principal (the SDK's bearer
auth) and leaves unauthenticated requests to the default.

A call a policy's ``warn_at`` warns runs, and its result reaches the client with
one more text block at the end of ``content``: the warning (as ``mcp-proxy``
adds it).

Each call's result feeds the policy's progress mode. The brake is bounded
(``integrations._session``); a connection's streak is forgotten with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..core.brake import LoopBrake
from ._denial import META_KEY, denial_fields
from ._session import BrakeOptions, SessionBrake, fresh_call_id, to_json

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeMiddleware", "attach", "dispose", "principal_session_key", "with_warning"]


def principal_session_key(ctx: Any) -> str | None:
    """The authenticated principal of the request (the SDK's bearer-token auth: its
    client id, and the token's issuer and subject when it names them), else None (the
    default session). For ``session_key=`` on a server whose stateless clients each
    authenticate as themselves: one streak per principal, never across principals."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    if token is None:
        return None
    issuer = (token.claims or {}).get("iss")
    return f"principal:{token.client_id}:{issuer or ''}:{token.subject or ''}"


def _result_json(result: Any) -> Any:
    """The tool result as the client gets it (wire names: ``isError``)."""
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return to_json(result)


def with_warning(result: Any, warning: str) -> Any:
    """A tool result (the wire dict the SDK's handler returns, or a ``CallToolResult``)
    with a text block holding ``warning`` added last to its content; anything else,
    or a result without a content list, as it is."""
    if isinstance(result, Mapping) and isinstance(result.get("content"), list):
        block = {"type": "text", "text": warning}
        return {**result, "content": [*result["content"], block]}
    content = getattr(result, "content", None)
    if isinstance(content, list) and hasattr(result, "model_copy"):
        from mcp.types import TextContent

        block = TextContent(type="text", text=warning)
        return result.model_copy(update={"content": [*content, block]})
    return result


class LoopBrakeMiddleware:
    """``ServerMiddleware``: brakes ``tools/call`` and passes everything else on."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="mcp", to_json=_result_json
        )
        self.brake = self.seam.brake

    def _default_key(self, ctx: Any) -> str:
        """The transport session id, else the client's stream, else the request alone.

        A duplex stream (stdio, one SSE connection) is one client in either protocol:
        the handshake era makes one ``Connection`` for it, the 2026-07-28 era a new
        ``Connection`` per request, all sharing the stream's one ``outbound`` channel,
        which therefore keys the client. Without a channel (stateless HTTP, the
        single-exchange entry) nothing lasts beyond the request."""
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        if connection is None:  # nothing lasts beyond this request
            return self.seam.scoped_key(ctx, "mcp-request")
        session_id = getattr(connection, "session_id", None)
        if session_id is not None:
            return str(session_id)
        if getattr(connection, "has_standalone_channel", False):
            return self.seam.scoped_key(connection.outbound, "mcp")  # the client's stream
        return self.seam.scoped_key(connection, "mcp-request")

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        params = ctx.params
        if ctx.method != "tools/call" or ctx.request_id is None or not isinstance(params, Mapping):
            return await call_next(ctx)
        name, args = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(args, (Mapping, type(None))):
            return await call_next(ctx)  # malformed: the SDK's own validation answers
        # The request id is the client's choice (and repeats across connections): a
        # fresh call id pairs the result with this call and never merges two calls.
        verdict = self.seam.judge(self.seam.session(ctx), name, args, fresh_call_id())
        if not verdict.denied:
            result = await call_next(ctx)
            self.seam.feed(verdict, result)
            return result if verdict.warning is None else with_warning(result, verdict.warning)
        from mcp.types import CallToolResult, TextContent

        return CallToolResult(
            content=[TextContent(type="text", text=verdict.message)],
            is_error=True,
            _meta={META_KEY: denial_fields(verdict)},
        )


def attach(
    server: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Brake every tool of ``server`` (``MCPServer`` or ``Server``); returns the brake.

    The middleware is appended to ``server.middleware``, innermost of the user's
    middleware, so one added earlier sees the call before the brake does."""
    middleware = LoopBrakeMiddleware(brake, **options)
    server.middleware.append(middleware)
    return middleware.brake


def dispose(server: Any) -> None:
    """Remove every brake ``attach`` added to ``server`` and forget its streaks."""
    for middleware in [m for m in server.middleware if isinstance(m, LoopBrakeMiddleware)]:
        server.middleware.remove(middleware)
        middleware.brake.reset()
