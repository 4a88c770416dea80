"""An MCP ``tools/call`` request: what one client-to-server JSON-RPC message says.

    {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch",
     "arguments":{"url":"https://example.com"},"_meta":{"progressToken":2}}}

The one decoder of MCP traffic: ``formats/mcp.py`` (recorded logs) and the
live proxy (``mcp_proxy/``) both call ``Connections.client_message`` for every
client message, so a recorded session replays to the verdicts the proxy gave.

* Only requests count, a message with a ``method`` and an ``id`` member: a
  ``tools/call`` request is a call; an ``initialize`` request may start a new
  connection; anything else (notifications, responses, other methods) is
  traffic. A ``tools/call`` without an ``id`` member is a notification, which
  servers do not run: not a call.
* Tool ``params.name`` (``fields.tool_of``: a string, ``""`` included);
  arguments ``params.arguments`` through ``canonical.parse_arguments`` (missing
  or ``null`` is ``{}``, a JSON string is parsed, one that does not parse is
  hashed as the string and flagged); ``params._meta`` is client bookkeeping
  (progress tokens, trace ids) and never hashed.
* The call id is the JSON-RPC ``id`` through ``fields.call_id_of``: ``null``
  is no id, a string or an integral number within +-2**53 is the id. Any other
  id (``1.5``, ``1e400``, a 30-digit integer, ``true``, an object, an array:
  not what JSON-RPC asks for, but a server answers it) is still a call, judged
  without a call id (counted, never a duplicate), so no client escapes the brake
  by its choice of ids; the proxy answers a denial with the id's own bytes.
* A ``tools/call`` whose params carry ``inputResponses`` or ``requestState``
  (the 2026-07-28 multi-round-trip flow: the server answered an earlier call
  with an ``InputRequiredResult`` and the client sends the same call again with
  the answers) continues that call: it is traffic, not a new call, so a tool
  that asks its user twice is not denied for it.
* No de-duplication: a request logged (or sent) twice reaches the streak step,
  which marks the second a duplicate (``streak.step``).
* stdio carries no session id, so the session is the connection,
  ``"<label>#<n>"`` (``mcp#1``): ``n`` counts connections from 1 per label, and
  an ``initialize`` request starts connection ``n + 1`` unless nothing was seen
  on the current one yet (a log that opens mid-connection and then reconnects
  reads ``odoo#1``, ``odoo#2``; a log that opens with ``initialize`` stays on 1).
* A result (the progress mode of a policy) is the server's response to a
  ``tools/call`` request of the same connection, matched by its JSON-RPC id:
  a ``result`` member (a ``CallToolResult``: ``content`` and ``isError``; the
  digest keeps only those, ``progress.result_digest``) or an ``error`` member
  (a JSON-RPC error: the tool did not run, e.g. an unknown tool; it is the
  result ``{"error": <the error object>}``, so a call that keeps failing the
  same way counts as the seed counts it). A response to any other request, to
  an id not pending (answered already, or never sent as a call), or on another
  connection is traffic. At most ``MAX_PENDING`` calls wait for their response
  per connection (the oldest is forgotten first); a reconnect forgets them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...core.canonical import canonical_json, parse_arguments
from ...core.records import BadRecord, Record, ToolCall, ToolResult
from .fields import FieldError, call_id_of, tool_of

__all__ = [
    "DEFAULT_LABEL",
    "MAX_PENDING",
    "Connections",
    "continues_call",
    "decode_call",
    "messages",
]

DEFAULT_LABEL = "mcp"
MAX_PENDING = 4096  # tools/call requests per connection waiting for their response


def messages(value: Any) -> Iterator[tuple[Any, str | None]]:
    """The messages of one parsed line with their JSON paths: a batch (an array,
    removed from MCP in 2025-06-18 but still read) element by element."""
    if isinstance(value, list):
        for index, message in enumerate(value):
            yield message, f"$[{index}]"
    else:
        yield value, None


def decode_call(
    message: dict[str, Any], session: str, line: int | None = None, path: str | None = None
) -> Record:
    """A ``tools/call`` request as a call; wrong types become a located BadRecord."""
    params = message.get("params")
    where = "$.params" if path is None else path + ".params"
    if not isinstance(params, dict):
        return BadRecord("tools/call without a params object", line, where)
    try:
        name = tool_of(params.get("name"), "tools/call params.name")
    except FieldError as exc:
        return BadRecord(str(exc), line, where)
    try:
        call_id = call_id_of(message.get("id"), "tools/call id")
    except FieldError:  # an id the brake cannot compare: judged without one
        call_id = None
    args, unparsed = parse_arguments(params.get("arguments"))
    return ToolCall(name, args, session, call_id, line, path, unparsed)


CONTINUATION_PARAMS = ("inputResponses", "requestState")


def continues_call(message: dict[str, Any]) -> bool:
    """A retry that answers the server's input requests for an earlier call."""
    params = message.get("params")
    return isinstance(params, dict) and any(
        params.get(key) is not None for key in CONTINUATION_PARAMS
    )


