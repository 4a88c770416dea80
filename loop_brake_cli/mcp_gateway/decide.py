"""The gateway's decision for one POSTed body: forward it, or answer it here.

No verdict logic of its own: a ``tools/call`` is decoded by ``wire.mcp.decode_call``
and counted by ``LoopBrake.observe`` on ``LoopBrake.digest`` (as ``pipeline.judge``
counts) over one ``LoopBrake`` whose sessions are the keys of ``keys.session_key``;
with a store, the count runs in a worker thread (``store_calls``: the event loop
never waits on the store, and a decision waits at most ``--store-deadline``, then
fails open, counted in ``counters``); its verdict line is ``records.verdict_record`` with
``sessionSource`` added, and a denial is answered with the stdio proxy's
``mcp_shared.answers.denial_answer`` (a tool error, ``isError: true``, for the
same id). Anything else that is a JSON-RPC message goes upstream as it came
(bytes unchanged).

Nothing reaches the upstream that the brake did not judge (issue 36.2): a body
that is not strict JSON (``NaN``, a byte-order mark, another encoding, text after
the value) is HTTP 400 with a JSON-RPC parse error; a ``tools/call`` the decoder
cannot read (no params object, a name that is not a string, arguments that
cannot be hashed) is HTTP 400 with an invalid-request error; a JSON-RPC batch
(removed from MCP in 2025-06-18) holding a ``tools/call`` is HTTP 400 as well,
as one decision per body is all the gateway makes. No answer quotes the input.

An id counts once while its request is open (issue 36.3): the call's id, scoped
where it is unique (``keys.scoped_id``), marks a duplicate until the exchange
that carried it ends, when the application calls ``answered`` and the brake is
told (``LoopBrake.end_call``). A duplicate (the same request sent again while
open, even over a new connection of its MCP session) is HTTP 409, never
forwarded, since the upstream would run it a second time; a duplicate of a
denied call is denied again. After its answer the same id is a new call.

A ``tools/call`` that retries a call whose upstream answer asked for input (the
2026-07-28 ``input_required`` flow: same session, same tool and arguments, the
``requestState`` that answer gave) continues that call and is not counted; the
application reports such answers through ``asked`` as it sees them. Any other request
carrying ``inputResponses`` or ``requestState`` is a call like any other.

A call a policy's ``warn_at`` warns is forwarded with its warning in the
``Forward`` returned, for the application to add to the upstream's response to
that id (never under ``--shadow``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, call_digest, parse_json
from ..core.records import BadRecord, ToolCall, error_record, verdict_record
from ..core.verdicts import Verdict
from ..mcp_shared.answers import (
    INVALID_REQUEST,
    denial_answer,
    is_modern,
    parse_error,
    request_error,
)
from ..mcp_shared.denials import DenialNotes, describe_denial
from ..mcp_shared.spans import member_span
from ..readers.wire.mcp import continues_call, decode_call
from ..render.visible import visible
from .counters import GatewayCounters
from .keys import NAMING_SOURCES, SessionNameError, call_scope, scoped_id, session_key
from .metrics import GatewayMetrics
from .store_calls import DEFAULT_DEADLINE, DEFAULT_WORKERS, StoreCalls
from .tenants import Tenants, tenant_of

__all__ = ["Answer", "DUPLICATE", "Forward", "GatewayBrake", "MAX_AWAITING", "Wait"]

PROG = "loop-brake mcp-gateway"
DUPLICATE = 409  # HTTP: the same request is already open
MAX_AWAITING = 4096  # calls whose upstream asked for input, awaiting their retry
MAX_EXCHANGES = 65536  # forwarded calls whose exchange has not ended (the oldest forgotten)

Answer = tuple[int, bytes]
"""The gateway's own answer: an HTTP status and a JSON body."""


