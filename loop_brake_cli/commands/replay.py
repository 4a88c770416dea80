"""``loop-brake replay``: saved transcripts through the brake, and where it would have bitten.

The command only parses options, resolves maxRepeats (exit 2 before reading any
input if it is unusable) and chooses an output; finding files is discover.py,
deciding how a file is read is formats/_detect.py, counting is analysis/,
drawing is render.py. With ``--json`` every early failure is one JSON object
on stdout, ``{"error": ..., "status": N}``.
"""

from __future__ import annotations

import sys

import click

from ..analysis import Job, Report, replay_files, sweep
from ..analysis.discover import discover
from ..analysis.summary import SUMMARY_ROWS
from ..core.exitcodes import ExitStatus, epilog
from ..formats import names
from ._options import (
    Count,
    Errors,
    JsonCommand,
    config_option,
    file_option,
    max_line_bytes_option,
    max_repeats_option,
    policy_option,
    resolve_settings,
)
from ._outcomes import check, outcome_options, prepare
from ._report_output import (
    html_option,
    load_prices,
    prices_option,
    print_report,
    report_problems,
    rows_option,
    say,
    sweep_limits,
    sweep_option,
    write_json,
)
from ._suggest import conflict, print_suggestion, suggest_option

PROG = "loop-brake replay"
PIECES_PER_JOB = 4
"""A Parquet dataset is split into up to this many pieces per worker (by row group), so
a piece that takes longer than the others does not leave the other workers idle."""


def _fail(message: str) -> None:
    say(message, PROG)


@click.command(
    "replay",
    cls=JsonCommand,
    epilog=epilog("replay"),
    short_help="Replay saved transcripts: where the brake would have stopped the agent.",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(allow_dash=True))
