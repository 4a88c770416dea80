"""What the gateway shows at ``GET /metrics`` (``--metrics``), in Prometheus text.

Families (every name starts ``loop_brake_``):

* ``calls_total{tool, rule, outcome}``: each ``tools/call`` the brake judged, by
  what became of it: ``passed``, ``warned`` (a policy's ``warn_at``), ``denied``,
  ``stopped`` (a policy's ``[stop]``), ``duplicate`` (its id already open: 409),
  ``shadowed`` (would have been denied, forwarded under ``--shadow``). ``rule`` is
  the verdict's (``streak`` without a policy; ``store`` for a call decided without
  the store). The denied count equals the ``deny`` lines of ``--log``.
* ``refused_total{reason}``: bodies answered 400 before any verdict (not strict
  JSON, a batch holding a call, a bad session name, no session, an unreadable call).
* read from ``counters.GatewayCounters`` at each scrape (the gateway's own counts,
  kept by ``store_calls``, ``limits`` and ``decide``): ``fail_open_total{reason}``
  (calls let through uncounted: ``deadline``, past ``--store-deadline``, or
  ``store_failure``; 0 under ``--fail-closed``, where they are denials with
  ``rule="store"``), ``store_seconds`` (a histogram of each store round trip as
  the gateway waited for it, from its latency hooks; with ``--store``),
  ``store_decisions_total``, ``store_ends_late_total``, ``sessions_held`` (in
  memory; absent with ``--store``, which keeps its own), ``sessions_evicted_total
  {reason}`` (``cap``, ``idle``), ``clients_refused_total{reason}``.

Never an argument: nothing here sees one (a verdict holds the tool name, the
session key and a hash prefix). Never a session name either, unless the operator
asks (``sessions=True``, ``--metrics-sessions``: then ``session_calls_total{session,
outcome}``), since a name a client chose may be a secret. Client-chosen label
values are bounded (``MAX_LABELS`` distinct tools, and sessions): past that, a
call is counted without its ``tool`` (or ``session``) label and with
``overflow="true"``, so totals stay exact and memory bounded.
"""

from __future__ import annotations

import threading
from typing import Any

from ..core.verdicts import Verdict
from ..mcp_shared.prometheus import CONTENT_TYPE, Histogram, family, series
from .tenants import tenant_of

__all__ = [
    "GatewayMetrics",
    "MAX_LABELS",
    "STORE_BOUNDS",
    "metrics_endpoint",
    "outcome",
]

MAX_LABELS = 1000  # distinct tool names (and session names) given a series of their own
STORE_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
PATH = "/metrics"
OVERFLOW = ("overflow", "true")
REFUSALS = ("not_json", "batch", "session_name", "no_session", "unreadable_call")
# Series that exist from the start at 0, so a rate() or an alert sees their first rise.


def outcome(verdict: Verdict, shadow: bool) -> str:
    """What became of a judged call (the ``outcome`` label)."""
    if verdict.denied:
        if shadow:
            return "shadowed"
        return "stopped" if verdict.stop else "denied"
    if verdict.duplicate and not shadow:
        return "duplicate"
    return "warned" if verdict.warned else "passed"


