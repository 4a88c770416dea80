"""``loop-brake filter``: tool calls in, one verdict line per call out.

Every input is sniffed (``formats/_detect.py``) from the head the reader buffers
anyway, before the run. Without ``--format``, an input whose first line is not a
tool-call event but which looks like a transcript or headless stream of a known
format is read in that format, as replay reads it, said once on stderr; with
``--format`` (``events`` included: the seed's reading) one that looks like
another format, or from which the format read gives no tool call, is said once
and counted (``--strict`` exits 3). The fast path is not touched: for event lines
the check is one parse of the first line.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any, NamedTuple

import click

from ..core.brake import LoopBrake
from ..core.exitcodes import ExitStatus, epilog
from ..formats import UnknownFormatError, get, names, parse_records
from ..formats._detect import FormatCheck, peek, rereadable
from ..readers.output import LineWriter
from ..readers.pipeline import VERDICT_KINDS, Tally, write_verdicts
from ..readers.reader import UnreadableInputError, cannot_open, open_source
from ..render.visible import visible
from ._command import Command, CommandError
from ._options import (
    Count,
    config_option,
    max_line_bytes_option,
    max_repeats_option,
    open_shared_store,
    policy_option,
    resolve_settings,
    store_options,
)

PROG = "loop-brake filter"


def _say(message: str) -> None:
    click.echo(f"{PROG}: {visible(message, lines=True)}", err=True)


@click.command(
    "filter",
    cls=Command,
    epilog=epilog("filter"),
    short_help="Judge tool-call events (JSON lines) and print pass/deny verdicts.",
    more=(
        "config_paths",
        "continue_sessions",
        "max_line_bytes",
        "max_sessions",
        "shard_text",
        "store_url",
        "idle_ttl",
        "fail_closed",
    ),
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
    default=None,
    metavar="NAME",
    help="Read every input as NAME (loop-brake help formats). Default: tool-call "
    "events, or the transcript or headless stream the first line shows (said on stderr).",
)
@click.option(
    "--only",
    type=click.Choice(VERDICT_KINDS),
    multiple=True,
    metavar="KIND",
    help="Print only these verdicts (repeatable): pass, deny, error; stop, warn (from a policy).",
)
@click.option("--fail-on-deny", is_flag=True, help="Exit 1 if any call was denied.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 3 if any line was unreadable, or an input was not in the format read.",
)
@click.option("--summary", is_flag=True, help="Print a short summary on stderr at the end.")
@click.option(
    "--continue-sessions",
    is_flag=True,
    help="Let streaks continue across files (default: each file is its own run).",
)
@max_line_bytes_option("Longer lines get an error verdict (and are never held in memory whole).")
@click.option(
    "--max-sessions",
    type=Count(1),
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
@policy_option()
@store_options
def filter_command(**params: Any) -> int:
    """Judge the tool calls read from FILES (stdin when none, or -): one verdict line
    per call, in input order, flushed whenever the input pauses (so `tail -f log |
    loop-brake filter` answers each call at once).

    \b
    Input, one JSON object per line:
      {"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c7"}
    Output:
      {"verdict":"pass","line":1,"toolName":"search","sessionId":"s1",
       "callId":"c7","count":1,"maxRepeats":3,"hashPrefix":"35dca543bb3b"}

    Bad lines get an error verdict and the run goes on. Arguments never appear
    in the output.
    """
    return run_filter(FilterOptions(**params))


class FilterOptions(NamedTuple):
    """``filter``'s options, as parsed (one field per option, named as click names it)."""

    files: tuple[str, ...]
    max_repeats: int | None
    config_paths: tuple[str, ...]
    format_name: str | None
    only: tuple[str, ...]
    fail_on_deny: bool
    strict: bool
    summary: bool
    continue_sessions: bool
    max_line_bytes: int
    max_sessions: int | None
    shard_text: str | None
    policy_path: str | None
    store_url: str | None
    idle_ttl: str | None
    fail_closed: bool


def run_filter(opts: FilterOptions) -> int:
    """Settings first (a bad one is an error before any input is read), then the run."""
    value, source, policy = resolve_settings(opts.max_repeats, opts.policy_path, opts.config_paths)
    store = open_shared_store(opts.store_url, opts.idle_ttl, _say)
    try:
        if store is not None and opts.max_sessions is not None:
            raise CommandError(
                "--max-sessions bounds memory; with --store the store keeps the sessions"
            )
        brake = LoopBrake(
            value,
            source=source,
            max_sessions=opts.max_sessions,
            policy=policy,
            store=store,
            fail_closed=opts.fail_closed,
            warn=lambda message: _say(message),
        )
        from ..readers.compact_table import use_compact_table

        use_compact_table(brake)  # without a policy or a store: ~100 bytes a session
        return _filter(brake, opts, _shard(opts.shard_text))
    finally:
        if store is not None:
            store.close()


def _shard(text: str | None) -> tuple[int, int] | None:
    """``--shard K/N`` as (K, N), None without it."""
    if text is None:
        return None
    from ..readers.shard import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise CommandError(f"--shard: {exc}") from None


