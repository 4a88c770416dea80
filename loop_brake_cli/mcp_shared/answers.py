"""The JSON-RPC answers the MCP front-ends write themselves, with the client's own id bytes.

A denied ``tools/call`` is answered here, never forwarded (``denial_answer``); a
request the front-end cannot take or pass on gets a JSON-RPC error
(``request_error``); a warned call's response gets the warning spliced into its
result (``append_warning``). Every answer carries the request's ``id`` as the
client wrote it (``spans.member_span``), since re-serialising a parsed id could
change it (``12345678901234567891`` is a double once parsed). Nothing here
quotes an argument: the only text is the brake's own message.
"""

from __future__ import annotations

from typing import Any

from ..readers.output import json_line
from .spans import array_element_spans, member_span

__all__ = [
    "INVALID_REQUEST",
    "MODERN_META_KEY",
    "PARSE_ERROR",
    "append_warning",
    "denial_answer",
    "error_line",
    "is_modern",
    "parse_error",
    "request_error",
]

INVALID_REQUEST = -32600  # JSON-RPC: the message is not a valid request
PARSE_ERROR = -32700  # JSON-RPC: the message is not JSON (here: not strict JSON)

MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
"""The ``params._meta`` key of a 2026-07-28 (or later) request, whose results
must say ``"resultType": "complete"`` (the SDK's clients reject one that does not)."""


def denial_answer(id_bytes: bytes, message: str, modern: bool = False) -> bytes:
    """The JSON-RPC answer to a denied call, without a line end: a successful
    response carrying a tool execution error, with the request's id spliced in as
    the client wrote it. A tool error rather than a JSON-RPC error, because
    clients hand tool errors to the model (which should change course) and may
    treat protocol errors as a broken server. ``modern``: the request carried the
    2026-07-28 envelope, so the result says it is complete."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": message}], "isError": True}
    if modern:
        result["resultType"] = "complete"
    line = json_line(result)
    return b'{"jsonrpc":"2.0","id":' + id_bytes + b',"result":' + line[:-1] + b"}"


def request_error(id_bytes: bytes, code: int, message: str) -> bytes:
    """A JSON-RPC error response with the request's id as the client wrote it, without
    a line end (an HTTP body)."""
    error = json_line({"code": code, "message": message})[:-1]
    return b'{"jsonrpc":"2.0","id":' + id_bytes + b',"error":' + error + b"}"


def error_line(id_bytes: bytes, code: int, message: str) -> bytes:
    """``request_error`` as one stdio line (with its ``\\n``)."""
    return request_error(id_bytes, code, message) + b"\n"


def parse_error(prog: str, reason: str) -> bytes:
    """The JSON-RPC answer to a message that is not strict JSON (id null, as JSON-RPC
    answers what it cannot read): never forwarded, since a laxer parser in the server
    could read a call in it that the brake never judged. ``reason`` is the parser's
    (a column, never the input)."""
    text = f"{prog}: the message is not strict JSON ({reason}); not forwarded"
    return request_error(b"null", PARSE_ERROR, text)


def append_warning(data: bytes, warning: str, start: int = 0) -> bytes:
    """The JSON-RPC response at ``start`` of ``data`` (parsed by ``parse_json`` already)
    with a text block holding ``warning`` added last to ``result.content``; ``data``
    itself when there is no such array. The other bytes are the server's own."""
    result = member_span(data, "result", start)
    if result is None or data[result[0] : result[0] + 1] != b"{":
        return data
    content = member_span(data, "content", result[0])
    if content is None or data[content[0] : content[0] + 1] != b"[":
        return data
    block = json_line({"type": "text", "text": warning})[:-1]
    if array_element_spans(data, content[0]):
        block = b"," + block
    close = content[1] - 1  # the array's "]"
    return data[:close] + block + data[close:]


def is_modern(message: Any) -> bool:
    """Whether a request carries the 2026-07-28 per-request envelope in ``params._meta``."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and MODERN_META_KEY in meta
