"""A finished report as a summary shows it: the streak-length histogram, which sessions
a bounded table shows, the ``--json`` form."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .prices import Prices
from .report import HISTOGRAM_TOP, Report, SessionStats
from .sweep import SweepRow
from .waste import Cost, Waste, usage_to_json, waste_to_json

SCHEMA = "loop-brake.replay/2"

SUMMARY_ROWS = 50
"""Rows a summary table shows by default (``replay --rows``): a couple of screens, as
many as the denials table always showed; every row is in ``--json`` and ``--html``."""


def heaviest(
    sessions: Sequence[SessionStats],
    rows: int | None,
    weight: Callable[[SessionStats], tuple[int, ...]],
) -> list[SessionStats]:
    """The sessions a table of at most ``rows`` shows: all of them in file order when they
    fit (so a small run reads as before), else the ``rows`` of greatest ``weight``, in that
    order, ties in file order. ``rows`` None: all of them."""
    if rows is None or len(sessions) <= rows:
        return list(sessions)
    picked = heapq.nsmallest(
        rows, range(len(sessions)), key=lambda i: (tuple(-w for w in weight(sessions[i])), i)
    )
    return [sessions[i] for i in picked]


def brake_weight(stats: SessionStats) -> tuple[int, int, int]:
    """What makes a session matter to the brake: denied calls, wasted calls, longest streak."""
    longest = stats.longest.length if stats.longest is not None else 0
    return (stats.denied, stats.waste.calls, longest)


def not_caught_weight(stats: SessionStats) -> tuple[int]:
    """The longer of its A/B alternation and its same-tool run."""
    alt, same = stats.longest_alternation, stats.longest_same_tool
    return (max(alt.length if alt else 0, same.length if same else 0),)


def histogram(report: Report, top: int = HISTOGRAM_TOP) -> list[tuple[str, int]]:
    """Streak lengths in buckets ``1``, ``2``, ... ``top+``."""
    buckets = [0] * top
    for length, n in report.streak_lengths.items():
        buckets[min(length, top) - 1] += n
    return [(str(i + 1) if i + 1 < top else f"{top}+", n) for i, n in enumerate(buckets)]


def waste_totals(report: Report) -> tuple[Waste, Cost]:
    """Every session's waste and usage, added up (across files, and workers once merged)."""
    waste, spent = Waste(), Cost()
    for stats in report.sessions:
        waste.add(stats.waste)
        spent.add(stats.spent)
    return waste, spent


def _ceiling_sweep(report: Report, sweep_rows: Sequence[SweepRow] | None) -> dict[str, Any]:
    """``progressMaxSweep``: the sweep's limits as ``progress_max`` values, only with a
    sweep and calls in the progress mode (else the document is as before)."""
    if sweep_rows is None:
        return {}
    from .sweep import ceiling_sweep

    rows = ceiling_sweep(report, [row.max_repeats for row in sweep_rows])
    return {} if rows is None else {"progressMaxSweep": [row.to_json() for row in rows]}


def report_to_json(
    report: Report, sweep_rows: Sequence[SweepRow] | None = None, prices: Prices | None = None
) -> dict[str, Any]:
    """The ``--json`` document; field names are documented in docs/replay.md."""
    formats = Counter(info.format for info in report.files if info.format)
    waste, spent = waste_totals(report)
    total_waste = waste_to_json(waste, spent, prices)
    total_waste["sessions"] = sum(1 for s in report.sessions if s.waste.calls)
    total_waste["sessionsWithoutUsage"] = sum(
        1 for s in report.sessions if s.waste.calls and not s.spent.turns
    )
    sessions = []
    for stats in report.sessions:
        session = stats.to_json()
        session["waste"] = waste_to_json(stats.waste, stats.spent, prices)
        session["usage"] = usage_to_json(stats.spent, prices)
        sessions.append(session)
    return {
        "schema": SCHEMA,
        "maxRepeats": report.max_repeats,
        "maxRepeatsSource": report.max_repeats_source,
        "totals": {
            "files": len(report.files),
            "filesFailed": report.failed_files,
            "formats": dict(sorted(formats.items())),
            "calls": report.calls,
            "passed": report.calls - report.denied,
            "denied": report.denied,
            "deniedStreaks": report.denied_streaks,
            "sessions": len(report.sessions),
            "sessionsWithDenial": report.sessions_with_denial,
            "duplicates": report.duplicates,
            "unparsedArgs": report.unparsed_args,
            "unreadable": report.unreadable,
            **({"warned": report.warned} if report.warns else {}),  # a policy's warn_at
        },
        "waste": total_waste,
        "usage": usage_to_json(spent, prices),
        "files": [info.to_json() for info in report.files],
        "sessions": sessions,
        "denials": [denial.to_json() for denial in report.denials],
        "denialsNotListed": report.denied_streaks - len(report.denials),
        "streakLengths": {str(k): report.streak_lengths[k] for k in sorted(report.streak_lengths)},
        "sweep": None if sweep_rows is None else [row.to_json() for row in sweep_rows],
        **_ceiling_sweep(report, sweep_rows),
        "errors": [error.to_json() for error in report.errors],
        "skipped": [skipped.to_json() for skipped in report.skipped],
        "errorsNotListed": report.unreadable - len(report.errors),
        "prices": None if prices is None else prices.path,
    }
