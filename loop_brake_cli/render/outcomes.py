"""The words and table of ``replay --sweep LOW..HIGH --outcomes FILE``, for the text summary.

Plain strings for the summary's view (``terminal._ReplayView`` draws the table and
the lines, so a narrow terminal stacks it as it stacks the others). Tokens are
"fresh" tokens (input, output and cache writes; cache reads apart, since a
context re-read each turn costs a tenth as much): a figure no transcript
recorded is "-", never 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis.outcome_sweep import RUNS_LISTED, OutcomeRow, OutcomeSweep
from ..analysis.waste import Tokens, dollars
from .waste import money

if TYPE_CHECKING:
    from ..analysis.prices import Prices

__all__ = ["draw_outcomes", "fresh_tokens", "recommendation_line"]


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def fresh_tokens(tokens: Tokens) -> int | None:
    """Input, output and cache-write tokens together; None when none was recorded."""
    kinds = [tokens.get(kind) for kind in ("input", "output", "cache_write")]
    recorded = [n for n in kinds if n is not None]
    return sum(recorded) if recorded else None


def _saved_money(row: OutcomeRow, prices: Prices) -> str:
    priced = dollars(row.saved, prices)
    if not priced.priced_turns:
        return "-"
    text = money(priced.amount, priced.currency)
    return text + " (part)" if priced.unpriced else text


def _saved_cells(row: OutcomeRow) -> tuple[str, str]:
    """Turns and fresh tokens saved: "-" when no stopped failed run records usage per
    turn (unknown), 0 when they do and no turn began after their stops."""
    if row.failed_stopped and row.unknown_runs == row.failed_stopped:
        return "-", "-"
    fresh = fresh_tokens(row.saved.tokens())
    return f"{row.saved.turns:,}", f"{fresh or 0:,}"


def _saving_words(row: OutcomeRow, prices: Prices | None) -> str:
    parts = [_plural(row.saved_calls, "call")]
    if row.saved.turns:
        parts.append(_plural(row.saved.turns, "model turn"))
        tokens = row.saved.tokens()
        fresh = fresh_tokens(tokens)
        if fresh is not None:
            parts.append(f"{fresh:,} tokens")
        cache = tokens.get("cache_read")
        if cache:
            parts.append(f"{cache:,} cache-read tokens")
        if prices is not None:
            priced = dollars(row.saved, prices)
            if priced.priced_turns:
                parts.append(money(priced.amount, priced.currency))
    return ", ".join(parts)


def recommendation_line(sweep: OutcomeSweep, limits: range, prices: Prices | None) -> str:
    """The smallest limit that stops at most the tolerated resolved runs, and what it saves."""
    allowed = sweep.tolerance.allowed(sweep.resolved)
    at_most = "no resolved run" if allowed == 0 else f"at most {_plural(allowed, 'resolved run')}"
    best = sweep.recommended
    low, high = limits.start, limits.stop - 1
    wider = f"sweep higher limits (--sweep {low}..{high * 2})"
    if best is None:
        if allowed:
            return (
                f"Recommended: none: every maxRepeats in {low}..{high} stops more than "
                f"{_plural(allowed, 'resolved run')}; {wider}"
            )
        return (
            f"Recommended: none: every maxRepeats in {low}..{high} stops a resolved run; "
            f"{wider}, or tolerate some (--tolerance)"
        )
    stopped = ""
    if allowed:
        stopped = f"{_plural(best.resolved_stopped, 'resolved run')} and "
    if not best.failed_stopped:
        return (
            f"Recommended: maxRepeats {best.max_repeats}, the smallest that stops {at_most}: "
            f"it stops {stopped}no failed run either, so it saves nothing on these runs"
        )
    return (
        f"Recommended: maxRepeats {best.max_repeats}, the smallest that stops {at_most}: "
        f"it stops {stopped}{best.failed_stopped:,} of {sweep.failed:,} failed runs, "
        f"saving {_saving_words(best, prices)}"
    )


def draw_outcomes(view: Any, sweep: OutcomeSweep, limits: range) -> None:
    """The outcome table, the recommendation, and the runs left unmatched, on ``view``."""

    prices = view.prices
    columns = [
        ("maxRepeats", "right"),
        ("resolved denied", "right"),
        ("resolved stopped", "right"),
        ("failed stopped", "right"),
        ("calls saved", "right"),
        ("turns saved", "right"),
        ("tokens saved", "right"),
    ]
    if prices is not None:
        columns.append(("cost saved", "right"))
    view.words("")
    view.words(
        f"Outcomes: {_plural(sweep.resolved, 'resolved run')} and "
        f"{_plural(sweep.failed, 'failed run')} matched in {sweep.source}; {stop_words(sweep)}"
    )
    table = view.table("", *columns)
    for row in sweep.rows:
        current = " (current)" if row.max_repeats == view.report.max_repeats else ""
        cells = [
            f"{row.max_repeats}{current}",
            f"{row.resolved_denied:,}",
            f"{row.resolved_stopped:,}",
            f"{row.failed_stopped:,}",
            f"{row.saved_calls:,}",
            *_saved_cells(row),
        ]
        if prices is not None:
            cells.append(_saved_money(row, prices))
        table.add_row(*cells)
    view.show(table, gap=False)
    view.words(recommendation_line(sweep, limits, prices))
    notes = []
    unknown = max((row.unknown_runs for row in sweep.rows), default=0)
    if unknown:
        whose = "run whose transcript records" if unknown == 1 else "runs whose transcripts record"
        notes.append(
            f"Turns and tokens saved leave out {unknown:,} stopped failed {whose} fewer "
            "than two model turns (no usage, or one total per run)"
        )
    unmatched = sweep.unmatched_runs()
    if unmatched:
        named = ", ".join(
            view.name(stats.file) if stats.session == stats.file else stats.session
            for stats in unmatched[:RUNS_LISTED]
        )
        more = len(unmatched) - RUNS_LISTED
        notes.append(
            f"{_plural(len(unmatched), 'run')} with no outcome, left out: {named}"
            + (f" and {more:,} more (--json lists them)" if more > 0 else "")
        )
    if sweep.matched.unused and not sweep.complement:
        notes.append(
            f"{_plural(len(sweep.matched.unused), 'outcome')} of {sweep.source} "
            "matched no replayed run"
        )
    if sweep.problems:
        notes.append(f"{_plural(sweep.problems, 'line')} of {sweep.source} not read (see stderr)")
    for note in notes:
        view.words(note)


def stop_words(sweep: OutcomeSweep) -> str:
    """How a run is stopped: ``a run is stopped at its 2nd ignored denial (the default
    --stop-after 2)``, and the policy's ``[stop]`` when there is one."""
    k = sweep.stop_after
    given = "the default " if sweep.stop_source == "default" else ""
    if k == 0:
        text = f"a run is stopped at its first denial ({given}--stop-after 0)"
    else:
        text = (
            f"a run is stopped at its {_ordinal(k)} ignored denial ({given}--stop-after {k}: "
            "a denied call made again)"
        )
    if sweep.stop_in_a_row is not None:
        text += f", or at the policy's [stop] ({sweep.stop_in_a_row} denials in a row)"
    return text


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
