"""``loop-brake merge``: partial reports (``replay --partial``) as the report of one run.

Reading and combining is ``corpus/partial.py`` and ``analysis/report.merge``; the
outputs are replay's own (``_report_output.py``: the text summary, ``--json``,
``--html``), so a merge of the partials of any split of the input prints what one
replay of it prints.
"""

from __future__ import annotations

import click

from ..analysis import sweep
from ..core.exitcodes import ExitStatus, epilog
from . import _report_output as output
from ._command import Command, CommandError, Exclusion, check_exclusions
from ._outcomes import check, outcome_options, prepare

PROG = "loop-brake merge"
EXCLUSIONS = (
    Exclusion(
        "--html -",
        ("--json",),
        "--html - and --json would both write to stdout: give --html a file",
    ),
)


@click.command(
    "merge",
    cls=Command,
    epilog=epilog("merge"),
    short_help="Combine partial reports (replay --partial) into one report.",
)
@click.argument("partials", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as replay --json does.")
@output.html_option(
    "Also write the report as replay --html does (- for stdout, instead of the summary)."
)
@output.sweep_option(
    "Also tabulate what each maxRepeats would deny (up to the sweep the partials "
    "were replayed with)."
)
@output.prices_option("Price the tokens as replay --prices does.")
@output.rows_option("Rows per table of the text summary (all: every one).")
@outcome_options(
    "Check each --sweep limit against run outcomes as replay --outcomes does (the "
    "partials must be replayed with --outcomes)."
)
def merge_command(
    partials: tuple[str, ...],
    as_json: bool,
    html_path: str | None,
    sweep_text: str | None,
    prices_path: str | None,
    max_rows: int | None,
    outcomes_path: str | None = None,
    tolerance_text: str | None = None,
    stop_after: int | None = None,
) -> int:
    """Combine the partial reports PARTIALS, in the order given, into the report that one
    replay of all their inputs in that order would have printed.

    Each partial is written by `loop-brake replay ... --partial FILE` (a piece
    of a corpus: some files, or some row groups of a Parquet dataset, replayed
    anywhere); all must be made with the same maxRepeats, policy and --sweep.
    The outputs are replay's: the text summary, --json, --html.

    \b
      loop-brake replay runs/a/ --partial a.json
      loop-brake replay runs/b/ --partial b.json
      loop-brake merge a.json b.json --json

    Partials hold no tool argument, and neither does any output.
    """
    from ..analysis import merge
    from ..corpus.partial import PartialError, read_partial

    check_exclusions(EXCLUSIONS, {"--html -": html_path == "-", "--json": as_json})
    limits = output.sweep_limits(sweep_text)
    prices = output.load_prices(prices_path)
    setup = prepare(outcomes_path, tolerance_text, stop_after, limits is not None, PROG)
    reports = []
    policies = set()
    for path in partials:
        try:
            report, policy = read_partial(path)
        except PartialError as exc:
            raise CommandError(f"{path}: {exc}", ExitStatus.UNREADABLE) from None
        reports.append(report)
        policies.add(policy)
    first = reports[0]
    for path, report in zip(partials, reports, strict=True):
        if (
            (report.max_repeats, report.max_repeats_source, report.cap, report.stop_after)
            != (
                first.max_repeats,
                first.max_repeats_source,
                first.cap,
                first.stop_after,
            )
            or report.stop_in_a_row != first.stop_in_a_row
            or len(policies) > 1
        ):
            raise CommandError(
                f"{path}: made with other settings than {partials[0]} (maxRepeats, its "
                "source, the policy, --sweep or --outcomes): merge partials of one replay only"
            )
    if setup is not None and first.stop_after is None:
        raise CommandError(
            "--outcomes: the partials hold no stop points: replay the pieces with "
            "--sweep and --outcomes too"
        )
    report = merge(reports)
    (policy,) = policies
    rows = None
    if limits is not None:
        if limits.stop - 1 > report.cap:
            raise CommandError(
                f"--sweep: the partials were replayed for maxRepeats up to {report.cap}: "
                f"replay them with --sweep {limits.start}..{limits.stop - 1}"
            )
        rows = sweep(report, limits)
    output.report_problems(report, PROG)
    checked = None
    if setup is not None and limits is not None:
        if stop_after is None:  # the pieces' own K, as their replay said it
            said = report.stop_after_source or setup.stop_source  # corpus.work: not said
            if said == "default" and first.stop_after != setup.stop_after:
                said = "--stop-after"
            setup = setup.with_stop(first.stop_after, said)
        elif stop_after != first.stop_after:
            raise CommandError(
                f"--stop-after {stop_after}: the partials were replayed with --stop-after "
                f"{first.stop_after}: replay them with --stop-after {stop_after}"
            )
        checked = check(report, limits, setup)
    if not output.print_report(
        report, rows, prices, policy, as_json, html_path, max_rows, PROG, checked
    ):
        return ExitStatus.OUTPUT
    return ExitStatus.UNREADABLE if report.unreadable else ExitStatus.OK