class _Bounded:
    """Client-chosen label values, at most ``limit`` distinct ones (first come)."""

    __slots__ = ("limit", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()

    def label(self, name: str, value: str) -> tuple[str, str]:
        if value in self.seen:
            return (name, value)
        if len(self.seen) < self.limit:
            self.seen.add(value)
            return (name, value)
        return OVERFLOW


class GatewayMetrics:
    """The gateway's counters; safe to update from several threads."""

    def __init__(self, *, sessions: bool = False, max_labels: int = MAX_LABELS) -> None:
        self.show_sessions = sessions
        self._lock = threading.Lock()
        self._tools = _Bounded(max_labels)
        self._sessions = _Bounded(max_labels)
        self.calls: dict[tuple[tuple[str, str], str, str, str | None], int] = {}
        self.session_calls: dict[tuple[tuple[str, str], str], int] = {}
        self.refusals: dict[str, int] = dict.fromkeys(REFUSALS, 0)
        self.store_latency = Histogram(STORE_BOUNDS)
        self._gateway: Any = None

    # -- what the gateway tells it -------------------------------------------------

    def watch(self, gateway: Any) -> None:
        """Read ``gateway`` (a ``decide.GatewayBrake``: its ``LoopBrake`` and its
        ``GatewayCounters``) at each scrape, and hear each store round trip."""
        self._gateway = gateway
        gateway.counters.store_latency.append(self._store_seconds)

    def _store_seconds(self, seconds: float) -> None:
        with self._lock:
            self.store_latency.observe(seconds)

    def judged(self, verdict: Verdict, shadow: bool = False) -> None:
        """One ``tools/call`` judged."""
        what = outcome(verdict, shadow)
        rule = verdict.rule or "streak"
        tenant = tenant_of(verdict.session_id)  # a name the operator chose, never a client
        with self._lock:
            key = (self._tools.label("tool", verdict.tool_name), rule, what, tenant)
            self.calls[key] = self.calls.get(key, 0) + 1
            if self.show_sessions:
                where = (self._sessions.label("session", verdict.session_id), what)
                self.session_calls[where] = self.session_calls.get(where, 0) + 1

    def refused(self, reason: str) -> None:
        """A body answered 400 before any verdict (``reason``: a word of ours)."""
        with self._lock:
            self.refusals[reason] = self.refusals.get(reason, 0) + 1

    # -- the scrape ----------------------------------------------------------------

    def render(self) -> bytes:
        """The whole scrape, in the text format."""
        with self._lock:
            lines = self._lines()
        return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace")

    def _lines(self) -> list[str]:
        out: list[str] = []
        out += family(
            "loop_brake_calls_total",
            "counter",
            "tools/call requests judged, by tool, rule and outcome "
            "(passed, warned, denied, stopped, duplicate, shadowed).",
            (
                series("loop_brake_calls_total", _call_labels(tool, rule, what, tenant), n)
                for (tool, rule, what, tenant), n in sorted(self.calls.items(), key=_order)
            ),
        )
        if self.show_sessions:
            out += family(
                "loop_brake_session_calls_total",
                "counter",
                "tools/call requests judged, by session key and outcome (--metrics-sessions).",
                (
                    series("loop_brake_session_calls_total", [session, ("outcome", what)], n)
                    for (session, what), n in sorted(self.session_calls.items())
                ),
            )
        out += family(
            "loop_brake_refused_total",
            "counter",
            "Requests answered 400 before any verdict, by reason.",
            _by("loop_brake_refused_total", "reason", self.refusals),
        )
        out += self._counted()
        return out

    def _counted(self) -> list[str]:
        """What ``GatewayCounters`` and the brake hold, read now."""
        gateway = self._gateway
        if gateway is None:
            return []
        counters, brake = gateway.counters, gateway.brake
        opened = {
            "deadline": counters.fail_open_deadline,
            "store_failure": counters.fail_open_store,
        }
        if brake.fail_closed:  # those calls were denied (rule "store"), not let through
            opened = dict.fromkeys(opened, 0)
        out = family(
            "loop_brake_fail_open_total",
            "counter",
            "Calls let through uncounted because the store did not decide, by reason.",
            _by("loop_brake_fail_open_total", "reason", opened),
        )
        if gateway.calls is not None:
            out += family(
                "loop_brake_store_seconds",
                "histogram",
                "Seconds each store round trip took as the gateway waited for it "
                "(queueing included; at most --store-deadline).",
                self.store_latency.lines("loop_brake_store_seconds", ()),
            )
            out += _single(
                "loop_brake_store_decisions_total",
                "Calls whose decision asked the store.",
                counters.store_decisions,
            )
            out += _single(
                "loop_brake_store_ends_late_total",
                "Ends of exchanges the store did not hear within --store-deadline.",
                counters.end_calls_late,
            )
        else:
            out += family(
                "loop_brake_sessions_held",
                "gauge",
                "Sessions whose state this process holds in memory.",
                [series("loop_brake_sessions_held", (), sum(len(b) for b in gateway.brakes))],
            )
        evicted = {"cap": gateway.evictions, "idle": counters.sessions_expired}
        out += family(
            "loop_brake_sessions_evicted_total",
            "counter",
            "Sessions dropped from memory: past --max-sessions (cap) or --session-idle (idle).",
            _by("loop_brake_sessions_evicted_total", "reason", evicted),
        )
        refused = {
            "max_connections": counters.connections_refused,
            "request_timeout": counters.requests_timed_out,
            "body_too_large": counters.bodies_too_large,
        }
        out += family(
            "loop_brake_clients_refused_total",
            "counter",
            "Connections or requests the gateway's bounds refused or cut, by bound.",
            _by("loop_brake_clients_refused_total", "reason", refused),
        )
        return out


def _call_labels(
    tool: tuple[str, str], rule: str, what: str, tenant: str | None
) -> list[tuple[str, str]]:
    labels = [tool, ("rule", rule), ("outcome", what)]
    return labels if tenant is None else [("tenant", tenant), *labels]


def _order(item: tuple[tuple[Any, ...], int]) -> tuple[Any, ...]:
    (tool, rule, what, tenant), _count = item
    return (tenant or "", tool, rule, what)


def _single(name: str, help_text: str, value: int) -> list[str]:
    return family(name, "counter", help_text, [series(name, (), value)])


def _by(name: str, label: str, counts: dict[str, int]) -> list[str]:
    return [series(name, [(label, key)], n) for key, n in sorted(counts.items())]


def metrics_endpoint(app: Any, metrics: GatewayMetrics) -> Any:
    """``app`` (the gateway) answering ``GET /metrics`` itself, with ``metrics``'s
    scrape; every other request, and any request the gateway would refuse for its
    ``Host`` or ``Origin``, is the gateway's."""

    from starlette.requests import Request

    async def served(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope.get("path") == PATH
            and scope.get("method") in ("GET", "HEAD")
            and app._allowed(Request(scope))  # the gateway's Host and Origin rule
        ):
            body = metrics.render()
            headers = [
                (b"content-type", CONTENT_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            head = scope.get("method") == "HEAD"
            await send({"type": "http.response.body", "body": b"" if head else body})
            return
        await app(scope, receive, send)

    return served
