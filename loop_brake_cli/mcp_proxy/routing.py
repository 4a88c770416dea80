"""The decision for each client line: forward it, or withhold it and answer it.

Every client line goes through the MCP decoder (``wire.mcp``) and the same
pipeline as ``replay`` (``pipeline.judge`` over a ``LoopBrake``), so the records,
verdicts and ``--log`` lines are exactly those of ``loop-brake replay
--verdicts --format mcp`` on the client's lines recorded as ``STDIN: <line>``
(and, where answers matter, the server's as ``STDOUT: <line>`` in the order the
proxy saw them): the same line numbers (blank lines counted, as the reader counts
them), batch paths ``$[i]``, sessions ``mcp#1``, ``mcp#2`` ... and error records.

Nothing reaches the server that the brake did not judge (issue 36): a line that
is not strict JSON (``NaN``, a byte-order mark, invalid UTF-8, text after the
value: a server's laxer parser could read a call in it) is answered with a
JSON-RPC parse error (-32700, id null), and a message the decoder cannot read
(not an object, a ``tools/call`` without a params object or a string name, or
whose arguments cannot be hashed) with an invalid-request error (-32600) naming
what was wrong; neither is forwarded, and neither answer quotes the input.

Under a policy a stop is answered like any denial (MCP has no way for a server to
stop its client's agent): the tool error carries the stop message.

What is forwarded keeps the client's bytes: a single message is the line as
read; a batch with a withheld element is rebuilt from the other elements' own
bytes; an answer carries the request's ``id`` as the client wrote it.

An id counts once while its request is open. A call the brake marks a duplicate
(its id is the session's last counted one, sent again before its answer) is not
forwarded either: the server would run it a second time, and its answer to the
first answers both (a denied duplicate is answered with the denial again). The
server's answer to a call frees its id (``LoopBrake.end_call``, after the answer
was written to the client), so a client that reuses its ids after each answer,
as JSON-RPC allows, has each call counted; so does a call the proxy answered.

Under a policy's ``warn_at`` a warned call is forwarded and its id remembered;
the server's response to it reaches the client with one more text block at
the end of ``result.content``, the warning (``append_warning``: the response's
own bytes, the block spliced in; a JSON-RPC error, a result without a
``content`` array, or a request of the server's own that reuses the id goes
through unchanged). Under ``--shadow`` nothing is added.

Server lines are parsed only while a call is open and only when they hold an
``"id"``: a response to an open ``tools/call`` of the connection answers it
(``wire.mcp``): it frees the id, may let one retry continue the call (the
2026-07-28 ``input_required`` flow), and under a policy that uses progress is
that call's result, given to the brake through ``pipeline.judge`` as ``replay``
gives it, digest only. A call the proxy answered itself gets no result (the tool
did not run).

The client's and the server's threads share the decoder and the brake under one
lock, and an answer that reached the client is read before the client's next
line: the client thread waits (at most ``RESULT_WAIT`` seconds, for a client
that does not read its responses) while a server line is being written or read.
So the order is the one a recording of both directions shows, and a replay of
it agrees; a response itself is never held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, canonical_json, parse_json
from ..core.records import BadRecord, ToolCall, error_record, verdict_record
from ..mcp_shared.answers import (
    INVALID_REQUEST,
    append_warning,
    denial_answer,
    is_modern,
    parse_error,
    request_error,
)
from ..mcp_shared.denials import DenialNotes, describe_denial
from ..mcp_shared.spans import array_element_spans, member_span
from ..readers.pipeline import judge
from ..readers.reader import JSON_WHITESPACE
from ..readers.wire.mcp import DEFAULT_LABEL, Connections, messages
from ..render.visible import visible

__all__ = ["ClientRouter", "MAX_ANSWERED_IDS", "RESULT_WAIT", "Routed"]

MAX_ANSWERED_IDS = 4096  # ids answered by the proxy, remembered to drop their cancellations
RESULT_WAIT = 1.0  # seconds a client line waits for a response being written or read
PROG = "loop-brake mcp-proxy"


@dataclass(frozen=True, slots=True)
class Routed:
    """What one client line becomes: bytes for the server and the proxy's own answer."""

    forward: bytes | None
    answer: bytes | None = None


