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
  is no id, a string or an integral number within +-2**53 is the id, anything
  else makes the request an error record.
* No de-duplication: a request logged (or sent) twice reaches the streak step,
  which marks the second a duplicate (``streak.step``).
* stdio carries no session id, so the session is the connection,
  ``"<label>#<n>"`` (``mcp#1``): ``n`` counts connections from 1 per label, and
  an ``initialize`` request starts connection ``n + 1`` unless nothing was seen
  on the current one yet (a log that opens mid-connection and then reconnects
  reads ``odoo#1``, ``odoo#2``; a log that opens with ``initialize`` stays on 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..canonical import parse_arguments
from ..records import BadRecord, Record, ToolCall
from .fields import FieldError, call_id_of, tool_of

__all__ = ["DEFAULT_LABEL", "Connections", "decode_call", "messages"]

DEFAULT_LABEL = "mcp"


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
    except FieldError as exc:
        return BadRecord(str(exc), line, path)
    args, unparsed = parse_arguments(params.get("arguments"))
    return ToolCall(name, args, session, call_id, line, path, unparsed)


class Connections:
    """Per label: which connection the traffic is on and whether it has seen any."""

    def __init__(self) -> None:
        self._state: dict[str, list[Any]] = {}  # label -> [connection number, seen traffic]

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
        state[1] = True

    def server_message(self, message: Any, label: str = DEFAULT_LABEL) -> None:
        """A server-to-client message: never a call, but traffic on the connection."""
        if isinstance(message, dict):
            self.touch(label)

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
        return decode_call(message, self.session(label), line, path)
