"""Replaying files into an Analyzer: in this process, or one file per worker (``replay -j``).

Every failure of a file (unreadable, unknown format, an adapter's bug) is
recorded in the report, located, and the other files go on; an exception is
named by its class only, since its text may quote the input.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core.brake import LoopBrake
from ..core.records import BadRecord, Record
from ..core.verdicts import Verdict
from .analyzer import Analyzer
from .report import ERRORS_KEPT, FileInfo, Report, merge

Judged = tuple[Record, Verdict | None]


@dataclass(frozen=True, slots=True)
class Job:
    """One file to replay on its own (what a worker process receives)."""

    path: str
    format_name: str | None
    max_repeats: int
    max_repeats_source: str
    cap: int
    max_line_bytes: int
    in_directory: bool = False
    strict: bool = False
    policy: Any = None  # a policy.Policy, or None: the seed's rule
    timeline: bool = False  # also keep every call (SessionStats.timeline)
    row_groups: tuple[int, ...] | None = None  # a Parquet dataset's piece (None: all of it)
    stop_after: int | None = None  # keep each session's stop points (analysis/stops.py)
    suggest: bool = False  # gather the evidence for a policy (analysis/suggest.py)


def replay_file(
    path: str,
    brake: LoopBrake,
    analyzer: Analyzer,
    format_name: str | None,
    max_line_bytes: int,
    on_progress: Callable[[int], None] | None = None,
    in_directory: bool = False,
    strict: bool = False,
    row_groups: tuple[int, ...] | None = None,
) -> FileInfo:
    """Replay one file into ``analyzer``; every failure is recorded there, located.

    A file found in a directory (``in_directory``) that is not a transcript is
    skipped (``Analyzer.skip_file``) unless ``strict``; one that agents keep beside
    their transcripts (Gemini CLI's logs.json) is skipped even then. With
    ``format_name`` forced, the file is read as that format (as ``filter`` reads it):
    one that looks like another format gets a warning (``FileInfo.warning``), and is
    a file-level error only when it gives no call (as is any file that gives none) or
    under ``strict``.
    ``on_progress`` is called now and then with the bytes read from the file so far.
    A dataset of runs (one run per row: Parquet, or JSON lines of rows) is read row by
    row (``corpus/``), only ``row_groups`` of a Parquet file when given (a piece of it:
    ``replay -j``).
    """
    from ..corpus.rows import container
    from ..formats import parse_records
    from ..formats._detect import choose
    from ..formats._sniff import head_text
    from ..readers.gc_pace import relaxed_gc
    from ..readers.pipeline import judge
    from ..readers.reader import UnreadableInputError, open_source

    try:
        size = os.path.getsize(path) if path != "-" else 0
    except OSError:
        size = 0
    try:
        source = open_source(path, max_line_bytes)
    except OSError as exc:
        info = analyzer.start_file("<stdin>" if path == "-" else path)
        info.opened = False
        analyzer.file_error(f"cannot open: {exc.strerror or exc.__class__.__name__}")
        return info
    info = analyzer.start_file(source.name, size if not row_groups else 0)
    raw = source.underlying or source.stream
    try:
        if (kind := container(source.head())) is not None:
            replay_dataset(
                kind, path, source, brake, analyzer, info, row_groups, in_directory and not strict
            )
            return info
        choice = choose(source.head(), source.name, format_name, in_directory, strict)
        if choice.skip is not None:
            analyzer.skip_file(choice.skip, choice.quiet)
            return info
        if choice.adapter is None:
            analyzer.file_error(choice.error or "not a transcript")
            return info
        adapter, check = choice.adapter, choice.check
        content = bool(head_text(source.head()))
        mismatch = check.mismatch() if check is not None else None
        info.format = adapter.INFO.name
        results = brake.progress or getattr(analyzer, "wants_results", False)
        progress = None if on_progress is None else partial(_progress, on_progress, raw, source)
        if (claude := _claude_reader(adapter, brake, results, mismatch)) is not None:
            with relaxed_gc():  # records are acyclic; the GC's default pace cost 3% here
                claude.replay_lines(source, brake, analyzer, progress)
        else:
            judged = judge(parse_records(adapter, source, results, brake.user_turns), brake)
            if mismatch is not None:
                judged = _errors_held(judged)
            with relaxed_gc():
                _add_judged(judged, analyzer, progress)
        if check is not None and info.calls == 0:
            if (problem := mismatch or check.nothing_read()) is not None:
                analyzer.file_error(problem)
        elif mismatch is not None and strict:
            analyzer.file_error(mismatch)  # --strict: read, and counted unreadable
        elif mismatch is not None:
            info.warning = mismatch  # forced, and read: said, not an error
        if info.calls == 0 and info.error is None and not info.unreadable and content:
            _said_zero(analyzer, info, adapter.INFO.name, source, strict)
    except UnreadableInputError as exc:
        after = f" (after call {info.calls})" if info.calls else ""
        analyzer.file_error(f"unreadable{after}: {exc}")
    except Exception as exc:  # an adapter's bug must not cost the other files their report
        analyzer.file_error(internal_error(info.format, info.calls, exc))
    finally:
        source.close()
        if on_progress is not None:
            on_progress(size)
    return info


def _add_judged(
    judged: Iterator[Judged], analyzer: Analyzer, on_progress: Callable[[], None] | None
) -> None:
    """Add each judged record to ``analyzer``; ``on_progress`` every 1,024 records."""
    add = analyzer.add
    if on_progress is None:  # no count kept per record when nobody asks
        for record, verdict in judged:
            add(record, verdict)
    else:
        for n, (record, verdict) in enumerate(judged, 1):
            add(record, verdict)
            if not n & 1023:
                on_progress()


def _progress(on_progress: Callable[[int], None], raw: Any, source: Any) -> None:
    """Tell ``on_progress`` how far the file is read."""
    on_progress(_position(raw, source))


def _said_zero(analyzer: Analyzer, info: FileInfo, name: str, source: Any, strict: bool) -> None:
    """A file that gave no tool call is never silent (issue 39): a warning on stderr
    (``FileInfo.zero``, not in ``--json``: outputs without a policy stay as they were)
    that says what was read, and with ``strict`` a file-level error (exit 3)."""
    from ..formats._detect import rereadable, zero_calls

    said = zero_calls(name, rereadable(source.name), source.model_turns)
    if strict:
        analyzer.file_error(said)
    else:
        info.zero = said


def _errors_held(judged: Iterator[Judged]) -> Iterator[Judged]:
    """``judged`` with its unreadable records held back until the first call: a file forced
    into a format it does not look like either gives calls (then its errors are its own,
    counted in order before that call) or only the one mismatch message, not an error per
    line of a file read as what it is not. At most ``ERRORS_KEPT`` are held (a report
    lists no more); the rest are only counted."""
    held: list[Judged] = []
    more = 0
    last: Any = None
    for pair in judged:
        if pair[1] is None and pair[0].__class__ is BadRecord:
            if len(held) < ERRORS_KEPT:
                held.append(pair)
            else:
                more, last = more + 1, pair
            continue
        if held and pair[1] is not None:
            yield from held
            for _ in range(more):
                yield last
            held, more = [], 0
        yield pair
    # no call came: the errors are dropped, the caller says the mismatch once


def replay_dataset(
    kind: str,
    path: str,
    source: Any,
    brake: LoopBrake,
    analyzer: Analyzer,
    info: FileInfo,
    row_groups: tuple[int, ...] | None = None,
    skippable: bool = False,
) -> None:
    """A dataset of runs, one run per row, each its own session; the brake forgets each
    row's run when the row ends (no streak crosses rows, and memory stays flat).
    ``skippable``: a table that holds no runs is skipped (found in a directory)."""
    from ..core.records import BadRecord
    from ..corpus.rows import DatasetError, RowError, jsonl_rows, parquet_rows
    from ..corpus.runs import row_records
    from ..readers.pipeline import judge

    info.format = f"{kind}-rows"
    if row_groups:
        info.part = row_groups[0]
    add = analyzer.add
    try:
        if kind == "parquet" and path == "-":
            raise DatasetError("Parquet cannot be read from standard input: save it to a file")
        rows = parquet_rows(path, row_groups) if kind == "parquet" else jsonl_rows(source)
        for item in rows:
            if isinstance(item, RowError):
                analyzer.bad_record(BadRecord(item.message, item.line, item.where))
                continue
            analyzer.start_run()
            for record, verdict in judge(row_records(item), brake):
                add(record, verdict)
            brake.reset()
    except DatasetError as exc:
        if exc.not_runs and skippable:
            analyzer.skip_file(str(exc))
        else:
            analyzer.file_error(str(exc))


def internal_error(format_name: str | None, calls: int, exc: BaseException) -> str:
    """A bug met while reading a file, named by its class only: an exception's text may
    quote the input, and the input may hold tool arguments."""
    reader = f"the {format_name} adapter" if format_name else "format detection"
    after = f" after call {calls}" if calls else ""
    return f"internal error in {reader}{after} ({exc.__class__.__name__}); please report it"


def _position(raw: Any, source: Any) -> int:
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return int(source.bytes_read)


def new_analyzer(
    max_repeats: int,
    max_repeats_source: str,
    cap: int,
    timeline: bool = False,
    stop_after: int | None = None,
    policy: Any = None,
    suggest: bool = False,
) -> Analyzer:
    """The analyzer a replay needs: one that also keeps each session's stop points when
    ``stop_after`` is given (``replay --outcomes``; with the ``policy``'s ``[stop]``),
    one that gathers the evidence for a policy with ``suggest``, else the plain one."""
    if suggest:
        from .suggest import SuggestAnalyzer

        return SuggestAnalyzer(max_repeats, max_repeats_source, cap, timeline)
    if stop_after is None:
        return Analyzer(max_repeats, max_repeats_source, cap, timeline)
    from .stops import StopAnalyzer

    stop = getattr(policy, "stop", None)
    return StopAnalyzer(
        max_repeats,
        max_repeats_source,
        cap,
        timeline,
        stop_after=stop_after,
        in_a_row=None if stop is None else stop.after_denials,
    )


def replay_job(job: Job) -> Report:
    """Replay one file as its own run (the worker-process entry point of ``replay -j``)."""
    brake = LoopBrake(job.max_repeats, source=job.max_repeats_source, policy=job.policy)
    analyzer = new_analyzer(
        job.max_repeats,
        job.max_repeats_source,
        job.cap,
        job.timeline,
        job.stop_after,
        job.policy,
        job.suggest,
    )
    replay_file(
        job.path,
        brake,
        analyzer,
        job.format_name,
        job.max_line_bytes,
        in_directory=job.in_directory,
        strict=job.strict,
        row_groups=job.row_groups,
    )
    return analyzer.finish()


def replay_files(
    paths: Sequence[str],
    *,
    max_repeats: int,
    max_repeats_source: str,
    cap: int,
    format_name: str | None,
    max_line_bytes: int,
    continue_sessions: bool = False,
    on_file: Callable[[FileInfo, Report | None], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    in_directory: Collection[str] = (),
    strict: bool = False,
    policy: Any = None,
    timeline: bool = False,
    stop_after: int | None = None,
    suggest: bool = False,
) -> Report:
    """Replay files in this process, in order; each its own run unless sessions continue.

    ``in_directory``: the paths found by searching a directory (see ``replay_file``);
    ``policy``: a ``policy.Policy`` or None (the seed's rule); ``timeline``: keep
    every call of every session (``SessionStats.timeline``, for ``replay --html``);
    ``stop_after``: keep each session's stop points (``SessionStats.stops``);
    ``suggest``: gather the evidence for a policy (``SessionStats.suggest``)."""
    brake = LoopBrake(max_repeats, source=max_repeats_source, policy=policy)
    analyzer = new_analyzer(
        max_repeats, max_repeats_source, cap, timeline, stop_after, policy, suggest
    )
    reports: list[Report] = []
    for index, path in enumerate(paths):
        if index and not continue_sessions:
            reports.append(analyzer.finish())
            brake.reset()
            analyzer = new_analyzer(
                max_repeats, max_repeats_source, cap, timeline, stop_after, policy, suggest
            )
        info = replay_file(
            path,
            brake,
            analyzer,
            format_name,
            max_line_bytes,
            on_progress,
            in_directory=path in in_directory,
            strict=strict,
        )
        if on_file is not None:
            on_file(info, analyzer.report)
    reports.append(analyzer.finish())
    return merge(reports)


def _claude_reader(
    adapter: Any, brake: LoopBrake, results: bool, mismatch: str | None
) -> Any | None:
    """``replay_claude`` when its C line reader reads this file, else None: asked only of
    Claude Code files, so a replay of another format imports neither it nor the Claude
    Code adapter (tests/test_startup_imports.py)."""
    if adapter.INFO.name != "claude-code":
        return None
    from . import replay_claude

    return replay_claude if replay_claude.takes(adapter, brake, results, mismatch) else None
