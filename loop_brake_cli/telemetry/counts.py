"""The one place a front-end counts the calls it judged; the families it shows.

``CallCounts`` is what ``GET /metrics`` (the gateway's Prometheus text) and the
OpenTelemetry exporter (``otel``) both read: a call is counted once, here, and
each renderer reads the same numbers. It counts a verdict by tool, rule and
outcome (``passed``, ``warned``, ``denied``, ``stopped``, ``duplicate``,
``shadowed``: ``outcome``), and by session key only when the operator asks
(``sessions=True``: a name a client chose may be a secret). Client-chosen label
values are bounded (``MAX_LABELS`` distinct tools, and sessions): past that a
call is counted with ``overflow="true"`` instead of its label, so totals stay
exact and memory bounded. Never an argument: a ``Verdict`` holds none.

``Family`` is one metric as both renderers see it: its Prometheus name, kind
(``counter``, ``gauge`` or ``histogram``), help text and samples (labels, value),
or, for a histogram, its buckets. The OpenTelemetry instrument of a family is
named from it (``otel.instrument_name``).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

__all__ = ["CallCounts", "Family", "MAX_LABELS", "OVERFLOW", "outcome"]

MAX_LABELS = 1000  # distinct tool names (and session names) given a series of their own
OVERFLOW = ("overflow", "true")

Labels = tuple[tuple[str, str], ...]


class Family(NamedTuple):
    """One metric family: what a scrape shows and what an instrument reports."""

    name: str  # the Prometheus name (loop_brake_calls_total)
    kind: str  # counter, gauge or histogram
    help: str
    samples: list[tuple[Labels, int]]
    histogram: Any = None  # a prometheus.Histogram, for kind "histogram"


def outcome(verdict: Any, shadow: bool = False) -> str:
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


class CallCounts:
    """Judged calls by tool, rule and outcome (and tenant); safe from several threads."""

    def __init__(self, *, sessions: bool = False, max_labels: int = MAX_LABELS) -> None:
        self.show_sessions = sessions
        self.lock = threading.Lock()
        self._tools = _Bounded(max_labels)
        self._sessions = _Bounded(max_labels)
        self.calls: dict[tuple[tuple[str, str], str, str, str | None], int] = {}
        self.session_calls: dict[tuple[tuple[str, str], str], int] = {}

    def judged(self, verdict: Any, shadow: bool = False, tenant: str | None = None) -> None:
        """One ``tools/call`` judged (``tenant``: a name the operator chose, or None)."""
        what = outcome(verdict, shadow)
        rule = verdict.rule or "streak"
        with self.lock:
            key = (self._tools.label("tool", verdict.tool_name), rule, what, tenant)
            self.calls[key] = self.calls.get(key, 0) + 1
            if self.show_sessions:
                where = (self._sessions.label("session", verdict.session_id), what)
                self.session_calls[where] = self.session_calls.get(where, 0) + 1

    def families(self) -> list[Family]:
        """``loop_brake_calls_total`` (and ``loop_brake_session_calls_total`` when
        sessions are shown), read now."""
        with self.lock:
            calls = sorted(self.calls.items(), key=_order)
            sessions = sorted(self.session_calls.items())
        out = [
            Family(
                "loop_brake_calls_total",
                "counter",
                "tools/call requests judged, by tool, rule and outcome "
                "(passed, warned, denied, stopped, duplicate, shadowed).",
                [(_call_labels(*key), n) for key, n in calls],
            )
        ]
        if self.show_sessions:
            out.append(
                Family(
                    "loop_brake_session_calls_total",
                    "counter",
                    "tools/call requests judged, by session key and outcome (--metrics-sessions).",
                    [((session, ("outcome", what)), n) for (session, what), n in sessions],
                )
            )
        return out


def _call_labels(tool: tuple[str, str], rule: str, what: str, tenant: str | None) -> Labels:
    labels = (tool, ("rule", rule), ("outcome", what))
    return labels if tenant is None else (("tenant", tenant), *labels)


def _order(item: tuple[tuple[Any, ...], int]) -> tuple[Any, ...]:
    (tool, rule, what, tenant), _count = item
    return (tenant or "", tool, rule, what)


def by_reason(name: str, kind: str, help_text: str, counts: dict[str, int]) -> Family:
    """A family with one ``reason`` label, its series sorted by reason."""
    samples = [((("reason", key),), n) for key, n in sorted(counts.items())]
    return Family(name, kind, help_text, samples)


def single(name: str, kind: str, help_text: str, value: int) -> Family:
    """A family of one series without labels."""
    return Family(name, kind, help_text, [((), value)])
