"""``mcp-gateway --upstream -- CMD ARGS``: a stdio MCP server served over Streamable HTTP.

The gateway forwards HTTP; a stdio server speaks lines to one client. So the
gateway starts this module as a child process on a private loopback port
(``python -m loop_brake_cli.mcp_gateway.stdio_upstream PORT -- CMD ARGS``): an MCP
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

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import uvicorn
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.server.lowlevel.server import Server

from .serve import _quiet_uvicorn

__all__ = ["build_server", "main"]


def build_server(command: list[str]) -> Server[Any]:
    """The SDK server that asks the stdio server started by ``command``."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=None)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        import os

        params.env = dict(os.environ)
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


def main(argv: list[str]) -> int:
    """``PORT -- CMD ARGS``: serve the stdio server on 127.0.0.1:PORT/mcp until stopped."""
    port, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: stdio_upstream PORT -- CMD [ARGS...]\n")
        return 2
    app = build_server(command).streamable_http_app(host="127.0.0.1")
    _quiet_uvicorn()
    uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=int(port), log_config=None, access_log=False)
    ).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
