"""Rich summaries for people, on stderr; with cli.py, the only module that imports rich."""

from __future__ import annotations

from rich.console import Console

from .brake import LoopBrake
from .judge import Tally


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def print_filter_summary(tally: Tally, brake: LoopBrake, files: int) -> None:
    console = stderr_console()
    denied = f"[bold red]{tally.denied} denied[/]" if tally.denied else "0 denied"
    console.print(
        f"[bold]loop-brake[/]: {tally.calls} calls in {files} input(s): "
        f"{tally.passed} passed, {denied}, {tally.errors} unreadable line(s); "
        f"{tally.duplicates} duplicate(s); {len(brake)} session(s) at the end"
    )
    console.print(
        f"maxRepeats = {brake.max_repeats} ({brake.max_repeats_source})"
        + (f"; {brake.evictions} session(s) evicted" if brake.evictions else "")
    )
