"""``loop-brake merge``: partial reports (``replay --partial``) as the report of one run.

Reading and combining is ``corpus/partial.py`` and ``analysis/report.merge``; the
outputs are replay's own (the text summary, ``--json``, ``--html``), so a merge of
the partials of any split of the input prints what one replay of it prints.
"""

from __future__ import annotations

import click

from ..analysis import parse_sweep, report_to_json, sweep
from ..analysis.summary import SUMMARY_ROWS
from ..core.exitcodes import ExitStatus, epilog
from ._options import Errors, JsonCommand
from .replay import (
    _load_prices,
    _Rows,
    _write_html,
    _write_json,
    report_problems,
    warned_note,
)

PROG = "loop-brake merge"


@click.command(
    "merge",
    cls=JsonCommand,
    epilog=epilog("merge"),
    short_help="Combine partial reports (replay --partial) into one report.",
)
@click.argument("partials", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as replay --json does.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    metavar="FILE",
    help="Also write the report as replay --html does (- for stdout, instead of the summary).",
)
@click.option(
    "--sweep",
    "sweep_text",
    metavar="LOW..HIGH",
    default=None,
    help="Also tabulate what each maxRepeats would deny (up to the sweep the partials "
    "were replayed with).",
)
@click.option(
    "--prices",
    "prices_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Price the tokens as replay --prices does.",
)
@click.option(
    "--rows",
    "max_rows",
    type=_Rows(1),
    default=str(SUMMARY_ROWS),
    show_default=True,
    help="Rows per table of the text summary (all: every one).",
)
def merge_command(
    partials: tuple[str, ...],
    as_json: bool,
    html_path: str | None,
    sweep_text: str | None,
    prices_path: str | None,
    max_rows: int | None,
) -> int:
    """Combine the partial reports PARTIALS, in the order given, into the report that one
    replay of all their inputs in that order would have printed.

    \b
    Each partial is written by `loop-brake replay ... --partial FILE` (a piece of a
    corpus: some files, or some row groups of a Parquet dataset, replayed anywhere);
    all must be made with the same maxRepeats, policy and --sweep. The outputs are
    replay's: the text summary, --json, --html.

    \b
      loop-brake replay runs/a/ --partial a.json
      loop-brake replay runs/b/ --partial b.json
      loop-brake merge a.json b.json --json

    Partials hold no tool argument, and neither does any output.
    """
    from ..analysis import merge
    from ..corpus.partial import PartialError, read_partial

    errors = Errors(PROG, as_json)
    if html_path == "-" and as_json:
        return errors("--html - and --json would both write to stdout: give --html a file")
    limits = None
    if sweep_text is not None:
        try:
            limits = parse_sweep(sweep_text)
        except ValueError as exc:
            return errors(f"--sweep: {exc}")
    prices = None
    if prices_path is not None:
        prices = _load_prices(errors, prices_path)
        if isinstance(prices, ExitStatus):
            return prices
    reports = []
    policies = set()
    for path in partials:
        try:
            report, policy = read_partial(path)
        except PartialError as exc:
            return errors(f"{path}: {exc}", ExitStatus.UNREADABLE)
        reports.append(report)
        policies.add(policy)
    first = reports[0]
    for path, report in zip(partials, reports, strict=True):
        if (report.max_repeats, report.max_repeats_source, report.cap) != (
            first.max_repeats,
            first.max_repeats_source,
            first.cap,
        ) or len(policies) > 1:
            return errors(
                f"{path}: made with other settings than {partials[0]} (maxRepeats, its "
                "source, the policy or --sweep): merge partials of one replay only"
            )
    report = merge(reports)
    (policy,) = policies
    rows = None
    if limits is not None:
        if limits.stop - 1 > report.cap:
            return errors(
                f"--sweep: the partials were replayed for maxRepeats up to {report.cap}: "
                f"replay them with --sweep {limits.start}..{limits.stop - 1}"
            )
        rows = sweep(report, limits)
    report_problems(report, PROG)
    if html_path is not None and not _write_html(report, html_path, policy, prices, PROG):
        return ExitStatus.OUTPUT
    if as_json:
        doc = report_to_json(report, rows, prices)
        if policy is not None:
            doc["policy"] = policy
        _write_json(doc)
    elif html_path != "-":
        from ..render.terminal import print_replay_summary

        print_replay_summary(report, rows, prices=prices, max_rows=max_rows)
        if policy is not None:
            click.echo(f"policy: {policy}{warned_note(report)}")
    return ExitStatus.UNREADABLE if report.unreadable else ExitStatus.OK
