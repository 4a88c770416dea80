"""The sweep checked against outcomes: at each maxRepeats, what the brake costs and saves.

For each limit m of ``replay --sweep LOW..HIGH --outcomes FILE``, over the runs
that an outcome matched (``outcomes.match_runs``):

* the **cost**: resolved runs that m would have denied at least once (their
  longest identical streak reaches m: the agent would have been told no), and
  resolved runs it would have *stopped* (K denials in a row, ``stops``): a run
  that succeeded, ended before it did;
* the **savings**: failed runs it would have stopped, and what they did after
  the stop: calls, model turns begun after it and their tokens (dollars with
  ``--prices``), as recorded (``stops`` says what is counted).

The recommendation is the smallest m of the sweep that stops at most
``tolerance`` resolved runs (a number of runs, or a share of the resolved runs:
``2%``); ties cannot happen, since every m is its own row. None when no m of the
sweep qualifies. Plain data; ``to_json`` is the ``outcomes`` object of ``--json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .outcomes import Matched, Outcomes
from .prices import Prices
from .report import Report, SessionStats
from .waste import Cost, dollars

__all__ = [
    "RUNS_LISTED",
    "OutcomeRow",
    "OutcomeSweep",
    "Tolerance",
    "outcome_sweep",
    "parse_tolerance",
]

RUNS_LISTED = 10
"""Unmatched runs (and unused outcomes) the text summary names; --json lists them all."""


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How many resolved runs a recommended limit may stop: ``runs``, or ``percent`` of the
    resolved runs (rounded down)."""

    runs: int = 0
    percent: float | None = None

    def allowed(self, resolved: int) -> int:
        if self.percent is None:
            return self.runs
        return math.floor(resolved * self.percent / 100 + 1e-9)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.runs)


def parse_tolerance(text: str) -> Tolerance:
    """``"2"`` (runs) or ``"2.5%"`` (of the resolved runs); raises ValueError."""
    value = text.strip()
    try:
        if value.endswith("%"):
            percent = float(value[:-1])
            if not 0 <= percent <= 100 or math.isnan(percent):
                raise ValueError
            return Tolerance(percent=percent)
        runs = int(value)
        if runs < 0:
            raise ValueError
        return Tolerance(runs=runs)
    except ValueError:
        raise ValueError(
            f"expected a number of runs (0, 1, ...) or a share of the resolved runs "
            f"(such as 2%), got {text!r}"
        ) from None


@dataclass(slots=True)
class OutcomeRow:
    """One maxRepeats: what it costs in resolved runs and saves in failed ones."""

    max_repeats: int
    resolved_denied: int = 0
    resolved_stopped: int = 0
    failed_denied: int = 0
    failed_stopped: int = 0
    saved_calls: int = 0
    """Calls failed runs made after their stop."""
    unknown_runs: int = 0
    """Of the failed runs stopped, those whose transcript records fewer than two model
    turns (no usage, or one total for the run, as SWE-agent's): no turn can begin after
    their stop, so what their stop saves in tokens is unknown (not counted, never 0)."""
    saved: Cost = field(default_factory=Cost)
    """The model turns failed runs began after their stop, and their tokens."""
    lost_calls: int = 0
    """Calls resolved runs made after their stop (the work a stop would have cut short)."""

    def to_json(self, prices: Prices | None) -> dict[str, Any]:
        cost = None if prices is None else dollars(self.saved, prices).to_json()
        return {
            "maxRepeats": self.max_repeats,
            "resolvedDenied": self.resolved_denied,
            "resolvedStopped": self.resolved_stopped,
            "failedDenied": self.failed_denied,
            "failedStopped": self.failed_stopped,
            "saved": {
                "calls": self.saved_calls,
                "turns": self.saved.turns,
                "runsWithoutTurnUsage": self.unknown_runs,
                "tokens": self.saved.tokens().to_json(),
                "cost": cost,
            },
            "resolvedCallsAfterStop": self.lost_calls,
        }


@dataclass(slots=True)
class OutcomeSweep:
    """The outcome table of a replay, with its matching and its recommendation."""

    source: str
    kind: str
    stop_after: int
    stop_source: str
    stop_in_a_row: int | None
    tolerance: Tolerance
    rows: list[OutcomeRow]
    matched: Matched
    sessions: Sequence[SessionStats]
    complement: bool = False
    problems: int = 0

    @property
    def resolved(self) -> int:
        return self.matched.resolved

    @property
    def failed(self) -> int:
        return self.matched.failed

    @property
    def recommended(self) -> OutcomeRow | None:
        """The smallest limit that stops at most the tolerated resolved runs."""
        allowed = self.tolerance.allowed(self.resolved)
        return next((row for row in self.rows if row.resolved_stopped <= allowed), None)

    def unmatched_runs(self) -> list[SessionStats]:
        return [self.sessions[index] for index in self.matched.unmatched]

    def to_json(self, prices: Prices | None) -> dict[str, Any]:
        best = self.recommended
        return {
            "source": self.source,
            "kind": self.kind,
            "unlistedAreUnresolved": self.complement,
            "stopAfter": self.stop_after,
            "stopAfterSource": self.stop_source,
            "policyStop": self.stop_in_a_row,
            "tolerance": str(self.tolerance),
            "toleratedRuns": self.tolerance.allowed(self.resolved),
            "runs": {
                "matched": len(self.matched.runs),
                "resolved": self.resolved,
                "failed": self.failed,
                "matchedBy": dict(sorted(self.matched.by_key.items())),
                "unmatched": [
                    {"file": stats.file, "session": stats.session}
                    for stats in self.unmatched_runs()
                ],
                "outcomesWithoutRun": len(self.matched.unused),
                "outcomesWithoutRunListed": self.matched.unused[:RUNS_LISTED],
            },
            "problems": self.problems,
            "rows": [row.to_json(prices) for row in self.rows],
            "recommended": None if best is None else best.max_repeats,
        }


def _add_run(row: OutcomeRow, stats: SessionStats, resolved: bool) -> None:
    limit = row.max_repeats
    longest = stats.longest.length if stats.longest is not None else 0
    denied = stats.calls > 0 if limit == 1 else longest >= limit
    stop = stats.stops.get(limit) if stats.stops else None
    if resolved:
        row.resolved_denied += denied
        if stop is not None:
            row.resolved_stopped += 1
            row.lost_calls += stats.calls - stop.call
        return
    row.failed_denied += denied
    if stop is None:
        return
    row.failed_stopped += 1
    row.saved_calls += stats.calls - stop.call
    if stats.spent.turns < 2:
        row.unknown_runs += 1
    row.saved.add(stop.saved)


def outcome_sweep(
    report: Report,
    limits: Sequence[int],
    outcomes: Outcomes,
    matched: Matched,
    tolerance: Tolerance,
    stop_source: str,
) -> OutcomeSweep:
    """The table for ``limits`` (each at most ``report.cap``), from a report whose sessions
    kept their stop points (``report.stop_after`` set)."""
    if report.stop_after is None:
        raise ValueError("the report kept no stop points (replay it with --outcomes)")
    rows = []
    for limit in limits:
        if limit > report.cap:
            raise ValueError(f"sweep limit {limit} above the analyzed cap {report.cap}")
        row = OutcomeRow(limit)
        for index, resolved in matched.runs:
            _add_run(row, report.sessions[index], resolved)
        rows.append(row)
    return OutcomeSweep(
        outcomes.source,
        outcomes.kind,
        report.stop_after,
        stop_source,
        report.stop_in_a_row,
        tolerance,
        rows,
        matched,
        report.sessions,
        outcomes.complement,
        outcomes.problem_count,
    )
