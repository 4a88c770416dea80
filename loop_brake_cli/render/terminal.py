"""Rich summaries for people; besides the commands, the only module that imports rich.

An identifier (a file name, a session id, a tool name, a location) is never
split across lines. Piped or redirected, a summary is plain text drawn wide
enough that nothing wraps. On a terminal too narrow for a table, each row is
stacked as ``label: value`` lines instead, wrapped only between words, and a
word wider than the terminal is shortened in its middle (``stuck-a…t.jsonl``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from ..core.brake import LoopBrake
from ..readers.pipeline import Tally
from .fit import middle as _middle
from .fit import wrap as _wrap
from .visible import visible

if TYPE_CHECKING:
    from rich.table import Table

    from ..analysis import Report, SessionStats, SweepRow, Where
    from ..analysis.outcome_sweep import OutcomeSweep
    from ..analysis.prices import Prices


def stderr_console() -> Console:
    """Wrapped to the width of a terminal; anywhere else (a log, a pipe) never wrapped."""
    console = Console(stderr=True, highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


def print_filter_summary(
    tally: Tally, brake: LoopBrake, files: int, sessions: int, not_read: int = 0
) -> None:
    """``sessions``: summed over the runs (each file its own run unless sessions
    continue), so it equals replay's count for the same files."""
    console = stderr_console()
    denied = f"[bold red]{tally.denied} denied[/]" if tally.denied else "0 denied"
    wrong = f"; {not_read} input(s) not in the format read" if not_read else ""
    console.print(
        f"[bold]loop-brake[/]: {tally.calls} calls in {files} input(s): "
        f"{tally.passed} passed, {denied}, {tally.errors} unreadable line(s){wrong}; "
        f"{tally.duplicates} duplicate(s); {sessions} session(s)"
    )
    console.print(
        f"maxRepeats = {brake.max_repeats} ({brake.max_repeats_source})"
        + (f"; {brake.evictions} session(s) evicted" if brake.evictions else "")
    )


# --- replay ----------------------------------------------------------------------

_BAR_WIDTH = 30
_PLAIN_WIDTH = 1000
_ALL_SESSIONS = "(all of them: --json or --html FILE)"


def replay_console(stderr: bool = False) -> Console:
    """The summary is replay's output, so it goes to stdout; rich drops colour and
    styling when that is not a terminal, and honours NO_COLOR."""
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def print_replay_summary(
    report: Report,
    sweep_rows: Sequence[SweepRow] | None = None,
    console: Console | None = None,
    prices: Prices | None = None,
    *,
    max_rows: int | None,
    outcomes: OutcomeSweep | None = None,
) -> None:
    """The at-a-glance answer: where the brake would have stopped these agents.

    On a terminal, rich draws it to fit. Otherwise (a pipe, a file, CI logs) it is
    plain ASCII drawn wide enough that no cell wraps, without trailing spaces, so
    a line can be grepped whole. A table shows at most ``max_rows`` rows (None: all),
    the sessions that matter most; one line then says how many more there are.
    ``outcomes``: the sweep checked against outcomes (``replay --outcomes``), drawn
    after the sweep's table.
    """
    if not report.opened_files:  # nothing was opened: the reasons are on stderr already
        return
    if console is None:
        console = replay_console()
        if not console.is_terminal:
            import io
            import sys

            buffer = io.StringIO()
            plain = Console(file=buffer, width=_PLAIN_WIDTH)
            _ReplayView(report, plain, prices, max_rows).draw(sweep_rows, outcomes)
            lines = (line.rstrip() for line in buffer.getvalue().splitlines())
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
            return
    _ReplayView(report, console, prices, max_rows).draw(sweep_rows, outcomes)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


_RULE_WORDS = {
    "progress_max": "denied at the {nth} identical call, results changing (progress_max)",
    "same_result": "denied after {n} identical results, whatever the arguments (same_result)",
    "same_error": "denied after {n} identical errors (same_error)",
    "cycle": "denied: a cycle repeated {n} times (cycles)",
    "window": "denied: seen {n} times in the window (window)",
    "stop": "denied: the {nth} denial in a row, a stop",
}


