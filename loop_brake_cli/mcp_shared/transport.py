"""What went wrong talking to a remote MCP server over HTTP, in words.

Needs ``httpx2`` (the MCP SDK's HTTP client, the ``mcp`` extra): imported only by
the front-ends that speak HTTP (``mcp-proxy --url``, ``mcp-gateway``).
"""

from __future__ import annotations

import httpx2

__all__ = ["transport_problem"]


def transport_problem(exc: BaseException, read_timeout: float) -> str:
    """What went wrong with the connection, in words: never the exception's own text
    (an HTTP library may quote a URL with its query in it)."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return "timed out while connecting"
    if isinstance(exc, httpx2.ConnectError):
        return "cannot connect (refused or unreachable)"
    if isinstance(exc, httpx2.ReadTimeout):
        return f"no data for {read_timeout:g} s"
    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx2.SSEError):
        return "the server's event stream is malformed or an event is too large"
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        return "the connection broke off"
    return f"transport error ({type(exc).__name__})"
