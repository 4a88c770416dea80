"""The test server of ``tests/mcp_server.py`` over Streamable HTTP, for the bridge and gateway.

``python tests/mcp_http_server.py PORT [--json]`` serves ``http://127.0.0.1:PORT/mcp``
with the SDK's own Streamable HTTP transport (SSE answers; ``--json``: plain JSON
bodies). Besides ``echo``, ``add`` and ``count_to`` (which record every call they
receive in ``$MCP_TEST_CALLS``, never the arguments), three tools exercise the
transport: ``big(size)`` returns a text of ``size`` bytes, ``ask(question)``
sends the client an elicitation request (a server-to-client request) and returns
its answer, ``confirm(action)`` asks the same through a resolver, so a 2026-07-28
client gets an ``input_required`` answer and retries the call with its answer
(the multi round-trip flow), ``wait(seconds)`` sleeps (for a client that leaves
mid-call), ``hold(path)`` answers once the file ``path`` exists (a call the test
keeps open as long as it needs, and then releases).
A ``whoami`` tool answers with the ``Authorization`` header it received,
hashed, so a test can tell whether the gateway forwarded the client's; ``tick()``
answers how often it was called (a result that changes), ``fail(text)`` always
the same tool error.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, Resolve
from mcp_server import _record, server
from pydantic import BaseModel


class Answer(BaseModel):
    answer: str


@server.tool()
def big(size: int) -> str:
    """Return a text of ``size`` bytes."""
    _record("big", str(size))
    return "x" * size


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client (elicitation) and return what it answered."""
    _record("ask", question)
    result = await ctx.elicit(question, Answer)
    return f"{result.action}:{result.data.answer if result.data else ''}"


def _ask_first(action: str) -> Elicit[Answer]:
    return Elicit(f"Really {action}?", Answer)


@server.tool()
def confirm(action: str, answer: Annotated[Answer, Resolve(_ask_first)]) -> str:
    """Run ``action`` once the client confirms it (asked through a resolver)."""
    _record("confirm", action)
    return f"{action}:{answer.answer}"


@server.tool()
async def wait(seconds: float) -> str:
    """Sleep, then return "woke"."""
    _record("wait", str(seconds))
    await anyio.sleep(seconds)
    return "woke"


@server.tool()
async def hold(path: str) -> str:
    """Answer "released" once the file at ``path`` exists."""
    _record("hold", path)
    while not Path(path).exists():
        await anyio.sleep(0.02)
    return "released"


_ticks = [0]


@server.tool()
def tick() -> str:
    """The number of times it was called: the same call, a changing result."""
    _record("tick", "")
    _ticks[0] += 1
    return str(_ticks[0])


@server.tool()
def fail(text: str) -> str:
    """Always the same tool error, whatever ``text`` is."""
    _record("fail", text)
    raise ValueError("the service is down")


@server.tool()
def whoami(ctx: Context) -> str:
    """The sha256 of the Authorization header this request carried, or "none"."""
    request = ctx.request_context.request
    value = request.headers.get("authorization") if request is not None else None
    return hashlib.sha256(value.encode()).hexdigest() if value else "none"


if __name__ == "__main__":
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        json_response="--json" in sys.argv,
    )