def _denied_by(rule: str | None, limit: int | None, max_repeats: int) -> str:
    """What stopped a streak: the streak rule at maxRepeats, or a policy's other rule."""
    if rule is None or limit is None or rule not in _RULE_WORDS:
        return f"denied at the {_ordinal(max_repeats)} identical call"
    return _RULE_WORDS[rule].format(n=limit, nth=_ordinal(limit))


def _safe(text: str) -> str:
    """Markup-escaped, and every control, separator or lone surrogate as its escape
    (``visible``): an identifier from a transcript never drives the terminal."""
    from rich.markup import escape

    return escape(visible(text))


def _common_dir(names: Sequence[str]) -> str:
    """The directory every file shares, so tables can show shorter names ("" if none)."""
    import os

    dirs = [os.path.dirname(name) for name in names if name != "<stdin>"]
    if not dirs or not all(dirs) or len(dirs) != len(names):
        return ""
    try:
        return os.path.commonpath(dirs)
    except ValueError:
        return ""


class _Grid:
    """A table as data (a title, columns, rows of rich markup), drawn by ``_ReplayView.show``."""

    def __init__(self, title: str, columns: Sequence[tuple[str, str]]) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(cells)


class _ReplayView:
    """Draws one report; knows how to name files and locations briefly."""

    def __init__(
        self,
        report: Report,
        console: Console,
        prices: Prices | None,
        max_rows: int | None,
    ) -> None:
        self.report = report
        self.console = console
        self.prices = prices
        self.max_rows = max_rows
        self.wasted = any(stats.waste.calls for stats in report.sessions)
        self.files = report.opened_files
        self.base = _common_dir([info.file for info in self.files])
        self.only = self.files[0].file if len(self.files) == 1 else None

    def name(self, file: str) -> str:
        import os

        return os.path.relpath(file, self.base) if self.base else file

    def where(self, where: Where, file: str | None = None) -> str:
        """A location; inside the row's own file (or the only file) the line or JSON path."""
        if where.file == (file or self.only):
            if where.line is not None:
                return f"line {where.line}"
            return where.path if where.path is not None else f"call {where.call}"
        return str(where._replace(file=self.name(where.file)))

    def session(self, stats: SessionStats) -> str:
        return "(the file)" if stats.session == stats.file else stats.session

    def table(self, title: str, *columns: tuple[str, str]) -> _Grid:
        return _Grid(title, columns)

    def rich_table(self, grid: _Grid) -> Table:
        from rich import box
        from rich.table import Table

        style = box.SIMPLE_HEAD
        if not self.console.is_terminal:  # plain text stays ASCII
            style = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n")
        table = Table(
            title=grid.title or None,
            title_justify="left",
            title_style="bold",
            box=style,
            pad_edge=False,
            show_edge=False,
        )
        for name, justify in grid.columns:
            table.add_column(
                name,
                justify=justify,  # type: ignore[arg-type]
                overflow="fold",
                no_wrap=justify == "right" or name == "hash",
            )
        for row in grid.rows:
            table.add_row(*row)
        return table

    def show(self, grid: _Grid, gap: bool = True) -> None:
        """The table, or on a terminal too narrow for it, its rows stacked."""
        from rich.measure import Measurement

        console = self.console
        table = self.rich_table(grid)
        unbounded = console.options.update_width(_PLAIN_WIDTH)
        natural = Measurement.get(console, unbounded, table).maximum
        if console.is_terminal and natural > console.width:
            self.stacked(grid, gap)
            return
        if gap:
            console.print()
        console.print(table)

    def stacked(self, grid: _Grid, gap: bool) -> None:
        """Each row as its first cell, then ``column: value`` lines, wrapped between words."""
        from rich.text import Text

        console, width = self.console, self.console.width
        if gap:
            console.print()
        if grid.title:
            console.print(Text(grid.title, style="bold"))
        names = [name for name, _ in grid.columns]
        for row in grid.rows:
            cells = [Text.from_markup(cell).plain for cell in row]
            lines = _wrap(cells[0], width, 2, 4)
            for name, value in zip(names[1:], cells[1:], strict=True):
                lines += _wrap(f"{name}: {value}", width, 4, 6)
            for line in lines:
                console.print(Text(line), no_wrap=True, overflow="ignore", crop=False)

    def more(self, hidden: int, what: str, where: str) -> None:
        """The line under a table cut at ``max_rows``: how many rows it left out, and where
        they all are."""
        if hidden:
            self.words(f"... and {_plural(hidden, what)} {where}")

    def draw(
        self, sweep_rows: Sequence[SweepRow] | None, outcomes: OutcomeSweep | None = None
    ) -> None:
        self.header()
        if not self.report.calls:  # no call: nothing below would say anything
            return
        self.sessions()
        self.denials()
        self.waste()
        self.histogram()
        self.not_caught()
        if sweep_rows is not None:
            self.sweep(sweep_rows)
        if outcomes is not None and sweep_rows:
            from .outcomes import draw_outcomes

            low, high = sweep_rows[0].max_repeats, sweep_rows[-1].max_repeats
            draw_outcomes(self, outcomes, range(low, high + 1))

    def header(self) -> None:
        report, e, out = self.report, _safe, self.console.print
        formats = Counter(info.format for info in self.files if info.format)
        shown = ", ".join(f"{name} {n}" for name, n in sorted(formats.items())) or "none"
        failed = sum(1 for info in self.files if info.error is not None)
        named = self.only or self.base
        if named and self.console.is_terminal:
            named = _middle(named, self.console.width - 2)
        out(
            f"[bold]loop-brake replay[/]: {_plural(len(self.files), 'file')} ({e(shown)})"
            + (f", [bold red]{failed} unreadable[/]" if failed else "")
            + (f": {e(named)}" if self.only else f" in {e(named)}" if named else "")
            + f"; {_plural(report.calls, 'tool call')}; {_plural(len(report.sessions), 'session')}"
        )
        out(f"maxRepeats = {report.max_repeats} ({e(report.max_repeats_source)})")
        extras = []
        if report.duplicates:
            extras.append(f"{_plural(report.duplicates, 'duplicate')} (same call id, counted once)")
        if report.unparsed_args:
            extras.append(f"{_plural(report.unparsed_args, 'call')} with unparseable arguments")
        records = sum(info.unreadable for info in self.files)  # a failed file is not a record
        if records:
            extras.append(f"{_plural(records, 'unreadable record')} (see stderr)")
        if extras:
            out("; ".join(extras))
        if report.denied:
            out(
                f"[bold red]{_plural(report.denied, 'call')} would be denied[/] in "
                f"{_plural(report.sessions_with_denial, 'session')} "
                f"({_plural(report.denied_streaks, 'streak')})"
            )
        elif records or failed:
            # Never the all-clear of a clean run beside an exit status of 3.
            gone = f"{_plural(failed, 'unreadable file')}" if failed else ""
            if records:
                gone += (" and " if gone else "") + _plural(records, "unreadable record")
            if report.calls:
                out(
                    "[bold red]Incomplete:[/] no call would be denied in what could be read; "
                    f"{gone} left out (see stderr)."
                )
            else:
                out(f"[bold red]Nothing was replayed:[/] no tool call was read; {gone}")
        else:
            out("[green]No call would be denied.[/]")
        if self.wasted:
            from ..analysis.summary import waste_totals
            from .waste import waste_line

            waste, spent = waste_totals(report)
            without = sum(1 for s in report.sessions if s.waste.calls and not s.spent.turns)
            self.words(waste_line(waste, spent, without, self.prices))

    def words(self, text: str) -> None:
        """A line of plain text; on a terminal wrapped between words, a word wider than
        the terminal (a file or model name) shortened in its middle, never split."""
        from rich.text import Text

        console = self.console
        text = visible(text)  # may name a model or a prices file from the input
        if not console.is_terminal:
            console.print(Text(text), no_wrap=True, overflow="ignore", crop=False)
            return
        for line in _wrap(text, console.width, 0, 2):
            console.print(Text(line), no_wrap=True, overflow="ignore", crop=False)

    def sessions(self) -> None:
        """Over ``max_rows`` sessions, the ones the brake stopped (most denied calls,
        then most wasted, then the longest streak) come first, ties in file order."""
        from ..analysis.summary import brake_weight, heaviest

        if not self.report.sessions:
            return
        e = _safe
        columns = [
            ("file", "left"),
            ("session", "left"),
            ("calls", "right"),
            ("longest identical streak", "left"),
            ("denied", "right"),
        ]
        if self.wasted:
            columns.append(("wasted", "right"))
        table = self.table("Sessions", *columns)
        shown = heaviest(self.report.sessions, self.max_rows, brake_weight)
        for stats in shown:
            longest = stats.longest
            if longest is None:
                streak = "-"
            elif longest.length == 1:
                streak = "no repeat"
            else:
                streak = (
                    f"{e(longest.tool)} {longest.hash_prefix} x{longest.length} "
                    f"from {e(self.where(longest.start, stats.file))}"
                )
            cells = [
                e(self.name(stats.file)),
                e(self.session(stats)),
                str(stats.calls),
                streak,
                f"[bold red]{stats.denied}[/]" if stats.denied else "0",
            ]
            if self.wasted:
                cells.append(str(stats.waste.calls))
            table.add_row(*cells)
        self.show(table)
        self.more(len(self.report.sessions) - len(shown), "more session", _ALL_SESSIONS)

    def waste(self) -> None:
        """Per session with wasted calls: the turns spent only on them, and their tokens."""
        from ..analysis.summary import brake_weight, heaviest
        from .waste import session_cells

        rows = [s for s in self.report.sessions if s.waste.calls]
        if not any(stats.spent.turns for stats in rows):
            return  # nothing recorded: the header's "no usage recorded" says it all
        e = _safe
        columns = [
            ("file", "left"),
            ("session", "left"),
            ("wasted calls", "right"),
            ("turns", "left"),
            ("tokens of those turns", "left"),
            ("unknown cost", "right"),
        ]
        if self.prices is not None:
            columns.append(("cost", "left"))
        table = self.table(
            "Waste: the calls after each denial, and the model turns they took", *columns
        )
        shown = heaviest(rows, self.max_rows, brake_weight)
        for stats in shown:
            cells = session_cells(stats.waste, stats.spent, self.prices)
            table.add_row(
                e(self.name(stats.file)),
                e(self.session(stats)),
                str(stats.waste.calls),
                *(e(cell) for cell in cells),
            )
        self.show(table)
        self.more(len(rows) - len(shown), "more session", _ALL_SESSIONS)

    def denials(self) -> None:
        report, e = self.report, _safe
        if not report.denials:
            return
        table = self.table(
            "Denials: where the brake first stopped each streak",
            ("where", "left"),
            ("tool", "left"),
            ("hash", "left"),
            ("streak", "right"),
            ("what happened", "left"),
        )
        listed = report.denials if self.max_rows is None else report.denials[: self.max_rows]
        for denial in listed:
            more = denial.more
            after = (
                "then it stopped" if more == 0 else f"the agent tried {_plural(more, 'more time')}"
            )
            table.add_row(
                f"{e(self.where(denial.at))} (call {denial.at.call})",
                e(denial.tool),
                denial.hash_prefix,
                str(denial.streak_length),
                f"{_denied_by(denial.rule, denial.limit, report.max_repeats)}; {after}",
            )
        self.show(table)
        self.more(report.denied_streaks - len(listed), "more denial", "(all of them: --json)")

    def histogram(self) -> None:
        from ..analysis import histogram

        report, out = self.report, self.console.print
        if not report.streak_lengths:
            return
        out()
        out("[bold]Streak lengths[/] (identical consecutive calls; 1 = no repeat)")
        buckets = histogram(report)
        peak = max(n for _, n in buckets) or 1
        longest = max(report.streak_lengths)
        # "  10+ " + bar + " " + count + " <- denied" on one line, even on a narrow terminal
        digits = len(str(peak))
        bar_width = max(1, min(_BAR_WIDTH, self.console.width - 16 - digits))
        for label, n in buckets:
            bar = "#" * (max(1, round(n * bar_width / peak)) if n else 0)
            low = int(label.rstrip("+"))
            denied = low >= report.max_repeats or (
                label.endswith("+") and longest >= report.max_repeats
            )
            mark = " [red]<- denied[/]" if denied and n else ""
            out(f"{label:>4} {bar:<{bar_width}} {n}{mark}")

    def not_caught(self) -> None:
        """Over ``max_rows`` sessions, the longest alternation or run first."""
        from ..analysis.summary import heaviest, not_caught_weight

        e, out = _safe, self.console.print
        rows = [
            s
            for s in self.report.sessions
            if (s.longest_alternation and s.longest_alternation.length >= 4)
            or (s.longest_same_tool and s.longest_same_tool.length >= 3)
        ]
        out()
        out("[bold]What the exact brake does not catch[/] (informational; the rules do not change)")
        if not rows:
            out("No A/B alternation of 4+ calls; no same-tool run of 3+ calls, arguments changing.")
            return
        table = self.table(
            "",
            ("file", "left"),
            ("session", "left"),
            ("longest A/B alternation", "left"),
            ("longest same-tool run, arguments changing", "left"),
        )
        shown = heaviest(rows, self.max_rows, not_caught_weight)
        for s in shown:
            alt, same = s.longest_alternation, s.longest_same_tool
            table.add_row(
                e(self.name(s.file)),
                e(self.session(s)),
                f"{e(alt.tools[0])}/{e(alt.tools[1])} x{alt.length} "
                f"from {e(self.where(alt.start, s.file))}"
                if alt
                else "-",
                f"{e(same.tool)} x{same.length} from {e(self.where(same.start, s.file))}"
                if same
                else "-",
            )
        self.show(table, gap=False)
        self.more(len(rows) - len(shown), "more session", _ALL_SESSIONS)

    def sweep(self, rows: Sequence[SweepRow]) -> None:
        e = _safe
        table = self.table(
            "Sweep: what each maxRepeats would have denied",
            ("maxRepeats", "right"),
            ("denied calls", "right"),
            ("sessions with a denial", "right"),
            ("first denial", "left"),
        )
        for row in rows:
            first = row.first_denial
            current = " (current)" if row.max_repeats == self.report.max_repeats else ""
            table.add_row(
                f"{row.max_repeats}{current}",
                str(row.denied_calls),
                str(row.sessions_with_denial),
                f"{e(self.where(first))} (call {first.call})" if first else "-",
            )
        self.show(table)
        self.ceiling_sweep([row.max_repeats for row in rows])

    def ceiling_sweep(self, limits: Sequence[int]) -> None:
        """Under the progress mode: what each ``progress_max`` would deny (the sweep's
        limits), from the calls' identical counts whatever their results."""
        from ..analysis.sweep import ceiling_sweep

        rows = ceiling_sweep(self.report, limits)
        if rows is None:
            return
        e = _safe
        table = self.table(
            "Sweep: what each progress_max would have denied (tools in the progress mode; "
            "identical calls in a row, results changing or not)",
            ("progress_max", "right"),
            ("denied calls", "right"),
            ("sessions with a denial", "right"),
            ("first denial", "left"),
        )
        for row in rows:
            first = row.first_denial
            table.add_row(
                str(row.progress_max),
                str(row.denied_calls),
                str(row.sessions_with_denial),
                f"{e(self.where(first))} (call {first.call})" if first else "-",
            )
        self.show(table)
