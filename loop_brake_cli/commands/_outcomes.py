"""``--outcomes``, ``--tolerance``, ``--stop-after``: the sweep checked against outcomes,
for ``replay`` and ``merge`` alike.

The commands only declare the options (``outcome_options``), read the file before
any input (``prepare``: exit 3 when it cannot be opened, 2 when it holds no
outcome) and, once the report is made, match its runs and build the table
(``check``). Reading and matching is ``analysis/outcomes.py``; the table and the
recommendation ``analysis/outcome_sweep.py``; drawing ``render/outcomes.py`` and
``render/html/outcomes.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from ..core.exitcodes import ExitStatus
from ._command import CommandError
from ._options import Count, F
from ._report_output import say

__all__ = ["OutcomeSetup", "check", "outcome_options", "prepare"]


def outcome_options(outcomes_help: str) -> Callable[[F], F]:
    """The three options, in the order ``--help`` lists them."""

    def decorate(function: F) -> F:
        function = click.option(
            "--stop-after",
            "stop_after",
            type=Count(0),
            default=None,
            metavar="K",
            help="With --outcomes: a run ends after K denials the agent ignored, as in "
            "`loop-brake run` (default 2; 0: the first denial), or at a policy [stop].",
        )(function)
        function = click.option(
            "--tolerance",
            "tolerance_text",
            metavar="N|P%",
            default=None,
            help="With --outcomes: resolved runs the recommended limit may stop (default 0).",
        )(function)
        return click.option(
            "--outcomes",
            "outcomes_path",
            type=click.Path(),
            default=None,
            metavar="FILE",
            help=outcomes_help,
        )(function)

    return decorate


@dataclass(frozen=True)
class OutcomeSetup:
    """The outcomes read, the stop's K and where it came from, the tolerance."""

    outcomes: Any  # analysis.outcomes.Outcomes
    stop_after: int
    stop_source: str
    tolerance: Any  # analysis.outcome_sweep.Tolerance

    def with_stop(self, stop_after: int, source: str) -> OutcomeSetup:
        return OutcomeSetup(self.outcomes, stop_after, source, self.tolerance)


def prepare(
    outcomes_path: str | None,
    tolerance_text: str | None,
    stop_after: int | None,
    has_sweep: bool,
    prog: str,
) -> OutcomeSetup | None:
    """The outcome setup (None without ``--outcomes``); else ``CommandError`` saying what
    is wrong: before any input is read."""
    if outcomes_path is None:
        if tolerance_text is not None or stop_after is not None:
            used = "--tolerance" if tolerance_text is not None else "--stop-after"
            raise CommandError(f"{used} applies to --outcomes FILE: give the outcomes too")
        return None
    if not has_sweep:
        raise CommandError(
            "--outcomes checks the limits of a sweep (or weighs --suggest-policy): give "
            "--sweep LOW..HIGH too"
        )
    from ..analysis.outcome_sweep import Tolerance, parse_tolerance
    from ..analysis.outcomes import OutcomeError, load_outcomes
    from ..analysis.stops import DEFAULT_STOP_AFTER

    tolerance = Tolerance()
    if tolerance_text is not None:
        try:
            tolerance = parse_tolerance(tolerance_text)
        except ValueError as exc:
            raise CommandError(f"--tolerance: {exc}") from None
    try:
        outcomes = load_outcomes(outcomes_path)
    except OutcomeError as exc:
        status = ExitStatus.UNREADABLE if exc.unopened else ExitStatus.USAGE
        raise CommandError(f"--outcomes: {exc}", status) from None
    for problem in outcomes.problems:
        say(f"--outcomes: {problem}", prog)
    if outcomes.problem_count > len(outcomes.problems):
        more = outcomes.problem_count - len(outcomes.problems)
        say(f"--outcomes: ... and {more} more line(s) not read", prog)
    if stop_after is not None:
        return OutcomeSetup(outcomes, stop_after, "--stop-after", tolerance)
    return OutcomeSetup(outcomes, DEFAULT_STOP_AFTER, "default", tolerance)


def check(report: Any, limits: range, setup: OutcomeSetup) -> Any:
    """The sweep of ``report`` checked against the outcomes (an ``OutcomeSweep``)."""
    from ..analysis.outcome_sweep import outcome_sweep
    from ..analysis.outcomes import match_runs

    matched = match_runs(((s.file, s.session) for s in report.sessions), setup.outcomes)
    return outcome_sweep(
        report, limits, setup.outcomes, matched, setup.tolerance, setup.stop_source
    )
