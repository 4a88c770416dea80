"""The sweep: what every other maxRepeats would have denied, from one replay.

No second pass is needed: a streak of length L at limit m denies
max(0, L - m + 1) calls, so a histogram of the counts the brake assigned
(``counts[c]`` = calls with count c; a call logged twice under one call id
is one call) answers every m
at once: denied(m) = sum of counts[c] for c >= m.

Under a policy's progress mode the same holds for its ceiling (``progress_max``):
the identical calls in a row that a call makes never depend on results or on
verdicts, so the calls a ceiling of n denies are those whose identical count is at
least n (``Report.ceiling_counts``; some of them another rule denies anyway), and
``ceiling_sweep`` answers every n at once too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .report import Report
from .where import Where

SWEEP_MAX = 1_000


@dataclass(frozen=True, slots=True)
class SweepRow:
    """What one maxRepeats would have denied, and where it would first have bitten."""

    max_repeats: int
    denied_calls: int
    sessions_with_denial: int
    first_denial: Where | None

    def to_json(self) -> dict[str, Any]:
        return {
            "maxRepeats": self.max_repeats,
            "deniedCalls": self.denied_calls,
            "sessionsWithDenial": self.sessions_with_denial,
            "firstDenial": None if self.first_denial is None else self.first_denial.to_json(),
        }


@dataclass(frozen=True, slots=True)
class CeilingRow:
    """What one ``progress_max`` (for every tool in the progress mode) would deny."""

    progress_max: int
    denied_calls: int
    sessions_with_denial: int
    first_denial: Where | None

    def to_json(self) -> dict[str, Any]:
        return {
            "progressMax": self.progress_max,
            "deniedCalls": self.denied_calls,
            "sessionsWithDenial": self.sessions_with_denial,
            "firstDenial": None if self.first_denial is None else self.first_denial.to_json(),
        }


def parse_sweep(text: str) -> range:
    """``"2..10"`` as range(2, 11); a single ``"5"`` is ``5..5``. Raises ValueError."""
    low, sep, high = text.strip().partition("..")
    try:
        lo = int(low)
        hi = int(high) if sep else lo
    except ValueError:
        raise ValueError(f"expected LOW..HIGH such as 2..10, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"expected 1 <= LOW <= HIGH, got {text!r}")
    if hi > SWEEP_MAX:
        raise ValueError(f"HIGH must be at most {SWEEP_MAX}, got {hi}")
    return range(lo, hi + 1)


def sweep(report: Report, limits: Sequence[int]) -> list[SweepRow]:
    """What each maxRepeats would have denied in this report, computed from its streaks.

    Exact for limits up to ``report.cap`` (the analyzer is built with the sweep's top).
    """
    counts = sorted(report.counts.items())
    cap = report.cap
    longest = [s.longest.length if s.longest else 0 for s in report.sessions]
    rows = []
    for m in limits:
        if m > cap:
            raise ValueError(f"sweep limit {m} above the analyzed cap {cap}")
        rows.append(
            SweepRow(
                m,
                sum(n for c, n in counts if c >= m),
                sum(1 for length in longest if length >= m),
                report.first_at.get(m),
            )
        )
    return rows


def ceiling_sweep(report: Report, limits: Sequence[int]) -> list[CeilingRow] | None:
    """What each ``progress_max`` in ``limits`` would deny, from the report's ceiling
    histogram; None when no call was in the progress mode (no policy, or none of its
    tools). Exact for limits up to ``report.cap``, as ``sweep``."""
    if not report.ceiling_counts:
        return None
    counts = sorted(report.ceiling_counts.items())
    longest = sorted(report.ceiling_sessions.items())
    rows = []
    for n in limits:
        if n > report.cap:
            raise ValueError(f"sweep limit {n} above the analyzed cap {report.cap}")
        rows.append(
            CeilingRow(
                n,
                sum(k for c, k in counts if c >= n),
                sum(k for length, k in longest if length >= n),
                report.ceiling_first_at.get(n),
            )
        )
    return rows