@max_repeats_option(
    "Deny the call that brings a streak to N "
    "(default: --config, else $DSH_LOOP_BRAKE_MAX_REPEATS, else 3)."
)
@config_option(
    "Take maxRepeats from these cordis.patch.yml layers, in composition order (repeatable)."
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(names()),
    default=None,
    help="Read every file as this format (default: detected per file), as filter does: "
    "a file that looks like another format is read with a warning; one that gives no "
    "tool call is unreadable.",
)
@click.option(
    "--continue-sessions",
    is_flag=True,
    help="Let streaks continue across files (default: each file is its own run).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print the summary as one JSON document (an error as {"error": ...}).',
)
@click.option(
    "--verdicts",
    is_flag=True,
    help="Print the filter's verdict lines instead of a summary (as `filter --format X`).",
)
@sweep_option("Also tabulate what each maxRepeats in LOW..HIGH (e.g. 2..10) would deny.")
@html_option(
    "Also write the report as one self-contained HTML page to FILE (- for stdout, "
    "instead of the summary): totals, a sortable table, a timeline of each session."
)
@rows_option(
    "Rows per table of the summary (all: every one); beyond them, the sessions the "
    "brake stopped first, and one line says how many more (all of them in --json, --html)."
)
@click.option("--fail-on-deny", is_flag=True, help="Exit 1 if any call would be denied.")
@click.option("--expect-deny", is_flag=True, help="Exit 1 unless at least one call would be.")
@click.option(
    "--strict",
    is_flag=True,
    help="A file in a directory that is not a transcript is unreadable (exit 3) "
    "instead of skipped; so is one read as a --format it does not look like.",
)
@click.option(
    "-j",
    "--jobs",
    type=Count(1),
    default=1,
    show_default=True,
    help="Replay files in N worker processes (each file its own run; output in input order).",
)
@max_line_bytes_option("Longer lines are unreadable records (and are never held in memory whole).")
@policy_option()
@file_option(
    "--compare-policy",
    "compare_path",
    "Instead of the summary: per session, what the seed's brake (maxRepeats only) "
    "and the policy in FILE would each deny, side by side (--json for a document).",
)
@prices_option(
    "Price the tokens in the summary at the prices per million tokens in this TOML "
    "file (per model-name glob; see samples/prices.example.toml). Never guessed."
)
@file_option(
    "--partial",
    "partial_path",
    "Also write this replay as a partial report to FILE, for `loop-brake merge` "
    "(a corpus replayed in pieces, reported once); the summary is printed as usual.",
)
@outcome_options(
    "Check each --sweep limit against run outcomes (SWE-bench results, CSV, JSON lines): "
    "resolved runs stopped, failed runs' calls saved, and a recommendation."
)
@suggest_option()
def replay_command(
    paths: tuple[str, ...],
    max_repeats: int | None,
    config_paths: tuple[str, ...],
    format_name: str | None,
    continue_sessions: bool,
    as_json: bool,
    verdicts: bool,
    sweep_text: str | None,
    fail_on_deny: bool,
    expect_deny: bool,
    jobs: int,
    max_line_bytes: int,
    strict: bool = False,
    policy_path: str | None = None,
    compare_path: str | None = None,
    html_path: str | None = None,
    prices_path: str | None = None,
    max_rows: int | None = SUMMARY_ROWS,
    partial_path: str | None = None,
    outcomes_path: str | None = None,
    tolerance_text: str | None = None,
    stop_after: int | None = None,
    suggest_policy: bool = False,
) -> int:
    """Replay transcripts from PATHS (files, directories searched recursively, or -)
    through the brake and summarise where it would have stopped each agent.

    \b
    Every file is its own run; its format is detected from its content
    (--format forces one) and .gz files are read transparently. The summary
    lists sessions, their longest identical streak, each denial and how many
    more identical calls the agent made after it, what those calls cost (model
    turns and tokens where the transcript records usage; dollars with --prices),
    a histogram of streak lengths, and what the exact match cannot catch (A/B
    alternation, same tool with changing arguments). Unreadable files get a
    located error on stderr, the other files are still reported, and the exit
    status is 3. A file found in a directory that is not a transcript is
    skipped, named once on stderr.

    \b
      loop-brake replay ~/.codex/sessions --sweep 2..10
      loop-brake replay golden/ --fail-on-deny     # CI: healthy runs stay unbraked
      loop-brake replay stuck/ --expect-deny       # CI: known loops are caught

    Tool arguments never appear in any output: only tool names, session ids,
    call ids, 12-hex hash prefixes and locations.
    """
    errors = Errors(PROG, as_json)
    if as_json and verdicts:
        return errors("--json and --verdicts are different outputs: choose one")
    if fail_on_deny and expect_deny:
        return errors(
            "--fail-on-deny and --expect-deny ask for opposite outcomes: choose one "
            "(run replay twice for two sets of transcripts)"
        )
    if verdicts and sweep_text is not None:
        return errors("--sweep is part of the summary (and --json), not of --verdicts")
    if jobs > 1 and continue_sessions:
        return errors(
            "-j cannot be combined with --continue-sessions (streaks would cross workers)"
        )
    limits = sweep_limits(errors, sweep_text)
    if isinstance(limits, ExitStatus):
        return limits
    if suggest_policy and (
        clash := conflict(
            as_json,
            verdicts,
            sweep_text is not None,
            compare_path is not None,
            html_path is not None,
            partial_path is not None,
            prices_path is not None,
        )
    ):
        return errors(clash)
    if compare_path is not None and (verdicts or sweep_text is not None):
        return errors("--compare-policy is its own output: not with --verdicts or --sweep")
    if html_path is not None and (verdicts or compare_path is not None):
        other = "--verdicts" if verdicts else "--compare-policy"
        return errors(f"--html draws the summary's report, not {other}")
    if partial_path is not None and (verdicts or compare_path is not None):
        other = "--verdicts" if verdicts else "--compare-policy"
        return errors(f"--partial writes the summary's report, not {other}")
    if html_path == "-" and as_json:
        return errors("--html - and --json would both write to stdout: give --html a file")
    if compare_path is not None and policy_path is not None:
        return errors("--compare-policy FILE already names the policy: drop --policy")
    if prices_path is not None and (verdicts or compare_path is not None):
        other = "--verdicts" if verdicts else "--compare-policy"
        return errors(f"--prices is part of the summary (and --json), not of {other}")
    rows_given = click.get_current_context().get_parameter_source("max_rows")
    if rows_given not in (None, click.core.ParameterSource.DEFAULT):
        other = _not_a_summary(as_json, verdicts, compare_path, html_path)
        if other is not None:
            return errors(f"--rows bounds the text summary's tables, not {other}")
    settings = resolve_settings(errors, max_repeats, compare_path or policy_path, config_paths)
    if isinstance(settings, ExitStatus):
        return settings
    value, source, policy = settings
    prices = load_prices(errors, prices_path)
    if isinstance(prices, ExitStatus):
        return prices
    setup = prepare(
        errors, outcomes_path, tolerance_text, stop_after, bool(limits) or suggest_policy, PROG
    )
    if isinstance(setup, ExitStatus):
        return setup

    files: list[str] = []
    in_directory: set[str] = set()
    missing: list[str] = []
    for found in discover(paths):
        if found.error is None:
            files.append(found.path)
            if found.in_directory:
                in_directory.add(found.path)
        else:
            missing.append(f"{found.path}: {found.error}")
    if not files:
        return errors("nothing to replay: " + "; ".join(missing), ExitStatus.NOT_FOUND)
    for message in missing:
        _fail(message)

    if compare_path is not None:
        return _compare(
            files,
            value,
            policy,
            format_name,
            continue_sessions,
            max_line_bytes,
            in_directory,
            strict,
            as_json,
            bool(missing),
            fail_on_deny,
            expect_deny,
            jobs,
        )
    if verdicts:
        from ._replay_verdicts import print_verdicts

        outcome = print_verdicts(
            files,
            value,
            source,
            format_name,
            continue_sessions,
            max_line_bytes,
            in_directory,
            strict,
            policy,
            fail=_fail,
        )
        if outcome is None:
            return errors("nothing to replay: no file found is a transcript", ExitStatus.NOT_FOUND)
        bad, calls, denied = outcome
        unreadable = bad or bool(missing)
    else:
        cap = max(limits.stop - 1 if limits else 0, value)
        report = _replay(
            files,
            value,
            source,
            cap,
            format_name,
            continue_sessions,
            max_line_bytes,
            jobs,
            in_directory,
            strict,
            policy,
            timeline=html_path is not None or partial_path is not None,
            stop_after=None if setup is None or suggest_policy else setup.stop_after,
            suggest=suggest_policy,
        )
        report.warns = policy is not None and policy.uses_warn
        if setup is not None:
            report.stop_after_source = setup.stop_source
        report_problems(report, PROG)
        if not report.files:
            return errors("nothing to replay: no file found is a transcript", ExitStatus.NOT_FOUND)
        if suggest_policy:
            print_suggestion(report, setup)
            unreadable = report.unreadable > 0 or bool(missing)
            return _status(unreadable, report.calls, report.denied > 0, fail_on_deny, expect_deny)
        rows = sweep(report, limits) if limits else None
        policy_file = policy.path if policy is not None else None
        if partial_path is not None and not _write_partial(report, partial_path, policy_file):
            return ExitStatus.OUTPUT
        checked = None if setup is None or not limits else check(report, limits, setup)
        if not print_report(
            report, rows, prices, policy_file, as_json, html_path, max_rows, PROG, checked
        ):
            return ExitStatus.OUTPUT
        calls, denied = report.calls, report.denied > 0
        unreadable = report.unreadable > 0 or bool(missing)
    return _status(unreadable, calls, denied, fail_on_deny, expect_deny)


