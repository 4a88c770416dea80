"""``loop-brake filter``: tool-call events in, one verdict line per event out."""

from __future__ import annotations

import sys

import click

from ..brake import LoopBrake
from ..exitcodes import EXIT_CODES_HELP, ExitStatus
from ..formats import UnknownFormatError, get, names
from ..output import LineWriter
from ..pipeline import VERDICT_KINDS, Tally, write_verdicts
from ..reader import UnreadableInputError, open_source
from ._options import config_option, max_line_bytes_option, max_repeats_option, resolve_or_report


@click.command(
    "filter",
    epilog=EXIT_CODES_HELP,
    short_help="Judge tool-call events (JSON lines) and print pass/deny verdicts.",
)
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@max_repeats_option()
@config_option(
    "Take maxRepeats from these harness patch layers, in order (repeatable; "
    "after --max-repeats, before the environment).",
    metavar="PATCH_FILE",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(names()),
    default="events",
    show_default=True,
    help="Input format.",
)
@click.option(
    "--only",
    type=click.Choice(VERDICT_KINDS),
    multiple=True,
    help="Print only these verdicts (repeatable).",
)
@click.option("--fail-on-deny", is_flag=True, help="Exit 1 if any call was denied.")
@click.option("--strict", is_flag=True, help="Exit 3 if any line was unreadable.")
@click.option("--summary", is_flag=True, help="Print a short summary on stderr at the end.")
@click.option(
    "--continue-sessions",
    is_flag=True,
    help="Let streaks continue across files (default: each file is its own run).",
)
@max_line_bytes_option("Longer lines get an error verdict (and are never held in memory whole).")
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=None,
    help="Keep at most N session slots, least recently used evicted first (an evicted "
    "session starts a new streak). Default: unbounded.",
)
@click.option(
    "--shard",
    "shard_text",
    default=None,
    metavar="K/N",
    help="Judge only sessions whose key hashes to shard K of N (0..N-1): "
    "sha256(session key)[:8] big-endian mod N. Error verdicts go to shard 0.",
)
def filter_command(
    files: tuple[str, ...],
    max_repeats: int | None,
    config_paths: tuple[str, ...],
    format_name: str,
    only: tuple[str, ...],
    fail_on_deny: bool,
    strict: bool,
    summary: bool,
    continue_sessions: bool,
    max_line_bytes: int,
    max_sessions: int | None = None,
    shard_text: str | None = None,
) -> int:
    """Read tool-call events from FILES (stdin when none, or -) and print a verdict per event.

    \b
    Input, one JSON object per line:
      {"tool": "search", "args": {"q": "weather"}, "sessionId": "s1", "callId": "c7"}
    Output, one JSON line per event, in input order:
      {"verdict":"pass","line":1,"toolName":"search","sessionId":"s1","callId":"c7",
       "count":1,"maxRepeats":3,"hashPrefix":"35dca543bb3b"}

    Verdicts are flushed whenever the input pauses, so `tail -f log | loop-brake
    filter` answers each call at once. Bad lines get an error verdict and the run
    goes on. Arguments never appear in the output.
    """
    resolved = resolve_or_report("loop-brake filter", max_repeats, config_paths)
    if resolved is None:
        return ExitStatus.USAGE
    value, source = resolved
    brake = LoopBrake(value, source=source, max_sessions=max_sessions)
    shard = None
    if shard_text is not None:
        from ..shard import parse_shard

        try:
            shard = parse_shard(shard_text)
        except ValueError as exc:
            click.echo(f"loop-brake filter: --shard: {exc}", err=True)
            return ExitStatus.USAGE
    adapter = get(format_name)
    wanted = set(only) if only else set(VERDICT_KINDS)
    out = LineWriter(sys.stdout.buffer)
    tally = Tally()
    paths = files or ("-",)
    label = len(paths) > 1
    unreadable_file = False
    for index, path in enumerate(paths):
        if index and not continue_sessions:
            brake.reset()
        try:
            source = open_source(path, max_line_bytes, on_wait=out.flush)
        except OSError as exc:
            click.echo(f"loop-brake filter: {path}: cannot read: {exc.strerror}", err=True)
            unreadable_file = True
            continue
        file_label = source.name if label else None
        try:
            _run_source(adapter, source, brake, tally, out, wanted, file_label, shard)
        except (UnreadableInputError, UnknownFormatError) as exc:
            out.flush()
            click.echo(f"loop-brake filter: {source.name}: {exc}", err=True)
            unreadable_file = True
        finally:
            source.close()
    out.flush()
    if summary:
        from ..render import print_filter_summary

        print_filter_summary(tally, brake, len(paths))
    if unreadable_file or (strict and tally.errors):
        return ExitStatus.UNREADABLE
    if fail_on_deny and tally.denied:
        return ExitStatus.BRAKE
    return ExitStatus.OK


def _run_source(adapter, source, brake, tally, out, wanted, file, shard) -> None:
    """The fast path for event lines where it is available (same bytes out), else the exact one."""
    from .. import fastpath

    if adapter.INFO.name == "events" and fastpath.enabled():
        fastpath.filter_events(source, brake, tally, out, wanted, file, shard)
        return
    records = adapter.parse(source)
    if shard is not None:
        from ..shard import select_shard

        records = select_shard(records, *shard)
    write_verdicts(records, brake, tally, out, wanted, file)
