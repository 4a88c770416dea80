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
* A request is open from the ``tools/call`` until the server's response to its
  id (``1`` and ``"1"`` are different ids). The streak step marks a call whose
  id equals the session's last counted one a duplicate (``streak.step``): the
  same request sent (or logged) twice while open. Once its response is seen the
  id is free (``answer``; the live proxy tells the brake, ``LoopBrake.end_call``),
  and its next use is a new call.
* A ``tools/call`` whose params carry ``inputResponses`` or ``requestState``
  (the 2026-07-28 multi round-trip flow: the server answered an earlier call
  with ``"resultType": "input_required"`` and the client retries that call, with
  a new id, carrying its answers and the server's ``requestState`` unchanged)
  continues that call, not counted, only when it retries a call of the same
  connection whose response asked for input: same tool, the same arguments
  (canonically) and the ``requestState`` that response gave (or none when it
  gave none). Each such response allows one retry; the retry is open in its
  turn, and its own response may ask again. Any other ``tools/call`` carrying
  those params is a call like any other: the server runs it.
* stdio carries no session id, so the session is the connection,
  ``"<label>#<n>"`` (``mcp#1``): ``n`` counts connections from 1 per label, and
  an ``initialize`` request starts connection ``n + 1`` unless nothing was seen
  on the current one yet (a log that opens mid-connection and then reconnects
  reads ``odoo#1``, ``odoo#2``; a log that opens with ``initialize`` stays on 1).
* A result (the progress mode of a policy) is the server's response to an open
  ``tools/call`` request of the same connection, matched by its JSON-RPC id:
  a ``result`` member (a ``CallToolResult``: ``content`` and ``isError``; the
  digest keeps only those, ``progress.result_digest``) or an ``error`` member
  (a JSON-RPC error: the tool did not run, e.g. an unknown tool; it is the
  result ``{"error": <the error object>}``, so a call that keeps failing the
  same way counts as the seed counts it). A response asking for input is the
  call's result so far, and the response to a retry that continued a call is
  that call's result too. A response to any other request, to
  an id not open (answered already, or never sent as a call), or on another
  connection is traffic. At most ``MAX_PENDING`` calls stay open per connection
  (the oldest is forgotten first), and as many calls await input; a reconnect
  forgets them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...core.canonical import call_digest, canonical_json, parse_arguments
from ...core.records import BadRecord, Record, ToolCall, ToolResult
from .fields import FieldError, call_id_of, tool_of

__all__ = [
    "DEFAULT_LABEL",
    "MAX_PENDING",
    "Answer",
    "Connections",
    "continues_call",
    "decode_call",
    "messages",
]

DEFAULT_LABEL = "mcp"
MAX_PENDING = 4096  # open tools/call requests per connection (and calls awaiting input)


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
INPUT_REQUIRED = "input_required"  # the resultType of an InputRequiredResult


def continues_call(message: dict[str, Any]) -> bool:
    """Whether a request carries the params of a retry that answers the server's input
    requests (it still counts unless it continues a call awaiting input: ``Connections``)."""
    params = message.get("params")
    return isinstance(params, dict) and any(
        params.get(key) is not None for key in CONTINUATION_PARAMS
    )


def _pending_key(request_id: Any) -> tuple[Any, Any] | None:
    """An open request's key from its JSON-RPC id: 1 and "1" are different ids; an id
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


class Answer:
    """The server's response to an open ``tools/call``: the session, the id the brake
    judged that request under (None when it was not judged: a retry that continued a
    call, or an id that is no call id), and its result (``ToolResult``, whose call id
    is the call a retry continued)."""

    __slots__ = ("session", "call_id", "result")

    def __init__(self, session: str, call_id: Any, result: ToolResult) -> None:
        self.session = session
        self.call_id = call_id
        self.result = result


class _Open:
    """An open tools/call: its tool and arguments (a retry must repeat them), the id it
    was judged under (None: not judged) and the call id its result pairs with (a
    retry's is the call it continues)."""

    __slots__ = ("tool", "args", "judged", "result_id")

    def __init__(self, tool: str, args: Any, judged: Any, result_id: Any) -> None:
        self.tool = tool
        self.args = args
        self.judged = judged
        self.result_id = result_id


class _Connection:
    """One label's connection: its number, whether it saw traffic, its open calls
    and the calls whose server asked for input (each allows one retry)."""

    __slots__ = ("number", "seen", "open", "awaiting")

    def __init__(self) -> None:
        self.number = 1
        self.seen = False
        self.open: dict[tuple[Any, Any], _Open] = {}
        self.awaiting: dict[tuple[str, bytes, Any], Any] = {}  # -> the original call id

    def forget_all(self) -> None:
        self.open.clear()
        self.awaiting.clear()


def _bounded_put(table: dict[Any, Any], key: Any, value: Any) -> None:
    """``table[key] = value`` as the newest entry; the oldest goes past ``MAX_PENDING``."""
    table.pop(key, None)
    table[key] = value
    if len(table) > MAX_PENDING:
        del table[next(iter(table))]


def _retry_key(tool: str, args: Any, state: Any) -> tuple[str, bytes, Any] | None:
    """What a retry must repeat: the tool, the arguments' digest and the requestState."""
    if state is not None and not isinstance(state, str):
        return None
    try:
        return tool, call_digest(tool, args), state
    except (TypeError, ValueError):
        return None


class Connections:
    """Per label: which connection the traffic is on, whether it has seen any, its open
    tools/call requests (to pair responses and refuse a reused id) and the calls whose
    server asked for input."""

    def __init__(self) -> None:
        self._state: dict[str, _Connection] = {}

    def _of(self, label: str) -> _Connection:
        state = self._state.get(label)
        if state is None:
            state = self._state[label] = _Connection()
        return state

    def session(self, label: str = DEFAULT_LABEL) -> str:
        return f"{label}#{self._of(label).number}"

    def has_open(self, label: str = DEFAULT_LABEL) -> bool:
        """Whether a tools/call of the connection awaits its response."""
        state = self._state.get(label)
        return state is not None and bool(state.open)

    def touch(self, label: str = DEFAULT_LABEL) -> None:
        """Traffic on the current connection (a server message, a notification...)."""
        self._of(label).seen = True

    def initialize(self, label: str = DEFAULT_LABEL) -> None:
        state = self._of(label)
        if state.seen:
            state.number += 1
            state.forget_all()
        state.seen = True

    def server_message(
        self, message: Any, label: str = DEFAULT_LABEL, line: int | None = None
    ) -> ToolResult | None:
        """A server-to-client message: never a call, but traffic on the connection, and
        the result of an open tools/call it answers (``answer``), if any."""
        answer = self.answer(message, label, line)
        return None if answer is None else answer.result

    def answer(
        self, message: Any, label: str = DEFAULT_LABEL, line: int | None = None
    ) -> Answer | None:
        """A server-to-client message that answers an open tools/call: that call is
        closed (its id may be used again), and a response asking for input lets one
        retry of it continue it. None for anything else (traffic)."""
        if not isinstance(message, dict):
            return None
        self.touch(label)
        if "method" in message:  # the server's own request or notification
            return None
        if "result" in message:
            result = message["result"]
        elif "error" in message:
            result = {"error": message["error"]}
        else:
            return None
        state = self._of(label)
        key = _pending_key(message.get("id"))
        call = state.open.pop(key, None) if key is not None else None
        if call is None:
            return None
        if isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED:
            retry = _retry_key(call.tool, call.args, result.get("requestState"))
            if retry is not None:
                _bounded_put(state.awaiting, retry, call.result_id)
        session = self.session(label)
        return Answer(session, call.judged, ToolResult(session, call.result_id, result, None, line))

    def forget(self, request_id: Any, label: str = DEFAULT_LABEL) -> None:
        """A call that will get no response from the server (the proxy answered it);
        ``request_id``: its JSON-RPC id as sent."""
        key = _pending_key(request_id)
        if key is not None:
            self._of(label).open.pop(key, None)

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
        state = self._of(label)
        key = _pending_key(message["id"])
        record = decode_call(message, self.session(label), line, path)
        if record.__class__ is not ToolCall:
            return record
        call: ToolCall = record
        if continues_call(message):
            retry = _retry_key(call.tool, call.args, message["params"].get("requestState"))
            if retry is not None and retry in state.awaiting:  # not counted: it goes on
                original = state.awaiting.pop(retry)
                if key is not None:
                    _bounded_put(state.open, key, _Open(call.tool, call.args, None, original))
                return None
        if key is not None:
            _bounded_put(state.open, key, _Open(call.tool, call.args, call.call_id, call.call_id))
        return call
