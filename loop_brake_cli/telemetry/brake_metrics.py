"""What the library and ``mcp-proxy`` count about one ``LoopBrake``, as metric families.

The proxy counts each verdict it acts on (``ClientRouter``: it knows the shadow
mode); the library counts through the brake's ``counts`` hook, which
``LoopBrake.check`` and the attach seams call (``export_metrics``). The rest is
read from the brake when an exporter collects: calls let through uncounted
because the store failed (``fail_open_total{reason="store_failure"}``; 0 under
``fail_closed``, where they are ``calls_total{rule="store",outcome="denied"}``),
sessions held in memory (absent with a store, which keeps its own) and sessions
evicted (``cap``: past ``max_sessions``; ``idle``: past ``session_idle``). The
names are the gateway's ``/metrics`` families where they apply (docs/metrics.md).
"""

from __future__ import annotations

from typing import Any

from .counts import MAX_LABELS, CallCounts, Family, by_reason

__all__ = ["BrakeMetrics"]


class BrakeMetrics:
    """A brake's families: ``counts`` (the calls judged) and what ``brake`` holds."""

    def __init__(self, *, sessions: bool = False, max_labels: int = MAX_LABELS) -> None:
        self.counts = CallCounts(sessions=sessions, max_labels=max_labels)
        self.brake: Any = None

    def watch(self, brake: Any) -> None:
        """Read ``brake`` (a ``LoopBrake``) at each collection."""
        self.brake = brake

    def families(self) -> list[Family]:
        """Every family, read now (the same names before and after ``watch``)."""
        brake = self.brake
        failures = 0 if brake is None or brake.fail_closed else brake.store_failures
        out = self.counts.families()
        out.append(
            by_reason(
                "loop_brake_fail_open_total",
                "counter",
                "Calls let through uncounted because the store did not decide, by reason.",
                {"store_failure": failures},
            )
        )
        held = [] if brake is None or brake.store is not None else [((), len(brake))]
        out.append(
            Family(
                "loop_brake_sessions_held",
                "gauge",
                "Sessions whose state this process holds in memory.",
                held,
            )
        )
        evicted = {"cap": 0, "idle": 0}
        if brake is not None:
            evicted = {"cap": brake.evictions, "idle": brake.expired}
        out.append(
            by_reason(
                "loop_brake_sessions_evicted_total",
                "counter",
                "Sessions dropped from memory: past max_sessions (cap) or session_idle (idle).",
                evicted,
            )
        )
        return out