class Forward:
    """A body the gateway forwards, and what its exchange means for the brake.

    ``request_id``: the JSON-RPC id of a ``tools/call`` (None for anything else: its
    answer is not looked at); ``warning``: the text to add to the upstream's response
    to it (``warn_at``); ``session``/``call_id``: the streak and the scoped id to free
    when the exchange ends (``call_id`` None: nothing to free); ``call``: its tool and
    arguments, which a retry must repeat if the upstream asks for input."""

    __slots__ = ("request_id", "warning", "session", "call_id", "call", "done", "ended")

    def __init__(
        self,
        request_id: Any = None,
        warning: str | None = None,
        session: str | None = None,
        call_id: Any = None,
        call: tuple[str, Any] | None = None,
    ) -> None:
        self.request_id = request_id
        self.warning = warning
        self.session = session
        self.call_id = call_id
        self.call = call
        self.done = False
        self.ended = asyncio.Event()  # set when the exchange ends (``GatewayBrake.answered``)

    @property
    def watched(self) -> bool:
        """Whether the upstream's answer matters to the brake (a tools/call's)."""
        return self.session is not None


PLAIN = Forward()
"""A body forwarded with nothing to watch (not a tools/call)."""


class Wait:
    """The call's id is open in an exchange of the same session: wait until ``ended``
    (it may be ending as the client, having read its answer, reuses the id), then
    decide again with ``wait=False``."""

    __slots__ = ("ended",)

    def __init__(self, ended: asyncio.Event) -> None:
        self.ended = ended


NO_KEY = (
    "loop-brake mcp-gateway: this tools/call names no session, so it cannot be counted "
    'apart from other clients\' calls: send params._meta["loop-brake/session"] or a '
    "Loop-Brake-Session header (or an Authorization header), or start the gateway with "
    "--anonymous connection"
)
_HOW_TO_NAME = {
    "meta": 'params._meta["loop-brake/session"]',
    "header": "a Loop-Brake-Session header",
    "mcp-session-id": "an Mcp-Session-Id (the initialize handshake)",
    "authorization": "an Authorization header",
}


def no_key_message(believe: tuple[str, ...]) -> str:
    """What a refused call without a key is told: ``NO_KEY``, or, when the gateway
    believes fewer sources (``--session-from``), only the ones that would be believed."""
    if believe == NAMING_SOURCES:
        return NO_KEY
    ways = " or ".join(_HOW_TO_NAME[source] for source in believe)
    return (
        "loop-brake mcp-gateway: this tools/call names no session this gateway believes "
        f"(--session-from {','.join(believe)}), so it cannot be counted apart from other "
        f"clients' calls: send {ways}, or start the gateway with --anonymous connection"
    )


