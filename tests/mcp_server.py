"""A small MCP server for the proxy's end-to-end tests, on the official SDK.

``echo(text)`` returns its text; ``add(a, b)`` returns the sum; ``count_to(n)``
sends n progress notifications and a log message (server-to-client traffic). Every call the
server receives is appended to the file named by ``$MCP_TEST_CALLS`` as one
JSON line ``{"tool", "length", "sha256"}``, so a test can prove which calls
reached the server (and that a large argument arrived intact) without the
file holding the arguments themselves. A line on stderr at start-up lets a
test see that the server's stderr passes through the proxy; ``$MCP_TEST_PID``
names a file to write the server's pid to, so a test can check it has exited.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("loop-brake-test-server")


def _record(tool: str, payload: str) -> None:
    path = os.environ.get("MCP_TEST_CALLS")
    if not path:
        return
    entry = {
        "tool": tool,
        "length": len(payload),
        "sha256": hashlib.sha256(payload.encode("utf-8")).hexdigest(),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    _record("echo", text)
    return text


@server.tool()
def add(a: int, b: int) -> str:
    """Return a + b."""
    _record("add", f"{a},{b}")
    return str(a + b)


@server.tool()
async def count_to(n: int, ctx: Context) -> str:
    """Send n progress notifications and a log message, then return "done"."""
    _record("count_to", str(n))
    for step in range(1, n + 1):
        await ctx.report_progress(step, n)
    await ctx.info(f"counted to {n}")
    return "done"


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_TEST_PID")
    if pid_file:
        with open(pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    sys.stderr.write(os.environ.get("MCP_TEST_STDERR", "mcp_server: starting") + "\n")
    sys.stderr.flush()
    server.run("stdio")