def _write_partial(report: Report, target: str, policy: str | None) -> bool:
    """The partial report to ``target``; False after saying on stderr why it could not be."""
    from ..corpus.partial import write_partial

    try:
        write_partial(report, target, policy)
    except OSError as exc:
        _fail(f"cannot write {target}: {exc.strerror or exc.__class__.__name__}")
        return False
    _fail(f"wrote {target}")
    return True


def _not_a_summary(
    as_json: bool, verdicts: bool, compare_path: str | None, html_path: str | None
) -> str | None:
    """The output asked for instead of the text summary, which alone has bounded tables."""
    if as_json:
        return "--json (it lists every session)"
    if verdicts:
        return "--verdicts"
    if compare_path is not None:
        return "--compare-policy"
    if html_path == "-":
        return "--html - (the page lists every session)"
    return None


def _status(
    unreadable: bool, calls: int, denied: bool, fail_on_deny: bool, expect_deny: bool
) -> ExitStatus:
    """Unreadable input first (3), then the deny checks (1); said on stderr either way."""
    if fail_on_deny and not calls:
        _fail("warning: --fail-on-deny: no tool call was read, so nothing was checked")
    if expect_deny and not denied:
        if calls:
            _fail("--expect-deny: no call would be denied")
        else:
            _fail("--expect-deny: no tool call was read, so none could be denied")
    if unreadable:
        return ExitStatus.UNREADABLE
    if (fail_on_deny and denied) or (expect_deny and not denied):
        return ExitStatus.BRAKE
    return ExitStatus.OK