def _filter(brake: LoopBrake, opts: FilterOptions, shard: tuple[int, int] | None) -> int:
    """Judge every file (``--continue-sessions``: one brake across them; always so with a
    shared store, which is never reset here)."""
    continue_sessions = opts.continue_sessions or brake.store is not None
    forced = opts.format_name is not None
    adapter = get(opts.format_name or "events")
    wanted = set(opts.only) if opts.only else set(VERDICT_KINDS)
    out = LineWriter(sys.stdout.buffer)
    tally = Tally()
    paths = opts.files or ("-",)
    if "-" in paths:
        _hint_stdin()
    label = len(paths) > 1
    unreadable_file = False
    not_read = 0  # inputs not in the format read: said once each
    sessions = 0  # summed over the runs, as replay counts them
    for index, path in enumerate(paths):
        if index and not continue_sessions:
            sessions += len(brake)
            brake.reset()
        try:
            source = open_source(path, opts.max_line_bytes, on_wait=out.flush)
        except OSError as exc:
            out.flush()
            _say(cannot_open(path, exc))
            unreadable_file = True
            continue
        file_label = source.name if label else None
        try:
            read_as, check, mismatch = _format_of(adapter, peek(source), path, forced)
            if read_as is not adapter:
                out.flush()
                _say(f"{source.name}: {_detected_note(read_as.INFO.name)}")
            if mismatch is not None:
                out.flush()
                _say(f"{source.name}: {mismatch}")
                not_read += 1
            before = tally.calls
            _run_source(read_as, source, brake, tally, out, wanted, file_label, shard)
            if tally.calls == before and (nothing := check.nothing_read()) is not None:
                out.flush()
                _say(f"{source.name}: {nothing}")
                not_read += 1
        except (UnreadableInputError, UnknownFormatError) as exc:
            out.flush()
            _say(f"{source.name}: {exc}")
            unreadable_file = True
        finally:
            source.close()
    out.flush()
    sessions += len(brake) + brake.evictions
    if opts.summary:
        _summary(brake, tally, len(paths), sessions, not_read)
    if opts.fail_on_deny and not tally.calls:
        _say("warning: --fail-on-deny: no tool call was read, so nothing was checked")
    if unreadable_file or (opts.strict and (tally.errors or not_read)):
        return ExitStatus.UNREADABLE
    if opts.fail_on_deny and tally.denied:
        return ExitStatus.BRAKE
    return ExitStatus.OK


def _format_of(
    adapter: ModuleType, head: bytes, path: str, forced: bool
) -> tuple[ModuleType, FormatCheck, str | None]:
    """How one input is read: the adapter, its check, and what to say when the input
    does not look like the format it is read as (``FormatCheck.mismatch``).

    ``--format`` given (``forced``): that format, always (``--format events`` is the
    seed's reading). Without it: tool-call events, unless the head is not an event line
    and looks like a transcript or headless stream of another format, which is then
    read as replay reads it. Events are recognised from their first line alone (one
    parse), so event input costs what it did and the fast path stays as it is."""
    check = FormatCheck(adapter, head, path=rereadable(path))
    if forced:
        return adapter, check, check.mismatch()
    found = check.other()
    if found is None:
        return adapter, check, None
    return found, FormatCheck(found, head, path=rereadable(path)), None


def _detected_note(name: str) -> str:
    """Said once per input read as a detected format instead of as events."""
    return (
        f"detected as {name}, not tool-call events: read as replay reads it "
        "(--format events: as events)"
    )


def _summary(brake: LoopBrake, tally: Tally, inputs: int, sessions: int, not_read: int) -> None:
    """``--summary``: the counts on stderr, and what a policy or a store added to the run."""
    from ..render.terminal import print_filter_summary

    print_filter_summary(tally, brake, inputs, sessions, not_read)
    if brake.policy_path is not None:
        warns = brake.policy is not None and brake.policy.uses_warn
        _say(f"policy: {brake.policy_path}" + (f"; {tally.warned} warned" if warns else ""))
    if brake.store is not None:
        _say(f"store: {brake.store.label} ({brake.store_failures} calls decided without it)")
    if brake.progress:
        _say(
            f"results: {tally.results} read, {tally.results_ignored} ignored "
            "(not for the latest call of their session)"
        )
    if brake.user_turns:
        _say(f"user turns: {tally.user_turns} (each ended its session's streaks)")


def _hint_stdin() -> None:
    """A person who typed ``loop-brake filter`` alone sees a waiting cursor: say on stderr
    what it waits for (only when standard input is a terminal, never in a pipe)."""
    try:
        terminal = sys.stdin is not None and os.isatty(sys.stdin.fileno())
    except (OSError, ValueError):
        terminal = False
    if terminal:
        _say(
            "reading tool-call events from standard input, one JSON object per line "
            "(Ctrl-D ends; pipe a log in or name files: loop-brake filter FILE)"
        )


def _run_source(adapter, source, brake, tally, out, wanted, file, shard) -> None:
    """The fast path for event lines where it is available (same bytes out), else the exact
    one: with a store (the store decides each call, and a store that decides several at
    once, ``count_calls``: Redis, gets the calls already read together: ``batched``) and
    under a policy that reads results or user turns (records the fast path does not
    read: ``fastpath.takes``)."""
    from ..readers import fastpath

    if adapter.INFO.name == "events" and fastpath.takes(brake) and fastpath.enabled():
        fastpath.filter_events(source, brake, tally, out, wanted, file, shard)
        return
    records = parse_records(adapter, source, brake.progress, brake.user_turns)
    if shard is not None:
        from ..readers.shard import select_shard

        records = select_shard(records, *shard)
    if brake.store is not None and hasattr(brake.table, "count_calls"):
        from ..readers.batched import batch_size, write_verdicts_batched

        batch = batch_size()
        if batch > 1:
            write_verdicts_batched(records, brake, tally, out, source, wanted, file, batch)
            return
    write_verdicts(records, brake, tally, out, wanted, file)