def _id_key(request_id: Any) -> str:
    """A hashable key for a JSON-RPC id that keeps 1 and "1" apart."""
    try:
        return canonical_json(request_id)
    except (TypeError, JSONInputError):
        return repr(request_id)


def _payload(line: bytes) -> bytes:
    """The line as the reader yields it: no ``\\n``, and no ``\\r`` before it."""
    if line.endswith(b"\n"):
        line = line[:-1]
    return line[:-1] if line.endswith(b"\r") else line


def _id_bytes(data: bytes, message: Any) -> bytes:
    """The message's id as the client wrote it (``null`` when it has none)."""
    if not isinstance(message, dict) or "id" not in message:
        return b"null"
    span = member_span(data, "id")
    return data[span[0] : span[1]] if span else b"null"


class ClientRouter:
    """The brake between one client and its server: decoder, brake, log and answers.

    ``log`` takes each verdict record; ``note`` takes one line for people (stderr).
    ``route_line`` is called by one thread (the client-to-server copy),
    ``relay_server_line`` by another."""

    def __init__(
        self,
        max_repeats: int,
        log: Callable[[dict[str, Any]], None],
        note: Callable[[str], None],
        shadow: bool = False,
        policy: Any = None,
        store: Any = None,
        fail_closed: bool = False,
        label: str = DEFAULT_LABEL,
    ) -> None:
        self.label = label  # sessions are label#1, label#2...: --session, or "mcp"
        self.brake = LoopBrake(
            max_repeats, policy=policy, store=store, fail_closed=fail_closed, warn=note
        )
        self.results = self.brake.progress  # answers are results for the brake
        self.connections = Connections()
        self.lock = threading.Condition()
        self.relaying = 0  # server lines being written to the client or read
        self.session = self.connections.session(label)
        self.log = log
        self.note = note
        self.denials = DenialNotes(note)
        self.shadow = shadow
        self.answered: OrderedDict[str, int] = OrderedDict()  # id key -> answers not cancelled
        self.warned: OrderedDict[str, str] = OrderedDict()  # id key -> warning (warn_at)
        self.line_number = 0
        self.counts: Any = None
        """A ``telemetry.counts.CallCounts`` that hears each verdict (``--otel``), or None."""

    def close(self) -> None:
        """The client has gone: the denial notes still counted are summed up."""
        with self.lock:
            self.denials.close()

    def route_line(self, line: bytes) -> Routed:
        """One line from the client (with its line end, if any)."""
        with self.lock:
            if self.relaying:
                self.lock.wait_for(lambda: not self.relaying, RESULT_WAIT)
            return self._route_line(line)

    def relay_server_line(self, line: bytes, write: Callable[[bytes], None]) -> None:
        """One line from the server: ``write`` it to the client (with the warning of a
        warned call added), then, when it answers an open call, tell the brake."""
        if self.warned:
            line = self._warn_response(line)
        if not self.connections.has_open(self.label):  # no answer to look for
            write(line)
            return
        with self.lock:
            self.relaying += 1
        try:
            write(line)
            self._read_answers(line)
        finally:
            with self.lock:
                self.relaying -= 1
                self.lock.notify_all()

    def _warn_response(self, line: bytes) -> bytes:
        """The line with the warning of each warned call it answers (one response, or
        a batch of them) appended to that response's content."""
        payload = _payload(line)
        with self.lock:
            if b'"id"' not in payload:
                return line
            try:
                value = parse_json(payload)
            except JSONInputError:
                return line
            if isinstance(value, dict):
                spans = [(0, value)]
            elif isinstance(value, list):
                spans = list(zip((a for a, _ in array_element_spans(payload)), value, strict=True))
            else:
                return line
            changed = payload
            for start, message in reversed(spans):  # from the end: earlier offsets hold
                if not isinstance(message, dict) or "id" not in message or "method" in message:
                    continue  # a request of the server's own may reuse a warned call's id
                warning = self.warned.pop(_id_key(message["id"]), None)
                if warning is not None:
                    changed = append_warning(changed, warning, start)
        return line if changed is payload else changed + line[len(payload) :]

    def _read_answers(self, line: bytes) -> None:
        payload = _payload(line)
        if b'"id"' not in payload:  # a notification, or not JSON-RPC at all
            return
        try:
            value = parse_json(payload)
        except JSONInputError:
            return  # not ours to judge: the client got what the server wrote
        with self.lock:
            for message, _path in messages(value):
                answer = self.connections.answer(message, self.label)
                if answer is None:
                    continue
                if self.results:
                    ((record, _verdict),) = judge((answer.result,), self.brake)
                    if record.__class__ is BadRecord:
                        self.log(error_record(record))  # type: ignore[arg-type]
                if answer.call_id is not None:  # its id may now name a new call
                    self.brake.end_call(answer.session, answer.call_id)

    def _route_line(self, line: bytes) -> Routed:
        self.line_number += 1
        payload = _payload(line)
        if not payload.strip(JSON_WHITESPACE):
            return Routed(line)  # a blank line: counted (as the reader counts it), no message
        try:
            value = parse_json(payload)
        except JSONInputError as exc:
            self.log(error_record(BadRecord(str(exc), self.line_number)))
            if self.shadow:
                self.note(f"shadow: line {self.line_number} is not strict JSON ({exc}); forwarded")
                return Routed(line)
            self.note(f"line {self.line_number}: not strict JSON ({exc}); answered, not forwarded")
            return Routed(None, parse_error(PROG, str(exc)) + b"\n")
        if isinstance(value, list):
            return self._route_batch(line, payload, value)
        keep, answer = self.route_message(value, None, lambda: payload)
        if keep:
            return Routed(line)
        return Routed(None, None if answer is None else answer + b"\n")

    def _route_batch(self, line: bytes, payload: bytes, batch: list[Any]) -> Routed:
        """A JSON-RPC batch: unchanged unless an element is withheld; then the other
        elements, each with its own bytes, are forwarded as a batch, and the
        proxy's answers go back as a batch of their own."""
        spans: list[tuple[int, int]] = []

        def element(index: int) -> Callable[[], bytes]:
            def raw() -> bytes:
                if not spans:
                    spans.extend(array_element_spans(payload))
                start, end = spans[index]
                return payload[start:end]

            return raw

        kept: list[int] = []
        answers: list[bytes] = []
        for index, (message, path) in enumerate(messages(batch)):
            keep, answer = self.route_message(message, path, element(index))
            if keep:
                kept.append(index)
            if answer is not None:
                answers.append(answer)
        if len(kept) == len(batch):
            return Routed(line)
        forward = None
        if kept:
            elements = b",".join(element(index)() for index in kept)
            forward = b"[" + elements + b"]" + line[len(payload) :]
        answer = b"[" + b",".join(answers) + b"]\n" if answers else None
        return Routed(forward, answer)

    def route_message(
        self, message: Any, path: str | None, raw: Callable[[], bytes]
    ) -> tuple[bool, bytes | None]:
        """Whether one message goes to the server, and the proxy's answer to it.

        ``raw`` returns the message's own bytes (for an answered request's id)."""
        record = self.connections.client_message(message, self.label, self.line_number, path)
        self._follow_connection()
        if record is None:
            if self._is_answered_cancellation(message):
                return False, None
            self._forwarding(message)
            return True, None
        ((record, verdict),) = judge((record,), self.brake)
        if verdict is None:  # the decoder or the hash could not read it: never forwarded
            self.log(error_record(record))  # type: ignore[arg-type]
            if self.shadow:
                self._forwarding(message)
                return True, None
            return False, self._refuse(message, record, raw)
        assert isinstance(record, ToolCall)
        self.log(verdict_record(record, verdict))
        if self.counts is not None:
            self.counts.judged(verdict, self.shadow)
        if not verdict.denied:
            return self._passing(message, record, verdict)
        id_bytes = _id_bytes(raw(), message)
        what = describe_denial(id_bytes, verdict)
        session = record.session
        if self.shadow:
            self.denials.denied(session, verdict, f"shadow: would deny {what}; forwarded", True)
            self._forwarding(message)
            return True, None
        self.denials.denied(session, verdict, f"denied {what}")
        self.connections.forget(message["id"], self.label)
        self._remember_answered(message["id"])
        if record.call_id is not None:  # answered here: its id may name a new call
            self.brake.end_call(session, record.call_id)
        return False, denial_answer(id_bytes, verdict.message, is_modern(message))

    def _passing(self, message: Any, record: ToolCall, verdict: Any) -> tuple[bool, bytes | None]:
        if verdict.duplicate and not self.shadow:  # sent again while open: one answer serves both
            self.note(
                f"line {self.line_number}: tools/call id {visible_id(message)} sent again "
                "before its answer: not forwarded (the answer to the first answers it)"
            )
            return False, None
        self.denials.passed(record.session)
        if verdict.warn_at is not None and not self.shadow:
            self._remember_warned(message["id"], verdict.warning)
        self._forwarding(message)
        return True, None

    def _refuse(self, message: Any, record: Any, raw: Callable[[], bytes]) -> bytes:
        """The answer to a message the proxy will not forward, and a note."""
        where = f"line {self.line_number}" + (f" {record.path}" if record.path else "")
        self.note(f"{where}: {record.message}; answered, not forwarded")
        if isinstance(message, dict) and "id" in message:
            self._remember_answered(message["id"])
        text = f"{PROG}: {record.message}; not forwarded"
        return request_error(_id_bytes(raw(), message), INVALID_REQUEST, text)

    def _follow_connection(self) -> None:
        """After a reconnect the old session's streak and answered ids are void."""
        session = self.connections.session(self.label)
        if session != self.session:
            self.brake.reset(self.session)
            self.answered.clear()
            self.warned.clear()
            self.denials.passed(self.session)
            self.session = session

    def _forwarding(self, message: Any) -> None:
        """A request the server gets: a cancellation of its id is the server's now."""
        if self.answered and isinstance(message, dict) and "id" in message:
            self.answered.pop(_id_key(message["id"]), None)

    def _is_answered_cancellation(self, message: Any) -> bool:
        """A cancellation of a request the proxy answered: dropped, once per answer."""
        if not self.answered or not isinstance(message, dict):
            return False
        if message.get("method") != "notifications/cancelled" or "id" in message:
            return False
        params = message.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            return False
        key = _id_key(params["requestId"])
        left = self.answered.get(key, 0)
        if not left:
            return False
        if left == 1:
            del self.answered[key]
        else:
            self.answered[key] = left - 1
        return True

    def _remember_warned(self, request_id: Any, warning: str) -> None:
        """The server's response to this id gets the warning (bounded, as answered ids)."""
        self.warned[_id_key(request_id)] = warning
        if len(self.warned) > MAX_ANSWERED_IDS:
            self.warned.popitem(last=False)

    def _remember_answered(self, request_id: Any) -> None:
        key = _id_key(request_id)
        self.answered[key] = self.answered.pop(key, 0) + 1
        if len(self.answered) > MAX_ANSWERED_IDS:
            self.answered.popitem(last=False)


def visible_id(message: Any) -> str:
    """A request's id for a note: its canonical JSON, escaped (never raw bytes)."""
    return visible(_id_key(message.get("id") if isinstance(message, dict) else None))