def _replay(
    files: list[str],
    value: int,
    source: str,
    cap: int,
    format_name: str | None,
    continue_sessions: bool,
    max_line_bytes: int,
    jobs: int,
    in_directory: set[str],
    strict: bool,
    policy: object = None,
    timeline: bool = False,
    stop_after: int | None = None,
    suggest: bool = False,
) -> Report:
    from ._replay_pool import progress_bar, replay_parallel

    progress = progress_bar(files)
    try:
        if jobs > 1 and "-" not in files:
            from ..corpus.rows import pieces

            # Each file its own job; a Parquet dataset of several row groups, several.
            work = [
                Job(
                    path,
                    format_name,
                    value,
                    source,
                    cap,
                    max_line_bytes,
                    path in in_directory,
                    strict,
                    policy,
                    timeline,
                    piece,
                    stop_after,
                    suggest,
                )
                for path in files
                for piece in pieces(path, jobs * PIECES_PER_JOB)
            ]
            if len(work) > 1:
                return replay_parallel(work, jobs, progress)
        on_progress, on_file = progress.callbacks() if progress else (None, None)
        return replay_files(
            files,
            max_repeats=value,
            max_repeats_source=source,
            cap=cap,
            format_name=format_name,
            max_line_bytes=max_line_bytes,
            continue_sessions=continue_sessions,
            on_file=on_file,
            on_progress=on_progress,
            in_directory=in_directory,
            strict=strict,
            policy=policy,
            timeline=timeline,
            stop_after=stop_after,
            suggest=suggest,
        )
    finally:
        if progress:
            progress.stop()


def _compare(
    files: list[str],
    value: int,
    policy: object,
    format_name: str | None,
    continue_sessions: bool,
    max_line_bytes: int,
    in_directory: set[str],
    strict: bool,
    as_json: bool,
    missing: bool,
    fail_on_deny: bool,
    expect_deny: bool,
    jobs: int = 1,
) -> ExitStatus:
    """``--compare-policy``: the seed's denials and the policy's, per session; with
    ``-j N``, each file in a worker process (merged in input order: the same output)."""
    from ..analysis.compare import (
        compare_file,
        compare_files,
        merge_comparisons,
        render_comparison,
    )

    options = {
        "max_repeats": value,
        "policy": policy,
        "format_name": format_name,
        "max_line_bytes": max_line_bytes,
        "strict": strict,
    }
    if jobs > 1 and len(files) > 1 and "-" not in files:
        from ._replay_pool import ordered_map

        work = [(path, {**options, "in_directory": {path} & in_directory}) for path in files]
        result = merge_comparisons(list(ordered_map(compare_file, work, files, jobs)))
    else:
        result = compare_files(
            files, continue_sessions=continue_sessions, in_directory=in_directory, **options
        )
    for error in result.errors:
        _fail(error)
    if as_json:
        write_json(result.to_json())
    else:
        sys.stdout.write(render_comparison(result))
        sys.stdout.flush()
    totals = result.totals()
    return _status(
        result.unreadable > 0 or missing,
        totals["calls"],
        totals["policyDenied"] > 0,
        fail_on_deny,
        expect_deny,
    )
