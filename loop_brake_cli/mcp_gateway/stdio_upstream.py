"""``mcp-gateway --upstream -- CMD ARGS``: a stdio MCP server served over Streamable HTTP.

The gateway forwards HTTP; a stdio server speaks lines to one client. So the
gateway starts this module as a child process on a private loopback port
(``python -m loop_brake_cli.mcp_gateway.stdio_upstream PORT -- CMD ARGS``, the
run's token in ``$LOOP_BRAKE_UPSTREAM_TOKEN``: a request without it is 403): an MCP
SDK ``Server`` whose handlers ask the stdio server, through one SDK ``Client``
(the stdio server is started once and shared by every agent; the SDK client
keeps their requests apart). The SDK serves both the 2026-07-28 protocol and
the initialize handshake, and the gateway's brake sits in front of it as in
front of any other upstream.

What crosses: tools (list, call, with progress), resources (list, templates,
read) and prompts (list, get). Requests the stdio server would send its client
(sampling, elicitation) are not relayed: give such a server its own
``mcp-proxy`` instead. The server's stderr is the gateway's.
"""

from __future__ import annotations

import hmac
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import uvicorn
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.server.lowlevel.server import Server

from .serve import TOKEN_HEADER, TOKEN_VARIABLE, _quiet_uvicorn

__all__ = ["build_server", "main"]


def build_server(command: list[str]) -> Server[Any]:
    """The SDK server that asks the stdio server started by ``command``."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=None)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        params.env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
        async with Client(params, mode="legacy") as client:
            yield {"client": client}

    def client_of(ctx: Any) -> Client:
        return ctx.lifespan_context["client"]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return await client_of(ctx).list_tools(cursor=getattr(params, "cursor", None))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(done, total, message)

        return await client_of(ctx).call_tool(
            params.name, params.arguments, progress_callback=progress
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return await client_of(ctx).list_resources(cursor=getattr(params, "cursor", None))

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return await client_of(ctx).list_resource_templates(cursor=getattr(params, "cursor", None))

    async def read_resource(ctx: Any, params: Any) -> types.ReadResourceResult:
        return await client_of(ctx).read_resource(params.uri)

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return await client_of(ctx).list_prompts(cursor=getattr(params, "cursor", None))

    async def get_prompt(ctx: Any, params: Any) -> types.GetPromptResult:
        return await client_of(ctx).get_prompt(params.name, params.arguments)

    return Server(
        "loop-brake-gateway-stdio",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _token_only(app: Any, token: str) -> Any:
    """``app`` for requests carrying the run's token (``TOKEN_HEADER``); 403 for any
    other, so the private port serves the gateway alone."""
    expected = token.encode()
    header = TOKEN_HEADER.encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(header, b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 403, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        await app(scope, receive, send)

    return guarded


def _stop_with_the_gateway() -> None:
    """Read stdin (a pipe from the gateway) to its end, then stop as SIGTERM stops us:
    the gateway has ended, however it ended."""
    try:
        while sys.stdin.buffer.read(1 << 16):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    """``PORT -- CMD ARGS``: serve the stdio server on 127.0.0.1:PORT/mcp until stopped."""
    port, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: stdio_upstream PORT -- CMD [ARGS...]\n")
        return 2
    token = os.environ.pop(TOKEN_VARIABLE, "")
    if not token:
        sys.stderr.write(f"stdio_upstream: {TOKEN_VARIABLE} is not set\n")
        return 2
    app = _token_only(build_server(command).streamable_http_app(host="127.0.0.1"), token)
    threading.Thread(target=_stop_with_the_gateway, daemon=True).start()
    _quiet_uvicorn()
    uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=int(port), log_config=None, access_log=False)
    ).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
