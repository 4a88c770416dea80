"""The gateway's decision for one POSTed body: forward it, or answer it here.

No verdict logic of its own: a ``tools/call`` is decoded by ``wire.mcp.decode_call``
and judged by ``pipeline.judge`` over one ``LoopBrake`` whose sessions are the
keys of ``keys.session_key``; its verdict line is ``records.verdict_record`` with
``sessionSource`` added, and a denial is answered with the stdio proxy's
``mcp_shared.answers.denial_answer`` (a tool error, ``isError: true``, for the
same id). Anything else is forwarded as it came (bytes unchanged); so is a body that is not JSON
(the server answers it), after an error line in the log.

A call a policy's ``warn_at`` warns is forwarded, and ``warned`` holds its id and
the warning until the next decision: the application adds the warning to the
upstream's response to that id (``mcp_shared.answers.append_warning``).

A JSON-RPC batch (removed from MCP in 2025-06-18) is forwarded unless it holds a
``tools/call``: that is refused, as one decision per body is all the gateway makes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, ToolCall, error_record, verdict_record
from ..mcp_shared.answers import INVALID_REQUEST, denial_answer, is_modern, request_error
from ..mcp_shared.denials import describe_denial
from ..mcp_shared.spans import member_span
from ..readers.pipeline import judge
from ..readers.wire.mcp import continues_call, decode_call
from .keys import SessionNameError, call_scope, session_key

__all__ = ["Answer", "GatewayBrake"]

Answer = tuple[int, bytes]
"""The gateway's own answer: an HTTP status and a JSON body."""


NO_KEY = (
    "loop-brake mcp-gateway: this tools/call names no session, so it cannot be counted "
    'apart from other clients\' calls: send params._meta["loop-brake/session"] or a '
    "Loop-Brake-Session header (or an Authorization header), or start the gateway with "
    "--anonymous connection"
)


class GatewayBrake:
    """The brake of one gateway process: every session's streak, the log, the notes.

    ``log`` takes each verdict record, ``note`` one line for people (stderr)."""

    def __init__(
        self,
        max_repeats: int,
        log: Callable[[dict[str, Any]], None],
        note: Callable[[str], None],
        *,
        shadow: bool = False,
        anonymous: str = "refuse",
        policy: Any = None,
        store: Any = None,
        fail_closed: bool = False,
    ) -> None:
        # With a store (--store redis://...) every gateway process behind one address
        # counts a session's calls in the same streak; its failures are the store's
        # rule (allowed uncounted, or denied with fail_closed), one note each way.
        self.brake = LoopBrake(
            max_repeats, policy=policy, store=store, fail_closed=fail_closed, warn=note
        )
        self.log = log
        self.note = note
        self.shadow = shadow
        self.anonymous = anonymous
        self.warned: tuple[Any, str] | None = None
        """The last decision's warned call: (its JSON-RPC id, the warning), else None."""

    def decide(self, body: bytes, headers: Mapping[str, str], peer: str | None) -> Answer | None:
        """None to forward ``body`` upstream, else the gateway's answer to it."""
        self.warned = None
        try:
            value = parse_json(body)
        except JSONInputError as exc:
            self.log(error_record(BadRecord(str(exc))))
            return None
        if isinstance(value, list):
            if any(_is_call(item) for item in value):
                message = (
                    "loop-brake mcp-gateway: a JSON-RPC batch holding tools/call is not "
                    "accepted (batches were removed from MCP in 2025-06-18); send each call alone"
                )
                return 400, request_error(b"null", INVALID_REQUEST, message)
            return None
        if not _is_call(value):
            return None
        span = member_span(body, "id")
        id_bytes = body[span[0] : span[1]] if span else b"null"
        try:
            key = session_key(value, headers, peer, self.anonymous)
        except SessionNameError as exc:
            text = f"loop-brake mcp-gateway: {exc}"
            self.log(error_record(BadRecord(str(exc), None, "$.params._meta")))
            return 400, request_error(id_bytes, INVALID_REQUEST, text)
        if key is None:
            self.log(error_record(BadRecord("no session key (refused)")))
            return 400, request_error(id_bytes, INVALID_REQUEST, NO_KEY)
        record = decode_call(value, key.name)
        scope = call_scope(headers, peer)
        if scope is not None and isinstance(record, ToolCall) and record.call_id is not None:
            record.call_id = f"{scope}/{record.call_id}"  # ids are unique per connection only
        ((record, verdict),) = judge((record,), self.brake)
        if verdict is None:
            self.log(error_record(record))  # type: ignore[arg-type]
            return None
        assert isinstance(record, ToolCall)
        line = verdict_record(record, verdict)
        line["sessionSource"] = key.source
        self.log(line)
        if not verdict.denied:
            if verdict.warn_at is not None and not self.shadow:
                self.warned = (value["id"], verdict.warning)  # type: ignore[assignment]
            return None
        what = f"{describe_denial(id_bytes, verdict)} in session {key.name} ({key.source})"
        if self.shadow:
            self.note(f"shadow: would deny {what}; forwarded")
            return None
        self.note(f"denied {what}")
        return 200, denial_answer(id_bytes, verdict.message, is_modern(value))


def _is_call(message: Any) -> bool:
    """A tools/call request that counts (``wire.mcp``'s rule: not a continuation)."""
    return (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and "id" in message
        and not continues_call(message)
    )