BATCH = (
    "loop-brake mcp-gateway: a JSON-RPC batch holding tools/call is not accepted "
    "(batches were removed from MCP in 2025-06-18); send each call alone"
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
        session_from: tuple[str, ...] = NAMING_SOURCES,
        policy: Any = None,
        store: Any = None,
        fail_closed: bool = False,
        counters: GatewayCounters | None = None,
        store_workers: int = DEFAULT_WORKERS,
        store_deadline: float = DEFAULT_DEADLINE,
        max_sessions: int | None = None,
        session_idle: float | None = None,
        metrics: GatewayMetrics | None = None,
        tenants: Tenants | None = None,
    ) -> None:
        # With a store (--store redis://...) every gateway process behind one address
        # counts a session's calls in the same streak; its failures are the store's
        # rule (allowed uncounted, or denied with fail_closed), one note each way.
        # Without one, sessions live in this process's memory: at most ``max_sessions``
        # (the least recently used evicted), each forgotten after ``session_idle``
        # seconds unused (``expire``, from the application's housekeeping).
        bounded = store is None and max_sessions is not None

        def brake(limit: Any, rules: Any) -> LoopBrake:
            return LoopBrake(
                limit,
                max_sessions=max_sessions if bounded else None,
                session_idle=session_idle if bounded else None,
                policy=rules,
                store=store,
                fail_closed=fail_closed,
                warn=note,
            )

        # With ``tenants`` (--tenants FILE) each tenant counts under its own limits and
        # policy, in its own sessions (``tenant:<name>/<key>``); the rest, the default's.
        self.tenants = tenants
        if tenants is not None:
            max_repeats, policy = tenants.default.max_repeats or max_repeats, tenants.default.policy
        self.brake = brake(max_repeats, policy)
        """The default tenant's brake (every call's, without ``tenants``)."""
        self.tenant_brakes: dict[str, LoopBrake] = {}
        for tenant in tenants.tenants if tenants is not None else ():
            self.tenant_brakes[tenant.name] = brake(  # type: ignore[index]
                tenant.max_repeats or max_repeats, tenant.policy
            )
        self.log = log
        self.note = note
        self.denials = DenialNotes(note)
        self.shadow = shadow
        self.anonymous = anonymous
        self.session_from = session_from
        """The sources a call's session key may come from (``--session-from``)."""
        self.no_key = no_key_message(session_from)
        self.awaiting: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        self.exchanges: OrderedDict[tuple[str, Any], Forward] = OrderedDict()
        self.counters = counters or GatewayCounters()
        self.calls: StoreCalls | None = None
        """With a store: its round trips, off the event loop (``store_calls``)."""
        if store is not None:
            self.calls = StoreCalls(
                self.brake, self.counters, workers=store_workers, deadline=store_deadline
            )
        self.metrics = metrics if metrics is not None else GatewayMetrics()
        """What ``GET /metrics`` shows (``--metrics``): counted whether served or not."""
        self.metrics.watch(self)

    def close(self) -> None:
        """The gateway stops: the denials still being counted are summed up."""
        self.denials.close()
        if self.calls is not None:
            self.calls.close()

    async def drain(self) -> None:
        """The gateway stops: ends of exchanges still being told to the store are
        awaited (``StoreCalls.drain``)."""
        if self.calls is not None:
            await self.calls.drain()

    @property
    def brakes(self) -> list[LoopBrake]:
        """Every tenant's brake, the default's first."""
        return [self.brake, *self.tenant_brakes.values()]

    @property
    def evictions(self) -> int:
        """Sessions evicted from memory past ``max_sessions``, every tenant's."""
        return sum(brake.evictions for brake in self.brakes)

    def brake_of(self, session: str) -> LoopBrake:
        """The brake a session key counts in: its tenant's (``tenants.tenant_of``)."""
        name = tenant_of(session)
        return self.brake if name is None else self.tenant_brakes[name]

    def expire(self) -> int:
        """Forget the in-memory sessions idle past ``session_idle``; how many. Keeps
        ``counters`` up to date with the table's evictions and expiries."""
        removed = sum(brake.expire() for brake in self.brakes)
        self.counters.sessions_expired += removed
        self.counters.sessions_evicted = self.evictions
        return removed

    def decide(
        self, body: bytes, headers: Mapping[str, str], peer: str | None, wait: bool = True
    ) -> Any:
        """A ``Forward`` to send ``body`` upstream, else the gateway's ``Answer`` to it;
        a ``Wait`` (only with ``wait``) when its id is open in an exchange. Counts in
        this thread: the in-memory brake, or a test's (the application awaits
        ``decide_async``, which asks a store in the worker pool)."""
        step = self._prepare(body, headers, peer, wait)
        if not isinstance(step, _Counting):
            return step
        call = step.record
        brake = self.brake_of(call.session)
        verdict = brake.observe(call.session, call.tool, step.digest, call.call_id)
        return self._conclude(step, verdict)

    async def decide_async(
        self, body: bytes, headers: Mapping[str, str], peer: str | None, wait: bool = True
    ) -> Any:
        """``decide`` for the event loop: everything but the store's round trip is done
        here; that round trip (only a ``tools/call`` makes one) runs in the worker pool
        (``store_calls``), so no other request waits for it."""
        step = self._prepare(body, headers, peer, wait)
        if not isinstance(step, _Counting):
            return step
        call = step.record
        brake = self.brake_of(call.session)
        if self.calls is None:
            verdict = brake.observe(call.session, call.tool, step.digest, call.call_id)
            self.counters.sessions_evicted = self.evictions
        else:
            verdict = await self.calls.count(
                call.session, call.tool, step.digest, call.call_id, brake
            )
        return self._conclude(step, verdict)

    def _prepare(
        self, body: bytes, headers: Mapping[str, str], peer: str | None, wait: bool
    ) -> Any:
        """Everything before the count: the gateway's own answer, a ``Forward`` that
        needs none, a ``Wait``, or the ``_Counting`` of a call to count."""
        try:
            value = parse_json(body)
        except JSONInputError as exc:
            self.log(error_record(BadRecord(str(exc))))
            self.metrics.refused("not_json")
            return 400, parse_error(PROG, str(exc))
        if isinstance(value, list):
            if any(_is_call(item) for item in value):
                self.metrics.refused("batch")
                return 400, request_error(b"null", INVALID_REQUEST, BATCH)
            return PLAIN
        if not _is_call(value):
            return PLAIN
        try:
            key = session_key(value, headers, peer, self.anonymous, self.session_from)
        except SessionNameError as exc:
            text = f"{PROG}: {exc}"
            self.log(error_record(BadRecord(str(exc), None, "$.params._meta")))
            self.metrics.refused("session_name")
            return 400, request_error(_id_bytes(body), INVALID_REQUEST, text)
        if key is None:
            self.log(error_record(BadRecord("no session key (refused)")))
            self.metrics.refused("no_session")
            return 400, request_error(_id_bytes(body), INVALID_REQUEST, self.no_key)
        if self.tenants is not None:  # the tenant's namespace: its own sessions
            key, _tenant = self.tenants.key(key, headers)
        record = decode_call(value, key.name)
        if isinstance(record, ToolCall):
            if continues_call(value) and self._continues(key.name, record, value):
                return Forward(value["id"], None, key.name, None, (record.tool, record.args))
            record.call_id = scoped_id(call_scope(headers, peer), record.call_id)
            open_exchange = self.exchanges.get((key.name, record.call_id))
            if wait and open_exchange is not None:
                return Wait(open_exchange.ended)
            try:  # the digest ``pipeline.judge`` counts on (a policy's, under args_ignore)
                digest = self.brake_of(key.name).digest(record.tool, record.args)
            except (JSONInputError, TypeError) as exc:
                record = BadRecord(str(exc), record.line, record.path)
            else:
                return _Counting(value, body, key, record, digest)
        # the decoder or the hash could not read it: never forwarded
        self.log(error_record(record))
        self.metrics.refused("unreadable_call")
        text = f"{PROG}: {record.message}; not forwarded"
        return 400, request_error(_id_bytes(body), INVALID_REQUEST, text)

    def _conclude(self, step: _Counting, verdict: Verdict) -> Any:
        """The call counted: its verdict logged and acted on."""
        value, key, record = step.value, step.key, step.record
        line = verdict_record(record, verdict)
        line["sessionSource"] = key.source
        self.log(line)
        self.metrics.judged(verdict, self.shadow)
        session = key.name
        if not verdict.denied:
            if verdict.duplicate and not self.shadow:
                text = (
                    f"{PROG}: this tools/call id is already open in its session (sent again "
                    "before its answer); not forwarded"
                )
                return DUPLICATE, request_error(step.id_bytes(), INVALID_REQUEST, text)
            self.denials.passed(session)
            warning = verdict.warning if verdict.warn_at is not None and not self.shadow else None
            call = (record.tool, record.args)
            return self._open(Forward(value["id"], warning, session, record.call_id, call))
        id_bytes = step.id_bytes()
        what = f"{describe_denial(id_bytes, verdict)} in session {visible(session)} ({key.source})"
        if self.shadow:
            self.denials.denied(session, verdict, f"shadow: would deny {what}; forwarded", True)
            call = (record.tool, record.args)
            return self._open(Forward(value["id"], None, session, record.call_id, call))
        self.denials.denied(session, verdict, f"denied {what}")
        if record.call_id is not None:  # answered here: its id may name a new call
            self._end_call(session, record.call_id, _nothing)
        return 200, denial_answer(id_bytes, verdict.message, is_modern(value))

    def asked(self, forward: Forward, request_state: Any = None) -> None:
        """The upstream's answer to a forwarded call asked for input (``request_state``:
        the state it gave): one retry of that call continues it. Said as soon as the
        answer is seen, before it reaches the client, so the retry finds it."""
        if forward.call is None or forward.session is None:
            return
        key = _retry_key(forward.session, *forward.call, request_state)
        if key is not None:
            self.awaiting[key] = None
            self.awaiting.move_to_end(key)
            if len(self.awaiting) > MAX_AWAITING:
                self.awaiting.popitem(last=False)

    def reads_results(self, forward: Forward) -> bool:
        """Whether the result of a forwarded call is worth reading: its brake's policy
        has a progress mode or ``[same_error]`` (``LoopBrake.progress``)."""
        return forward.session is not None and self.brake_of(forward.session).progress

    async def result(self, forward: Forward, result: Any) -> None:
        """The upstream's result to a forwarded call (``result``: the response's
        ``result``, or ``{"error": ...}``), told before it reaches the client: under a
        progress mode a changed result restarts the streak, under ``[same_error]`` an
        identical error counts (``LoopBrake.observe_result``: a digest, then forgotten).
        With a store, in the worker pool, within the deadline."""
        if forward.session is None:
            return
        brake = self.brake_of(forward.session)
        if self.calls is None:
            brake.observe_result(forward.session, forward.call_id, result)
        else:
            await self.calls.result(forward.session, forward.call_id, result, brake)

    def answered(self, forward: Forward) -> None:
        """The exchange of a forwarded call ended (answered, failed, or its client left):
        its id is free."""
        if forward.done:
            return
        forward.done = True
        if forward.session is None or forward.call_id is None:
            self._ended(forward)
            return
        # the exchange stays open (a request reusing the id waits) until the store heard
        self._end_call(forward.session, forward.call_id, lambda: self._ended(forward))

    def _ended(self, forward: Forward) -> None:
        forward.ended.set()
        if self.exchanges.get((forward.session, forward.call_id)) is forward:  # type: ignore[index]
            del self.exchanges[(forward.session, forward.call_id)]  # type: ignore[index]

    def _end_call(self, session: str, call_id: Any, then: Callable[[], None]) -> None:
        """The call's id may count again: told to the brake here (memory), or to the
        store in the background (``StoreCalls.end``); ``then()`` once it is told."""
        brake = self.brake_of(session)
        if self.calls is None:
            brake.end_call(session, call_id)
            then()
        else:
            self.calls.end(session, call_id, then, brake)

    def _open(self, forward: Forward) -> Forward:
        """A forwarded call whose exchange has begun (its id open until it ends)."""
        if forward.call_id is not None:
            key = (forward.session, forward.call_id)
            self.exchanges[key] = forward  # type: ignore[index]
            self.exchanges.move_to_end(key)  # type: ignore[arg-type]
            if len(self.exchanges) > MAX_EXCHANGES:
                self.exchanges.popitem(last=False)
        return forward

    def _continues(self, session: str, record: ToolCall, message: dict[str, Any]) -> bool:
        """A retry the upstream asked for: it continues its call (once)."""
        key = _retry_key(session, record.tool, record.args, message["params"].get("requestState"))
        if key is not None and key in self.awaiting:
            del self.awaiting[key]
            return True
        return False


