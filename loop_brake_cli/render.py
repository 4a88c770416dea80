"""Rich summaries for people, on stderr; with cli.py, the only module that imports rich."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from .brake import LoopBrake
from .judge import Tally

if TYPE_CHECKING:
    from rich.table import Table

    from .analysis import Report, SweepRow


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


# --- replay ----------------------------------------------------------------------

_BAR_WIDTH = 30


def replay_console(stderr: bool = False) -> Console:
    """The summary is replay's output, so it goes to stdout; rich drops colour and
    styling when that is not a terminal, and honours NO_COLOR."""
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def _ordinal(n: int) -> str:
    words = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}
    if n in words:
        return words[n]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _table(title: str, console: Console) -> Table:
    from rich import box
    from rich.table import Table

    style = box.SIMPLE_HEAD
    if not console.is_terminal:  # plain text stays ASCII
        style = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n")
    return Table(
        title=title or None,
        title_justify="left",
        title_style="bold",
        box=style,
        pad_edge=False,
        show_edge=False,
    )


def print_replay_summary(
    report: Report, sweep_rows: Sequence[SweepRow] | None = None, console: Console | None = None
) -> None:
    """The at-a-glance answer: where the brake would have stopped these agents.

    On a terminal, rich draws it to fit. Otherwise (a pipe, a file, CI logs) it is
    plain text drawn wide enough that no cell wraps, without trailing spaces, so
    a line can be grepped whole.
    """
    if console is None:
        console = replay_console()
        if not console.is_terminal:
            import io
            import sys

            buffer = io.StringIO()
            _draw_replay(report, sweep_rows, Console(file=buffer, width=_PLAIN_WIDTH))
            lines = (line.rstrip() for line in buffer.getvalue().splitlines())
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
            return
    _draw_replay(report, sweep_rows, console)


_PLAIN_WIDTH = 240


def _draw_replay(report: Report, sweep_rows: Sequence[SweepRow] | None, console: Console) -> None:
    from .analysis import histogram

    e = _safe
    formats = Counter(info.format for info in report.files if info.format)
    shown_formats = ", ".join(f"{name} {n}" for name, n in sorted(formats.items())) or "none"
    failed = report.failed_files
    console.print(
        f"[bold]loop-brake replay[/]: {_plural(len(report.files), 'file')} ({e(shown_formats)})"
        + (f", [bold red]{failed} unreadable[/]" if failed else "")
        + f"; {_plural(report.calls, 'tool call')}; {_plural(len(report.sessions), 'session')}"
    )
    console.print(f"maxRepeats = {report.max_repeats} ({e(report.max_repeats_source)})")
    extras = []
    if report.duplicates:
        extras.append(f"{_plural(report.duplicates, 'duplicate')} (same call id, counted once)")
    if report.unparsed_args:
        extras.append(f"{_plural(report.unparsed_args, 'call')} with unparseable arguments")
    if report.unreadable:
        extras.append(f"{_plural(report.unreadable, 'unreadable record')} (see stderr)")
    if extras:
        console.print("; ".join(extras))
    if report.denied:
        sessions = sum(1 for s in report.sessions if s.denied)
        console.print(
            f"[bold red]{_plural(report.denied, 'call')} would be denied[/] in "
            f"{_plural(sessions, 'session')} ({_plural(report.denied_streaks, 'streak')})"
        )
    else:
        console.print("[green]No call would be denied.[/]")

    if report.sessions:
        table = _table("Sessions", console)
        for name, justify in (
            ("file", "left"),
            ("session", "left"),
            ("calls", "right"),
            ("longest identical streak", "left"),
            ("denied", "right"),
        ):
            table.add_column(name, justify=justify, overflow="fold")
        for stats in report.sessions:
            longest = stats.longest
            if longest is None:
                streak = "-"
            elif longest.length == 1:
                streak = "no repeat"
            else:
                streak = (
                    f"{e(longest.tool)} {longest.hash_prefix} x{longest.length} "
                    f"from {e(str(longest.start))}"
                )
            denied = f"[bold red]{stats.denied}[/]" if stats.denied else "0"
            table.add_row(e(stats.file), e(stats.session), str(stats.calls), streak, denied)
        console.print()
        console.print(table)

    if report.denials:
        table = _table("Denials: where the brake first stopped each streak", console)
        for name, justify in (
            ("where", "left"),
            ("tool", "left"),
            ("hash", "left"),
            ("streak", "right"),
            ("after the denial", "left"),
        ):
            table.add_column(name, justify=justify, overflow="fold")
        for denial in report.denials[:_DENIALS_SHOWN]:
            more = denial.more
            after = (
                "the agent stopped"
                if more == 0
                else f"the agent tried {_plural(more, 'more time')}"
            )
            table.add_row(
                e(str(denial.at)) + f" (call {denial.at.call})",
                e(denial.tool),
                denial.hash_prefix,
                str(denial.streak_length),
                after,
            )
        console.print()
        console.print(table)
        hidden = report.denied_streaks - min(len(report.denials), _DENIALS_SHOWN)
        if hidden:
            console.print(f"... and {_plural(hidden, 'more denial')} (see --json)")

    if report.streak_lengths:
        console.print()
        console.print("[bold]Streak lengths[/] (identical consecutive calls; 1 = no repeat)")
        buckets = histogram(report)
        peak = max(n for _, n in buckets) or 1
        longest = max(report.streak_lengths)
        for label, n in buckets:
            bar = "#" * (max(1, round(n * _BAR_WIDTH / peak)) if n else 0)
            low = int(label.rstrip("+"))
            denied = low >= report.max_repeats or (
                label.endswith("+") and longest >= report.max_repeats
            )
            mark = " [red]<- denied[/]" if denied and n else ""
            console.print(f"{label:>4} {bar:<{_BAR_WIDTH}} {n}{mark}")

    _print_not_caught(report, console)

    if sweep_rows is not None:
        table = _table("Sweep: what each maxRepeats would have denied", console)
        for name in ("maxRepeats", "denied calls", "sessions with a denial", "first denial"):
            table.add_column(name, justify="left" if name == "first denial" else "right")
        for row in sweep_rows:
            first = (
                f"{e(str(row.first_denial))} (call {row.first_denial.call})"
                if row.first_denial
                else "-"
            )
            current = " (current)" if row.max_repeats == report.max_repeats else ""
            table.add_row(
                f"{row.max_repeats}{current}",
                str(row.denied_calls),
                str(row.sessions_with_denial),
                first,
            )
        console.print()
        console.print(table)


_DENIALS_SHOWN = 50


def _safe(text: str) -> str:
    """Markup-escaped, and a lone surrogate (possible in a tool name) as its escape."""
    from rich.markup import escape

    return escape(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def _print_not_caught(report: Report, console: Console) -> None:
    e = _safe

    rows = [
        s
        for s in report.sessions
        if (s.longest_alternation and s.longest_alternation.length >= 4)
        or (s.longest_same_tool and s.longest_same_tool.length >= 3)
    ]
    console.print()
    console.print(
        "[bold]What the exact brake does not catch[/] (informational; the rules do not change):"
    )
    if not rows:
        console.print("no A/B alternation of 4+ calls and no same-tool run of 3+ changing calls")
        return
    table = _table("", console)
    table.add_column("session", overflow="fold")
    table.add_column("longest A/B alternation", overflow="fold")
    table.add_column("longest same-tool run, arguments changing", overflow="fold")
    for s in rows:
        alt = s.longest_alternation
        same = s.longest_same_tool
        table.add_row(
            e(f"{s.file} {s.session}" if s.file != s.session else s.session),
            f"{e(alt.tools[0])}/{e(alt.tools[1])} x{alt.length} from {e(str(alt.start))}"
            if alt
            else "-",
            f"{e(same.tool)} x{same.length} from {e(str(same.start))}" if same else "-",
        )
    console.print(table)
