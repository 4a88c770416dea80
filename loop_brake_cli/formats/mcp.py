"""MCP JSON-RPC traffic logs: raw JSON-RPC lines and the two real log wrappings.

A call is a client-to-server ``tools/call`` request::

    {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch",
     "arguments":{"url":"https://example.com"},"_meta":{"progressToken":2}}}

Tool ``params.name``; args ``params.arguments`` (missing means ``{}``, a JSON
string is parsed); ``params._meta`` is client bookkeeping and never hashed;
the call id is the JSON-RPC ``id``. Lines are read as:

* raw JSON-RPC, one message (or batch array) per line, direction unknown;
* goose replay logs: ``STDIN: {…}`` is client to server, ``STDOUT: {…}`` is
  server to client, ``STDERR: …`` is server chatter;
* Claude Desktop ``mcp.log``: ``<ts> [info] [server] Message from client: {…}``
  (the level and server brackets come in either order; a trailing
  `` { metadata: undefined }`` is ignored). Other log lines are skipped.

Only client-to-server requests count: the server's own requests (sampling,
elicitation) and every response are ignored, and a request logged twice in a
row (same connection, same id as the call before) counts once; ids are not
remembered further back, since a client restarts them on a reconnect that a
log may not show. stdio messages carry no session id, so the
session is the connection: ``"<server>#<n>"``, where ``<server>`` is the
server name of a Claude Desktop line (``"mcp"`` otherwise) and ``n`` counts
connections from 1. An ``initialize`` request starts connection ``n + 1``
(ids restart there), unless nothing was seen on the current one yet, so a log
that opens mid-connection and then reconnects reads ``odoo#1``, ``odoo#2``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..canonical import JSONInputError, parse_json
from ..reader import TOO_LONG, Source
from ..records import BadRecord, Record, ToolCall, line_too_long
from . import FormatInfo
from ._common import json_path, parse_arguments
from ._sniff import head_lines

INFO = FormatInfo(
    name="mcp",
    description="MCP JSON-RPC logs: raw lines, goose STDIN:/STDOUT:, Claude Desktop mcp.log",
    line_based=True,
    patterns=("*.log", "*.jsonl", "*.ndjson"),
)

CLIENT, SERVER, UNKNOWN = "client", "server", None
DEFAULT_LABEL = "mcp"
_NONE = object()

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
        if match.group(1) == b"STDERR":
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


def sniff(head: bytes) -> bool:
    """A line in the head that is (or wraps) a JSON-RPC 2.0 message."""
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


class _Connections:
    """Per server label: which connection we are on and whether it has seen traffic."""

    def __init__(self) -> None:
        self._state: dict[str, list[Any]] = {}
        self.last_id: dict[str, Any] = {}

    def session(self, label: str) -> str:
        number, _ = self._state.setdefault(label, [1, False])
        return f"{label}#{number}"

    def touch(self, label: str) -> None:
        self._state.setdefault(label, [1, False])[1] = True

    def initialize(self, label: str) -> None:
        state = self._state.setdefault(label, [1, False])
        if state[1]:
            state[0] += 1
        state[1] = True

    def message(
        self, msg: Any, direction: str | None, label: str, number: int, path: str | None
    ) -> Iterator[Record]:
        if not isinstance(msg, dict):
            if direction != SERVER:
                yield BadRecord("JSON-RPC message is not an object", number, path)
            return
        method = msg.get("method")
        if direction == SERVER or method not in ("initialize", "tools/call"):
            self.touch(label)
            return
        if method == "initialize":
            self.initialize(label)
            return
        self.touch(label)
        yield from self.call(msg, label, number, path)

    def call(
        self, msg: dict[str, Any], label: str, number: int, path: str | None
    ) -> Iterator[Record]:
        params = msg.get("params")
        where = json_path("params") if path is None else path + ".params"
        if not isinstance(params, dict):
            yield BadRecord("tools/call without a params object", number, where)
            return
        name = params.get("name")
        if not isinstance(name, str):
            yield BadRecord("tools/call without a string params.name", number, where)
            return
        call_id = msg.get("id")
        if isinstance(call_id, bool) or not isinstance(call_id, (str, int, float, type(None))):
            yield BadRecord("tools/call id is not a string or a number", number, path)
            return
        session = self.session(label)
        if call_id is not None and self.last_id.get(session, _NONE) == call_id:
            return  # the same request logged again
        self.last_id[session] = call_id
        args, unparsed = parse_arguments(params.get("arguments"))
        yield ToolCall(name, args, session, call_id, number, path, unparsed)


def parse(source: Source) -> Iterator[Record]:
    """Stream the client's tools/call requests, each as soon as its line is read."""
    connections = _Connections()
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
        if isinstance(value, list):
            for index, msg in enumerate(value):
                yield from connections.message(msg, direction, label, number, f"$[{index}]")
        else:
            yield from connections.message(value, direction, label, number, None)
