"""An MCP server whose tool results change, for the progress tests, on the official SDK.

``poll(job)`` answers the n-th call it receives (counted per server process)
with the n-th entry of ``$MCP_POLL_SCRIPT`` (comma-separated; the last entry
repeats once the script is used up), followed by noise the default ignore
patterns strip (a Codex-style ``Wall time:`` line that differs on every call)
and the secret ``$MCP_POLL_SECRET``, so a test can prove that no result text
is written anywhere. An entry ``!`` makes that call a tool error
(``isError``; its text holds no secret, because the SDK logs it on stderr).
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("loop-brake-progress-server")
_calls = 0


def _entry() -> str:
    global _calls
    script = os.environ.get("MCP_POLL_SCRIPT", "same").split(",")
    entry = script[min(_calls, len(script) - 1)]
    _calls += 1
    return entry


@server.tool()
def poll(job: str) -> str:
    """Return the next line of the job's output."""
    entry = _entry()
    secret = os.environ.get("MCP_POLL_SECRET", "")
    if entry == "!":
        raise ToolError("job failed")
    return f"{entry}\nWall time: {_calls * 0.25:.2f} seconds\n{secret}"


if __name__ == "__main__":
    server.run()