def _pending_key(request_id: Any) -> tuple[Any, Any] | None:
    """A pending call's key from its JSON-RPC id: 1 and "1" are different ids; an id
    that is not a call id (``1.5``, ``true``, an object...) by its canonical JSON, so
    its response still pairs. None: no id (``null``)."""
    try:
        call_id = call_id_of(request_id)
    except FieldError:
        try:
            return "json", canonical_json(request_id)
        except (TypeError, ValueError):
            return None
    return None if call_id is None else (call_id.__class__, call_id)


class Connections:
    """Per label: which connection the traffic is on, whether it has seen any, and
    (when ``results``) the ids of its tools/call requests awaiting a response."""

    def __init__(self, results: bool = False) -> None:
        self._state: dict[str, list[Any]] = {}  # label -> [connection number, seen traffic]
        self._pending: dict[str, dict[tuple[type, Any], None]] | None = {} if results else None

    def _of(self, label: str) -> list[Any]:
        state = self._state.get(label)
        if state is None:
            state = self._state[label] = [1, False]
        return state

    def session(self, label: str = DEFAULT_LABEL) -> str:
        return f"{label}#{self._of(label)[0]}"

    def touch(self, label: str = DEFAULT_LABEL) -> None:
        """Traffic on the current connection (a server message, a notification...)."""
        self._of(label)[1] = True

    def initialize(self, label: str = DEFAULT_LABEL) -> None:
        state = self._of(label)
        if state[1]:
            state[0] += 1
            if self._pending is not None:
                self._pending.pop(label, None)
        state[1] = True

    def server_message(
        self, message: Any, label: str = DEFAULT_LABEL, line: int | None = None
    ) -> ToolResult | None:
        """A server-to-client message: never a call, but traffic on the connection,
        and (when results are read) the result of a pending tools/call."""
        if not isinstance(message, dict):
            return None
        self.touch(label)
        if self._pending is None or "method" in message:
            return None
        if "result" in message:
            result = message["result"]
        elif "error" in message:
            result = {"error": message["error"]}
        else:
            return None
        pending = self._pending.get(label)
        key = _pending_key(message.get("id"))
        if not pending or key is None or key not in pending:
            return None
        del pending[key]
        call_id = key[1] if key[0] != "json" else None  # as the call was judged
        return ToolResult(self.session(label), call_id, result, None, line)

    def forget(self, request_id: Any, label: str = DEFAULT_LABEL) -> None:
        """A call that will get no response from the server (the proxy answered it);
        ``request_id``: its JSON-RPC id as sent."""
        if self._pending is not None:
            pending = self._pending.get(label)
            key = _pending_key(request_id)
            if pending and key is not None:
                pending.pop(key, None)

    def _await(self, label: str, key: tuple[Any, Any]) -> None:
        """A forwarded tools/call whose response will be its result."""
        assert self._pending is not None
        pending = self._pending.setdefault(label, {})
        pending.pop(key, None)
        pending[key] = None
        if len(pending) > MAX_PENDING:
            del pending[next(iter(pending))]

    def client_message(
        self,
        message: Any,
        label: str = DEFAULT_LABEL,
        line: int | None = None,
        path: str | None = None,
    ) -> Record | None:
        """One client-to-server message: a ToolCall, a BadRecord, or None (not a call)."""
        if not isinstance(message, dict):
            return BadRecord("JSON-RPC message is not an object", line, path)
        method = message.get("method")
        if method == "initialize" and "id" in message:
            self.initialize(label)
            return None
        self.touch(label)
        if method != "tools/call" or "id" not in message:
            return None
        if continues_call(message):
            return None
        record = decode_call(message, self.session(label), line, path)
        if self._pending is not None and record.__class__ is ToolCall:
            key = _pending_key(message["id"])
            if key is not None:
                self._await(label, key)
        return record
