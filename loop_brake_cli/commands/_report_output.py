"""A replay's report as people and programs get it, shared by ``replay`` and ``merge``.

``merge`` promises to print what one replay of all its partials' inputs prints, so
both commands take the report's options (``--sweep``, ``--html``, ``--prices``,
``--rows``) with the same types and defaults, say the report's problems on stderr
alike, and draw it with one function: the text summary and its ``policy:`` line,
``--json`` or ``--html``. Only each command's help text and name differ.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from ..analysis import Report, parse_sweep, report_to_json
from ..analysis.prices import Prices
from ..analysis.report import FileInfo
from ..analysis.summary import SUMMARY_ROWS
from ..core.exitcodes import ExitStatus
from ..render.visible import visible
from ._command import CommandError
from ._options import Count, F, file_option

SKIPPED_NAMED = 3
"""Up to this many skipped files are named one a line; more are summarised in one."""


def say(message: str, prog: str) -> None:
    """One line for people on stderr, its identifiers made visible."""
    click.echo(f"{prog}: {visible(message, lines=True)}", err=True)


class Rows(Count):
    """``--rows``: a whole number of at least 1, or ``all`` (None)."""

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "N|all"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | None:
        if value is None or (isinstance(value, str) and value.strip() == "all"):
            return None
        return super().convert(value, param, ctx)


def rows_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--rows",
        "max_rows",
        type=Rows(1),
        default=str(SUMMARY_ROWS),
        show_default=True,
        help=help,
    )


def sweep_option(help: str) -> Callable[[F], F]:
    return click.option("--sweep", "sweep_text", metavar="LOW..HIGH", default=None, help=help)


def html_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--html",
        "html_path",
        type=click.Path(dir_okay=False, allow_dash=True),
        default=None,
        metavar="FILE",
        help=help,
    )


def prices_option(help: str) -> Callable[[F], F]:
    return file_option("--prices", "prices_path", help)


def sweep_limits(text: str | None) -> range | None:
    """The maxRepeats values ``--sweep`` asks for (None without it); else ``CommandError``,
    status 2, saying why ``text`` is not LOW..HIGH."""
    if text is None:
        return None
    try:
        return parse_sweep(text)
    except ValueError as exc:
        raise CommandError(f"--sweep: {exc}") from None


def load_prices(path: str | None) -> Prices | None:
    """The user's prices (None without ``--prices``); else ``CommandError`` with each
    located mistake: status 3 for a file that cannot be opened (as for --config), else 2;
    before any input is read."""
    if path is None:
        return None
    from ..analysis.prices import PricesError
    from ..analysis.prices import load_prices as read_prices

    try:
        return read_prices(path)
    except PricesError as exc:
        status = ExitStatus.UNREADABLE if exc.unopened else ExitStatus.USAGE
        raise CommandError(str(exc), status) from None


def write_json(doc: object) -> None:
    """``doc`` as indented JSON on stdout, flushed (``json_text``)."""
    sys.stdout.buffer.write(json_text(doc))
    sys.stdout.flush()


# Where orjson may spell a float otherwise than Python's repr, which the standard
# library writes: below 1e-4 (repr 7.9e-05, orjson 0.000079; repr 1.5e-07, orjson
# 1.5e-7). Both spell the rest alike (shortest round trip; 1e+16 and up the same).
# Matched in the output, where strings may hold these bytes too: then the slow way.
_FLOAT_SPELLING = re.compile(rb"0\.0000|[0-9]e-")


def json_text(doc: object) -> bytes:
    """``doc`` as ``json.dumps(doc, ensure_ascii=False, indent=2)`` writes it, plus a
    newline, in UTF-8 (a lone surrogate backslash-escaped): the bytes every ``--json``
    has always written.

    orjson writes them about 16x faster (the standard library's encoder is pure Python
    with ``indent``: 4.2 CPU s for the 114 MB document of 100,000 sessions, orjson 0.26
    s), and identically where it writes at all: the same escapes, separators, indents
    and empty containers. Where it may not, the standard library writes: orjson refuses
    the document (a lone surrogate, an integer beyond 64 bits, a key that is not a
    string, nesting deeper than 255) or its output holds a small float
    (``_FLOAT_SPELLING``). A non-finite float, which the standard library writes as
    ``NaN`` or ``Infinity`` (not JSON) and orjson as ``null``, occurs in no document:
    their only float is a dollar amount, bounded prices times token counts.
    ``tests/test_json_text.py`` compares the two writers."""
    try:
        import orjson

        out = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except (ImportError, TypeError):  # orjson.JSONEncodeError is a TypeError
        out = None
    if out is not None and _FLOAT_SPELLING.search(out) is None:
        return out
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    return text.encode("utf-8", "backslashreplace")


def warned_note(report: Report) -> str:
    """What the ``policy:`` line adds under a policy with ``warn_at`` (else nothing)."""
    return f"; {report.warned} call(s) warned" if report.warns else ""


def write_html(
    report: Report,
    target: str,
    policy: str | None,
    prices: Prices | None,
    prog: str,
    outcomes: Any = None,
) -> bool:
    """The HTML report to ``target`` (``-``: stdout), written atomically; False after
    saying on stderr why it could not be. ``policy``: the policy file's path, or None;
    ``outcomes``: the sweep checked against outcomes (``--outcomes``), or None."""
    from ..render.html import HtmlWriteError, page_data, render_page
    from ..render.html import write_html as write_page

    data = page_data(report, policy, prices)
    if outcomes is not None:
        from ..render.html.outcomes import outcomes_data

        data["outcomes"] = outcomes_data(outcomes, prices)
    page = render_page(data)
    try:
        write_page(page, target)
    except HtmlWriteError as exc:
        say(str(exc), prog)
        return False
    if target != "-":
        say(f"wrote {target}", prog)  # on stderr: stdout keeps the summary (or JSON) alone
    return True


def print_report(
    report: Report,
    rows: Any,
    prices: Prices | None,
    policy: str | None,
    as_json: bool,
    html_path: str | None,
    max_rows: int | None,
    prog: str,
    outcomes: Any = None,
) -> bool:
    """The report as asked: ``--html`` first, then ``--json`` or the text summary with its
    ``policy:`` line (none with ``--html -``: the page is stdout's only content); False
    after saying on stderr why the page could not be written. ``rows``: the sweep's
    table, or None; ``policy``: the policy file's path, or None; ``outcomes``: the
    sweep checked against outcomes (``analysis.outcome_sweep.OutcomeSweep``), or None."""
    if html_path is not None and not write_html(report, html_path, policy, prices, prog, outcomes):
        return False
    if as_json:
        doc = report_to_json(report, rows, prices)
        if policy is not None:
            doc["policy"] = policy
        if outcomes is not None:
            doc["outcomes"] = outcomes.to_json(prices)
        write_json(doc)
    elif html_path != "-":
        from ..render.terminal import print_replay_summary

        print_replay_summary(report, rows, prices=prices, max_rows=max_rows, outcomes=outcomes)
        if policy is not None:
            click.echo(f"policy: {policy}{warned_note(report)}")
    return True


def say_zero(files: list[FileInfo], prog: str) -> None:
    """Each file that gave no tool call, once on stderr with what was read (issue 39); a
    directory of many such files in one line."""
    if len(files) <= SKIPPED_NAMED:
        for info in files:
            say(f"{info.file}: warning: {info.zero}", prog)
        return
    named = ", ".join(info.file for info in files[:SKIPPED_NAMED])
    say(
        f"warning: {len(files)} files gave no tool call: {named} and "
        f"{len(files) - SKIPPED_NAMED} more (--strict makes them unreadable)",
        prog,
    )


def report_problems(report: Report, prog: str) -> None:
    """Each unreadable file or record, and each skipped file, once on stderr (``merge``
    says them as the replay of the same input would)."""
    unopened = {info.file for info in report.files if not info.opened}
    for info in report.files:
        if info.warning is not None:
            say(f"{info.file}: {info.warning}", prog)
    for error in report.errors:
        if error.file in unopened and error.line is None and error.path is None:
            reason = error.message.removeprefix("cannot open: ")
            say(f"cannot open {error.file}: {reason}", prog)
        else:
            say(str(error), prog)
    if report.unreadable > len(report.errors):
        say(f"... and {report.unreadable - len(report.errors)} more unreadable record(s)", prog)
    say_zero([info for info in report.files if info.zero is not None], prog)
    loud = [skipped for skipped in report.skipped if not skipped.quiet]
    if len(loud) <= SKIPPED_NAMED:
        for skipped in loud:
            say(f"{skipped.file}: skipped: {skipped.reason}", prog)
        return
    # A directory of transcripts beside other files: one line, not one per file.
    named = ", ".join(skipped.file for skipped in loud[:SKIPPED_NAMED])
    say(
        f"skipped {len(loud)} files found in the directories that are not transcripts: "
        f"{named} and {len(loud) - SKIPPED_NAMED} more (--json lists each with its reason; "
        "--strict makes them unreadable)",
        prog,
    )
