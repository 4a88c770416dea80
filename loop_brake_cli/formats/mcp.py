"""MCP JSON-RPC traffic logs: raw JSON-RPC lines and the two real log wrappings.

A call is a client-to-server ``tools/call`` request::

    {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch",
     "arguments":{"url":"https://example.com"},"_meta":{"progressToken":2}}}

What a message means (tool, arguments, call id, sessions ``<server>#<n>``) is
the decoder's, ``wire/mcp.py``, shared with the live ``mcp-proxy``; this module
only unwraps log lines. Lines are read as:

* raw JSON-RPC, one message (or batch array) per line, direction unknown (read
  as the client's);
* goose replay logs: ``STDIN: {…}`` is client to server, ``STDOUT: {…}`` is
  server to client, ``STDERR: …`` is server chatter; a wrapped blank line is
  skipped like a blank line;
* Claude Desktop ``mcp.log``: ``<ts> [info] [server] Message from client: {…}``
  (the level and server brackets come in either order; a trailing
  `` { metadata: undefined }`` is ignored). Other log lines are skipped.

Only client-to-server requests count: the server's own requests (sampling,
elicitation) and every response are traffic, not calls. The label of a
session is the server name of a Claude Desktop line, ``"mcp"`` otherwise. The
client lines the proxy reads, recorded as ``STDIN: <line>``, give exactly the
records the proxy judged.

The server's response to a ``tools/call`` of the same connection (matched by
its JSON-RPC id; ``wire.mcp``) is that call's result (``ToolResult``), for the
progress mode of a policy; the proxy reads the same responses, so
``STDIN:``/``STDOUT:`` lines recorded in the order the proxy saw them replay to
its verdicts with progress too. A response on a raw line (direction unknown)
is read as the server's: only a server answers a ``tools/call``. Without a
progress policy results change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, line_too_long
from ..readers.reader import JSON_WHITESPACE, TOO_LONG, Source
from ..readers.wire.mcp import DEFAULT_LABEL, Connections, messages
from . import FormatInfo
from ._sniff import head_lines

INFO = FormatInfo(
    name="mcp",
    description="MCP JSON-RPC logs: raw lines, goose STDIN:/STDOUT:, Claude Desktop mcp.log",
    line_based=True,
    patterns=("*.log", "*.jsonl", "*.ndjson"),
)

CLIENT, SERVER, UNKNOWN = "client", "server", None

_GOOSE = re.compile(rb"(STDIN|STDOUT|STDERR):[ \t]?(.*)", re.S)
_DESKTOP = re.compile(
    rb"\S+ \[([^\]\r\n]*)\] \[([^\]\r\n]*)\] Message from (client|server): (.*)", re.S
)
_LEVELS = {b"info", b"error", b"warn", b"warning", b"debug", b"trace", b"notice", b"fatal"}
_DIRECTIONS = {b"STDIN": CLIENT, b"STDOUT": SERVER, b"client": CLIENT, b"server": SERVER}


def _split(line: bytes) -> tuple[str | None, str, bytes, bool] | None:
    """(direction, server label, JSON payload, tolerate trailing text), or None to skip."""
    match = _GOOSE.match(line)
    if match:
        if match.group(1) == b"STDERR" or not match.group(2).strip(JSON_WHITESPACE):
            return None
        return _DIRECTIONS[match.group(1)], DEFAULT_LABEL, match.group(2), False
    match = _DESKTOP.match(line)
    if match:
        first, second = match.group(1), match.group(2)
        server = second if first.strip().lower() in _LEVELS else first
        label = server.decode("utf-8", "replace").strip() or DEFAULT_LABEL
        return _DIRECTIONS[match.group(3)], label, match.group(4), True
    if line.lstrip()[:1] in (b"{", b"["):
        return UNKNOWN, DEFAULT_LABEL, line, False
    return None


def _load(payload: bytes, tolerant: bool) -> Any:
    """Parse a payload; a wrapped log line may have text after the JSON value."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONInputError("not valid UTF-8", exc.start + 1) from None
    try:
        return parse_json(text)
    except JSONInputError as exc:
        if not (tolerant and exc.column and "extra data" in exc.reason):
            raise
        return parse_json(text[: exc.column - 1])


def _is_jsonrpc(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_is_jsonrpc(item) for item in value[:8])
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0"


def _is_response(message: Any) -> bool:
    """A JSON-RPC response: no method, and a result or an error."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and ("result" in message or "error" in message)
    )


def sniff(head: bytes) -> bool:
    """A line in the head that is (or wraps) a JSON-RPC 2.0 message."""
    if b'"jsonrpc"' not in head:  # every line's own check, once for the whole head
        return False
    for line in head_lines(head):
        if b'"jsonrpc"' not in line:
            continue
        split = _split(line)
        if split is None:
            continue
        try:
            value = _load(split[2], split[3])
        except JSONInputError:
            continue
        if _is_jsonrpc(value):
            return True
    return False


def parse(source: Source) -> Iterator[Record]:
    """Stream the client's tools/call requests, each as soon as its line is read."""
    connections = Connections()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        split = _split(raw)
        if split is None:
            continue
        direction, label, payload, tolerant = split
        try:
            value = _load(payload, tolerant)
        except JSONInputError as exc:
            if direction != SERVER:
                yield BadRecord(str(exc), number)
            continue
        for message, path in messages(value):
            if direction == SERVER or (direction is UNKNOWN and _is_response(message)):
                result = connections.server_message(message, label, number)
                if result is not None:
                    yield result
                continue
            record = connections.client_message(message, label, number, path)
            if record is not None:
                yield record
