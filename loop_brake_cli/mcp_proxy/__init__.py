"""The brake in front of an MCP stdio server: ``loop-brake mcp-proxy -- SERVER ...``.

MCP clients start a tool server as a subprocess and speak newline-delimited
JSON-RPC over its stdin and stdout
(https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio).
The proxy is that subprocess: it starts the real server with its own
environment, working directory and stderr, and copies every line both ways,
byte for byte, with two exceptions on the client-to-server side:

* a ``tools/call`` request the brake denies is not forwarded; the proxy answers
  it itself with the same id and a tool execution error (``isError: true``),
  which the specification says clients should show to the model
  (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling);
* a later ``notifications/cancelled`` for an id the proxy answered is dropped
  (once per answer): the server never saw that request.

It decides exactly as ``loop-brake replay --verdicts --format mcp`` does on the
client's lines recorded as ``STDIN: <line>``: same decoder (``wire.mcp``), same
brake, same verdict lines in ``--log``. Nothing here prints arguments.

Modules, by responsibility:

* ``routing``: the decision for each client line (decoder, brake, log, answers);
* ``streams``: the proxy's own stdin/stdout/stderr checked (and closed ones
  filled with ``/dev/null``) before anything is opened;
* ``client_end``: the client's side, alike for both: the router and its log,
  one-line writes, fail-open routing and relaying;
* ``process``: the server process, the copy threads, signals and shutdown.
* ``bridge``, ``remote``: ``--url``, a remote server over Streamable HTTP instead
  of a process (imported only then: they need the ``mcp`` extra).

What it shares with ``mcp-gateway`` (spans, the JSON-RPC answers, the denial
note, ``--header``, the ``--log`` file, pipes) is ``mcp_shared``, below both.
"""

from __future__ import annotations

from ..mcp_shared.answers import denial_answer
from ..mcp_shared.pipes import iter_lines
from ..mcp_shared.verdict_log import LogOpenError
from .process import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    FORWARDED_SIGNALS,
    OUTPUT_FAILED,
    ProxyOptions,
    SpawnError,
    run_proxy,
)
from .routing import ClientRouter, Routed
from .streams import OutputError, fill_closed

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "FORWARDED_SIGNALS",
    "ClientRouter",
    "LogOpenError",
    "OUTPUT_FAILED",
    "OutputError",
    "ProxyOptions",
    "Routed",
    "SpawnError",
    "denial_answer",
    "fill_closed",
    "iter_lines",
    "run_proxy",
]
