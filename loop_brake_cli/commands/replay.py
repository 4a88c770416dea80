"""``loop-brake replay``: saved transcripts through the brake, and where it would have bitten.

The command only parses options, resolves maxRepeats (exit 2 before reading any
input if it is unusable) and chooses an output; finding files is discover.py,
deciding how a file is read is formats/_detect.py, counting is analysis/,
drawing is render.py. With ``--json`` every early failure is one JSON object
on stdout, ``{"error": ..., "status": N}``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..analysis import Job, Report, replay_files, sweep
from ..analysis.discover import discover
from ..core.exitcodes import ExitStatus, epilog
from ..formats import names
from ._command import Command, CommandError, check_exclusions
from ._options import (
    Count,
    config_option,
    file_option,
    max_line_bytes_option,
    max_repeats_option,
    policy_option,
    resolve_settings,
)
from ._outcomes import check, outcome_options, prepare
from ._replay_options import EXCLUSIONS, Found, ReplayOptions, Settings
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
from ._suggest import print_suggestion, suggest_option

PROG = "loop-brake replay"
PIECES_PER_JOB = 4
"""A Parquet dataset is split into up to this many pieces per worker (by row group), so
a piece that takes longer than the others does not leave the other workers idle."""


def _fail(message: str) -> None:
    say(message, PROG)


@click.command(
    "replay",
    cls=Command,
    epilog=epilog("replay"),
    short_help="Replay saved transcripts: where the brake would have stopped the agent.",
    more=(
        "config_paths",
        "continue_sessions",
        "verdicts",
        "max_rows",
        "strict",
        "max_line_bytes",
        "compare_path",
        "prices_path",
        "partial_path",
        "outcomes_path",
        "tolerance_text",
        "stop_after",
        "suggest_policy",
    ),
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
    metavar="NAME",
    help="Read every file as NAME (loop-brake help formats; default: detected per file).",
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
    help='Print the summary as one JSON document (an error: {"error": ...}).',
)
@click.option(
    "--verdicts",
    is_flag=True,
    help="Print the filter's verdict lines instead of a summary (as `filter --format X`).",
)
@sweep_option("Also tabulate what each maxRepeats in LOW..HIGH (e.g. 2..10) would deny.")
@html_option(
    "Also write the report as one self-contained HTML page to FILE (- for stdout, "
    "instead of the summary)."
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
def replay_command(**params: Any) -> int:
    """Replay the transcripts in PATHS (files, directories searched recursively,
    or -; each file's format detected) and summarise where the brake would have
    stopped each agent: its longest identical streaks, each denial, and what the
    calls after it cost. An unreadable file is named on stderr and the others
    reported (exit 3). Arguments never appear in any output.

    \b
      loop-brake replay ~/.codex/sessions --sweep 2..10
      loop-brake replay golden/ --fail-on-deny  # CI: healthy runs stay unbraked
      loop-brake replay stuck/ --expect-deny    # CI: known loops are caught
    """
    rows = click.get_current_context().get_parameter_source("max_rows")
    rows_given = rows not in (None, click.core.ParameterSource.DEFAULT)
    return run_replay(ReplayOptions(**params, rows_given=rows_given))


def run_replay(opts: ReplayOptions) -> int:
    """Options first (exclusions, values, settings: a usage error before any input is
    read), then the files, then the output asked for."""
    check_exclusions(EXCLUSIONS, opts.given())
    limits = sweep_limits(opts.sweep_text)
    policy_path = opts.compare_path or opts.policy_path
    settings = Settings(*resolve_settings(opts.max_repeats, policy_path, opts.config_paths))
    prices = load_prices(opts.prices_path)
    setup = prepare(
        opts.outcomes_path,
        opts.tolerance_text,
        opts.stop_after,
        bool(limits) or opts.suggest_policy,
        PROG,
    )
    found = _find(opts.paths)
    if opts.compare_path is not None:
        return _compare(opts, found, settings)
    if opts.verdicts:
        from ._replay_verdicts import print_verdicts

        outcome = print_verdicts(opts, found, settings, fail=_fail)
        if outcome is None:
            raise CommandError(
                "nothing to replay: no file found is a transcript", ExitStatus.NOT_FOUND
            )
        bad, calls, denied = outcome
        unreadable = bad or found.missing
    else:
        policy = settings.policy
        cap = max(limits.stop - 1 if limits else 0, settings.value)
        timeline = opts.html_path is not None or opts.partial_path is not None
        stop_after = None if setup is None or opts.suggest_policy else setup.stop_after
        report = _replay(opts, found, settings, cap, timeline, stop_after)
        report.warns = policy is not None and policy.uses_warn
        if setup is not None:
            report.stop_after_source = setup.stop_source
        report_problems(report, PROG)
        if not report.files:
            raise CommandError(
                "nothing to replay: no file found is a transcript", ExitStatus.NOT_FOUND
            )
        if opts.suggest_policy:
            print_suggestion(report, setup)
            unreadable = report.unreadable > 0 or found.missing
            return _status(
                unreadable, report.calls, report.denied > 0, opts.fail_on_deny, opts.expect_deny
            )
        rows = sweep(report, limits) if limits else None
        policy_file = policy.path if policy is not None else None
        if opts.partial_path is not None and not _write_partial(
            report, opts.partial_path, policy_file
        ):
            return ExitStatus.OUTPUT
        checked = None if setup is None or not limits else check(report, limits, setup)
        if not print_report(
            report,
            rows,
            prices,
            policy_file,
            opts.as_json,
            opts.html_path,
            opts.max_rows,
            PROG,
            checked,
        ):
            return ExitStatus.OUTPUT
        calls, denied = report.calls, report.denied > 0
        unreadable = report.unreadable > 0 or found.missing
    return _status(unreadable, calls, denied, opts.fail_on_deny, opts.expect_deny)


def _find(paths: tuple[str, ...]) -> Found:
    """The files PATHS name; each PATH that cannot be read is said on stderr, and none
    found at all is the error ``nothing to replay`` (exit 4)."""
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
        raise CommandError("nothing to replay: " + "; ".join(missing), ExitStatus.NOT_FOUND)
    for message in missing:
        _fail(message)
    return Found(files, in_directory, bool(missing))


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
    opts: ReplayOptions,
    found: Found,
    settings: Settings,
    cap: int,
    timeline: bool,
    stop_after: int | None = None,
) -> Report:
    from ._replay_pool import progress_bar, replay_parallel

    files, in_directory = found.files, found.in_directory
    value, source, policy = settings
    progress = progress_bar(files)
    try:
        if opts.jobs > 1 and "-" not in files:
            from ..corpus.rows import pieces

            # Each file its own job; a Parquet dataset of several row groups, several.
            work = [
                Job(
                    path,
                    opts.format_name,
                    value,
                    source,
                    cap,
                    opts.max_line_bytes,
                    path in in_directory,
                    opts.strict,
                    policy,
                    timeline,
                    piece,
                    stop_after,
                    opts.suggest_policy,
                )
                for path in files
                for piece in pieces(path, opts.jobs * PIECES_PER_JOB)
            ]
            if len(work) > 1:
                return replay_parallel(work, opts.jobs, progress)
        on_progress, on_file = progress.callbacks() if progress else (None, None)
        return replay_files(
            files,
            max_repeats=value,
            max_repeats_source=source,
            cap=cap,
            format_name=opts.format_name,
            max_line_bytes=opts.max_line_bytes,
            continue_sessions=opts.continue_sessions,
            on_file=on_file,
            on_progress=on_progress,
            in_directory=in_directory,
            strict=opts.strict,
            policy=policy,
            timeline=timeline,
            stop_after=stop_after,
            suggest=opts.suggest_policy,
        )
    finally:
        if progress:
            progress.stop()


def _compare(opts: ReplayOptions, found: Found, settings: Settings) -> ExitStatus:
    """``--compare-policy``: the seed's denials and the policy's, per session; with
    ``-j N``, each file in a worker process (merged in input order: the same output)."""
    from ..analysis.compare import (
        compare_file,
        compare_files,
        merge_comparisons,
        render_comparison,
    )

    files = found.files
    options = {
        "max_repeats": settings.value,
        "policy": settings.policy,
        "format_name": opts.format_name,
        "max_line_bytes": opts.max_line_bytes,
        "strict": opts.strict,
    }
    if opts.jobs > 1 and len(files) > 1 and "-" not in files:
        from ._replay_pool import ordered_map

        work = [(path, {**options, "in_directory": {path} & found.in_directory}) for path in files]
        result = merge_comparisons(list(ordered_map(compare_file, work, files, opts.jobs)))
    else:
        result = compare_files(
            files,
            continue_sessions=opts.continue_sessions,
            in_directory=found.in_directory,
            **options,
        )
    for error in result.errors:
        _fail(error)
    if opts.as_json:
        write_json(result.to_json())
    else:
        sys.stdout.write(render_comparison(result))
        sys.stdout.flush()
    totals = result.totals()
    return _status(
        result.unreadable > 0 or found.missing,
        totals["calls"],
        totals["policyDenied"] > 0,
        opts.fail_on_deny,
        opts.expect_deny,
    )