class _Counting:
    """A ``tools/call`` read and keyed, to be counted: what ``_conclude`` needs after."""

    __slots__ = ("value", "body", "key", "record", "digest")

    def __init__(
        self, value: dict[str, Any], body: bytes, key: Any, record: ToolCall, digest: bytes
    ) -> None:
        self.value = value
        self.body = body
        self.key = key
        self.record = record
        self.digest = digest

    def id_bytes(self) -> bytes:
        """The call's id as the client wrote it: only for an answer the gateway writes
        (a forwarded call needs none, and finding it scans the whole body)."""
        return _id_bytes(self.body)


def _id_bytes(body: bytes) -> bytes:
    """The request's id as the client wrote it (``null`` if none)."""
    span = member_span(body, "id")
    return body[span[0] : span[1]] if span else b"null"


def _nothing() -> None:
    """Nothing waits on the end of a denied call (it never opened an exchange)."""


def _retry_key(session: str, tool: str, args: Any, state: Any) -> tuple[Any, ...] | None:
    """What a retry repeats: the session, the tool, the arguments' digest and the
    ``requestState`` (a string, or none); None when it cannot be one."""
    if state is not None and not isinstance(state, str):
        return None
    try:
        return session, tool, call_digest(tool, args), state
    except (TypeError, ValueError):
        return None


def _is_call(message: Any) -> bool:
    """A tools/call request (``wire.mcp``'s rule: a method and an ``id`` member)."""
    return isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message
