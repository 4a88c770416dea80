"""``replay --suggest-policy``: the flag and its output (what it excludes is in
``_replay_options.EXCLUSIONS``).

The evidence is gathered by ``analysis/suggest.SuggestAnalyzer`` during the replay;
here it is weighed by the runs' outcomes (``--outcomes``, matched as for the sweep)
and printed as a TOML policy (``render/suggest.py``) on stdout, instead of the
summary. Nothing is written anywhere else, and nothing is applied.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from ._options import F

__all__ = ["print_suggestion", "suggest_option"]


def suggest_option() -> Callable[[F], F]:
    return click.option(
        "--suggest-policy",
        "suggest_policy",
        is_flag=True,
        help="Instead of the summary: a TOML policy suggested by these runs (per-tool limits, "
        "progress, args_ignore), each rule with its evidence; weighed by --outcomes.",
    )


def print_suggestion(report: Any, setup: Any) -> None:
    """The suggested policy of ``report`` on stdout; ``setup``: the outcomes (or None)."""
    from ..analysis.outcomes import match_runs
    from ..analysis.suggest import suggest
    from ..render.suggest import policy_toml

    runs = [(stats.file, stats.session) for stats in report.sessions]
    if setup is None:
        text = policy_toml(
            suggest(report.sessions, None),
            runs=len(runs),
            max_repeats=report.max_repeats,
            outcomes=None,
        )
    else:
        matched = match_runs(runs, setup.outcomes)
        text = policy_toml(
            suggest(report.sessions, matched.runs),
            runs=len(runs),
            max_repeats=report.max_repeats,
            outcomes=setup.outcomes.source,
            resolved=matched.resolved,
            failed=matched.failed,
            unmatched=len(matched.unmatched),
        )
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()
