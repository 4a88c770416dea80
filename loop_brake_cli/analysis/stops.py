"""Where each run would have been stopped, at every maxRepeats of a sweep, in one pass.

A run is stopped where ``loop-brake run`` would have ended it (``run/watch.py``):

* at its K-th *ignored* denial (``--stop-after K``, default 2): a denied call that
  repeats the session's previous call, itself denied (the agent was told no and
  made the call again), counted over the whole run; K = 0 stops it at its first
  denial;
* or, under a policy with ``[stop] after_denials = N``, at its N-th denial in a
  row (a passing call ends a row), whichever comes first.

Replayed, the agent's calls are the ones it made with no brake, so at a limit m a
call is denied when the brake's count for it is at least m (as ``sweep`` counts).
A call of count c >= m + 1 follows the same call of count c - 1 >= m, denied: it
is an ignored denial at every m <= c - 1. Every streak starts with a passing call
(count 1), so for m >= 2 a call of count c is the (c - m + 1)-th denial in a row.
At m = 1 every call is denied: the row is the whole session. One pass records the
stop of every m up to the sweep's top from the counts alone, and cheaply: a run
stopped at m is stopped at every smaller limit (each rule's count only grows as m
falls), so a session's stops are always the limits 1..M, and each call only looks
at the limits above M that it reaches (at most K + 1 of them once a streak is
long).

``StopAnalyzer`` is the ``Analyzer`` that also keeps these stop points, per
session, for ``replay --outcomes``: a plain replay does not pay for them. What a
stop saves is what the run did after it: its calls after the stop call, and the
model turns that began after it (their tokens, as recorded), never the turn that
made the stop call. A transcript that records usage per run only (SWE-agent's
``.traj``) or none gives no turn after any stop: its tokens saved are "not
recorded", never 0.
"""

from __future__ import annotations

from ..core.records import Record, Usage
from ..core.verdicts import Verdict
from .analyzer import Analyzer
from .report import Report, SessionStats
from .stop_point import StopPoint
from .where import Where

__all__ = ["DEFAULT_STOP_AFTER", "StopAnalyzer", "StopPoint"]

DEFAULT_STOP_AFTER = 2
"""Ignored denials that end a run, as ``loop-brake run --stop-after`` counts them by
default."""


class StopAnalyzer(Analyzer):
    """An ``Analyzer`` that also records, per session, the stop of each maxRepeats up to
    the report's cap (``SessionStats.stops``): at ``stop_after`` ignored denials, or at
    ``in_a_row`` denials in a row (a policy's ``[stop]``; None: no such rule)."""

    def __init__(
        self,
        max_repeats: int,
        max_repeats_source: str,
        cap: int,
        timeline: bool = False,
        *,
        stop_after: int,
        in_a_row: int | None = None,
    ) -> None:
        super().__init__(max_repeats, max_repeats_source, cap, timeline)
        self.stop_after = stop_after
        self.in_a_row = in_a_row
        self.report.stop_after = stop_after
        self.report.stop_in_a_row = in_a_row
        # Per session: its ignored denials at each limit above its highest stop.
        self._ignored: dict[str, dict[int, int]] = {}

    def add(self, record: Record, verdict: Verdict | None) -> None:
        if record.__class__ is Usage and verdict is None:
            self._turn_ends(record.session)  # type: ignore[attr-defined]
        super().add(record, verdict)
        if verdict is None or verdict.duplicate or verdict.count < 1:
            return
        stats = self._sessions[verdict.session_id]
        if stats.stops is None:
            stats.stops = {}
        stops, cap, count = stats.stops, self.report.cap, verdict.count
        # Ignored denials: at each limit m <= count - 1 this call is one more.
        if self.stop_after == 0:
            self._stop_up_to(stats, record, min(count, cap))  # the first denial
        elif count >= 2:
            ignored = self._ignored.setdefault(verdict.session_id, {})
            reached = len(stops)
            for limit in range(len(stops) + 1, min(count - 1, cap) + 1):
                total = ignored.get(limit, 0) + 1
                ignored[limit] = total
                if total >= self.stop_after:
                    reached = limit
            self._stop_up_to(stats, record, reached)
            for limit in range(1, len(stops) + 1):
                ignored.pop(limit, None)
        # The policy's [stop]: N denials in a row (at m = 1, the session's N-th call).
        if self.in_a_row is not None:
            top = min(count - self.in_a_row + 1, cap)
            if top < 2 and stats.calls >= self.in_a_row:
                top = 1
            self._stop_up_to(stats, record, top)

    def _stop_up_to(self, stats: SessionStats, record: Record, top: int) -> None:
        """Every limit up to ``top`` not stopped yet is stopped at this call."""
        stops = stats.stops
        assert stops is not None
        for limit in range(len(stops) + 1, top + 1):
            stops[limit] = self._point(stats, record)

    def _point(self, stats: SessionStats, record: Record) -> StopPoint:
        info = self._file
        assert info is not None
        turn = stats.turn.ordinal if stats.turn is not None else 0
        where = Where(info.file, record.line, record.path, self._call)
        return StopPoint(stats.calls, turn, where)

    def _turn_ends(self, session: str) -> None:
        """The session's open turn is about to close (its next turn begins): a turn begun
        after a stop call is saved by that stop. Read now, when its figures are final."""
        stats = self._sessions.get(session)
        if stats is None or not stats.stops or stats.turn is None:
            return
        turn = stats.turn
        for stop in stats.stops.values():
            if turn.ordinal > stop.turn:
                stop.saved.add_usage(turn.usage)

    def finish(self) -> Report:
        for stats in self.report.sessions:
            if stats.stops and stats.turn is not None:
                self._turn_ends(stats.session)
        self._ignored = {}
        return super().finish()
