"""Replaying files into an Analyzer: in this process, or one file per worker (``replay -j``).

Every failure of a file (unreadable, unknown format, an adapter's bug) is
recorded in the report, located, and the other files go on; an exception is
named by its class only, since its text may quote the input.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..brake import LoopBrake
from .analyzer import Analyzer
from .report import FileInfo, Report, merge


@dataclass(frozen=True, slots=True)
class Job:
    """One file to replay on its own (what a worker process receives)."""

    path: str
    format_name: str | None
    max_repeats: int
    max_repeats_source: str
    cap: int
    max_line_bytes: int


def replay_file(
    path: str,
    brake: LoopBrake,
    analyzer: Analyzer,
    format_name: str | None,
    max_line_bytes: int,
    on_progress: Callable[[int], None] | None = None,
) -> FileInfo:
    """Replay one file into ``analyzer``; every failure is recorded there, located.

    ``on_progress`` is called now and then with the bytes read from the file so far.
    """
    from ..formats import UnknownFormatError, detect, get
    from ..pipeline import judge
    from ..reader import UnreadableInputError, open_source

    try:
        size = os.path.getsize(path) if path != "-" else 0
    except OSError:
        size = 0
    try:
        source = open_source(path, max_line_bytes)
    except OSError as exc:
        info = analyzer.start_file(path)
        analyzer.file_error(f"cannot read: {exc.strerror or exc}")
        return info
    info = analyzer.start_file(source.name, size)
    raw = source.underlying or source.stream
    try:
        if format_name is None:
            adapter = detect(source.head(), source.name)
        else:
            adapter = get(format_name)
        info.format = adapter.INFO.name
        add = analyzer.add
        n = 0
        for record, verdict in judge(adapter.parse(source), brake):
            add(record, verdict)
            n += 1
            if on_progress is not None and not n & 1023:
                on_progress(_position(raw, source))
    except UnknownFormatError as exc:
        message = str(exc)
        prefix = f"{source.name}: "
        analyzer.file_error(message[len(prefix) :] if message.startswith(prefix) else message)
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


def replay_job(job: Job) -> Report:
    """Replay one file as its own run (the worker-process entry point of ``replay -j``)."""
    brake = LoopBrake(job.max_repeats, source=job.max_repeats_source)
    analyzer = Analyzer(job.max_repeats, job.max_repeats_source, job.cap)
    replay_file(job.path, brake, analyzer, job.format_name, job.max_line_bytes)
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
) -> Report:
    """Replay files in this process, in order; each its own run unless sessions continue."""
    brake = LoopBrake(max_repeats, source=max_repeats_source)
    analyzer = Analyzer(max_repeats, max_repeats_source, cap)
    reports: list[Report] = []
    for index, path in enumerate(paths):
        if index and not continue_sessions:
            reports.append(analyzer.finish())
            brake.reset()
            analyzer = Analyzer(max_repeats, max_repeats_source, cap)
        info = replay_file(path, brake, analyzer, format_name, max_line_bytes, on_progress)
        if on_file is not None:
            on_file(info, analyzer.report)
    reports.append(analyzer.finish())
    return merge(reports)
