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

The calls are counted in ``telemetry.counts.CallCounts`` (shared with the proxy and
the library); ``families`` is what both renderers read: ``render`` here, and the
OpenTelemetry exporter under ``--otel`` (``telemetry.otel``).
"""

from __future__ import annotations

import threading
from typing import Any

from ..mcp_shared.prometheus import CONTENT_TYPE, Histogram, exposition
from ..telemetry.counts import MAX_LABELS, CallCounts, Family, by_reason, single
from .tenants import tenant_of

__all__ = ["GatewayMetrics", "MAX_LABELS", "STORE_BOUNDS", "metrics_endpoint"]

STORE_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
PATH = "/metrics"
REFUSALS = ("not_json", "batch", "session_name", "no_session", "unreadable_call")
# Series that exist from the start at 0, so a rate() or an alert sees their first rise.


class GatewayMetrics:
    """The gateway's counters; safe to update from several threads. Two renderers read
    the same ``families``: ``render`` (``GET /metrics``) and the OpenTelemetry exporter
    (``telemetry.otel``, ``--otel``)."""

    def __init__(self, *, sessions: bool = False, max_labels: int = MAX_LABELS) -> None:
        self.counts = CallCounts(sessions=sessions, max_labels=max_labels)
        self._lock = threading.Lock()
        self.refusals: dict[str, int] = dict.fromkeys(REFUSALS, 0)
        self.latency = Histogram(STORE_BOUNDS)
        self._gateway: Any = None

    # -- what the gateway tells it -------------------------------------------------

    def watch(self, gateway: Any) -> None:
        """Read ``gateway`` (a ``decide.GatewayBrake``: its ``LoopBrake`` and its
        ``GatewayCounters``) at each scrape, and hear each store round trip."""
        self._gateway = gateway
        gateway.counters.store_latency.append(self._store_seconds)

    def _store_seconds(self, seconds: float) -> None:
        with self._lock:
            self.latency.observe(seconds)

    def judged(self, verdict: Any, shadow: bool = False) -> None:
        """One ``tools/call`` judged."""
        # the tenant: a name the operator chose, never a client
        self.counts.judged(verdict, shadow, tenant_of(verdict.session_id))

    def refused(self, reason: str) -> None:
        """A body answered 400 before any verdict (``reason``: a word of ours)."""
        with self._lock:
            self.refusals[reason] = self.refusals.get(reason, 0) + 1

    def store_latency(self) -> tuple[list[Any], tuple[float, ...]] | None:
        """The hooks that hear each store round trip, and the buckets (None without
        ``--store``): for an exporter that records them itself."""
        gateway = self._gateway
        if gateway is None or gateway.calls is None:
            return None
        return gateway.counters.store_latency, STORE_BOUNDS

    # -- the scrape ----------------------------------------------------------------

    def render(self) -> bytes:
        """The whole scrape, in the text format."""
        lines = exposition(self.families())
        return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace")

    def families(self) -> list[Family]:
        """Every family, read now."""
        out = self.counts.families()
        with self._lock:
            refusals = dict(self.refusals)
        out.append(
            by_reason(
                "loop_brake_refused_total",
                "counter",
                "Requests answered 400 before any verdict, by reason.",
                refusals,
            )
        )
        return out + self._counted()

    def _counted(self) -> list[Family]:
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
        out = [
            by_reason(
                "loop_brake_fail_open_total",
                "counter",
                "Calls let through uncounted because the store did not decide, by reason.",
                opened,
            )
        ]
        if gateway.calls is not None:
            with self._lock:
                latency = self.latency.copy()
            out += [
                Family(
                    "loop_brake_store_seconds",
                    "histogram",
                    "Seconds each store round trip took as the gateway waited for it "
                    "(queueing included; at most --store-deadline).",
                    [],
                    latency,
                ),
                single(
                    "loop_brake_store_decisions_total",
                    "counter",
                    "Calls whose decision asked the store.",
                    counters.store_decisions,
                ),
                single(
                    "loop_brake_store_ends_late_total",
                    "counter",
                    "Ends of exchanges the store did not hear within --store-deadline.",
                    counters.end_calls_late,
                ),
            ]
        else:
            out.append(
                single(
                    "loop_brake_sessions_held",
                    "gauge",
                    "Sessions whose state this process holds in memory.",
                    sum(len(b) for b in gateway.brakes),
                )
            )
        evicted = {"cap": gateway.evictions, "idle": counters.sessions_expired}
        out.append(
            by_reason(
                "loop_brake_sessions_evicted_total",
                "counter",
                "Sessions dropped from memory: past --max-sessions (cap) or --session-idle (idle).",
                evicted,
            )
        )
        refused = {
            "max_connections": counters.connections_refused,
            "request_timeout": counters.requests_timed_out,
            "body_too_large": counters.bodies_too_large,
        }
        out.append(
            by_reason(
                "loop_brake_clients_refused_total",
                "counter",
                "Connections or requests the gateway's bounds refused or cut, by bound.",
                refused,
            )
        )
        return out


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
