"""What a replay found: per-session streaks, denials, histograms and a maxRepeats sweep.

``Analyzer`` is fed the ``(record, verdict)`` pairs that ``judge.judge`` yields,
so every number here is counted by the same brake that ``filter`` uses (call-id
duplicates included). It keeps a constant amount of state per session (the
current streak, the longest one, the current alternation and same-tool run)
and never a list of calls, so a transcript of any length replays in bounded
memory. A ``Report`` is plain data that pickles: per-file reports from worker
processes ``merge`` in input order into what one process would have produced.

The sweep needs no second pass: a streak of length L at limit m denies
max(0, L - m + 1) calls, so a histogram of the counts the brake assigned
(``counts[c]`` = verdicts with count c, duplicates included) answers every m
at once: denied(m) = sum of counts[c] for c >= m.

Nothing here holds or prints tool arguments: only tool names, session ids,
12-hex hash prefixes and locations. This module imports neither click nor rich.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .brake import LoopBrake, Verdict
from .records import BadRecord, Record

__all__ = [
    "Alternation",
    "Analyzer",
    "Denial",
    "FileInfo",
    "Job",
    "ReadError",
    "Report",
    "SameToolRun",
    "SessionStats",
    "Streak",
    "SweepRow",
    "Where",
    "merge",
    "parse_sweep",
    "replay_file",
    "replay_job",
    "report_to_json",
    "sweep",
]

SCHEMA = "loop-brake.replay/1"
DENIALS_KEPT = 10_000
"""Denials listed in a report; more are counted (``denied_streaks``) but not listed."""
ERRORS_KEPT = 1_000
"""Unreadable records listed in a report; more are counted (``unreadable``)."""
SWEEP_MAX = 1_000
HISTOGRAM_TOP = 10
"""The streak-length histogram's last bucket is ``10+``."""


@dataclass(frozen=True, slots=True)
class Where:
    """Where a call is: its file, line or JSON path, and its ordinal among the file's calls."""

    file: str
    line: int | None
    path: str | None
    call: int

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.path is not None:
            return f"{self.file}:{self.path}"
        return f"{self.file} (call {self.call})"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "call": self.call}


@dataclass(slots=True)
class Streak:
    """Consecutive identical calls in one session (the brake's count 1, 2, ... L)."""

    tool: str
    hash_prefix: str
    length: int
    start: Where

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "hashPrefix": self.hash_prefix,
            "length": self.length,
            "start": self.start.to_json(),
        }


@dataclass(slots=True)
class Denial:
    """The first denied call of one streak, and how many identical calls followed it."""

    session: str
    tool: str
    hash_prefix: str
    at: Where
    streak_start: Where
    streak_length: int
    more: int

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "tool": self.tool,
            "hashPrefix": self.hash_prefix,
            "at": self.at.to_json(),
            "streakStart": self.streak_start.to_json(),
            "streakLength": self.streak_length,
            "moreAfterDenial": self.more,
        }


@dataclass(slots=True)
class Alternation:
    """Calls alternating between two different calls: A, B, A, B, ... (never denied)."""

    tools: tuple[str, str]
    hash_prefixes: tuple[str, str]
    length: int
    start: Where

    def to_json(self) -> dict[str, Any]:
        return {
            "tools": list(self.tools),
            "hashPrefixes": list(self.hash_prefixes),
            "length": self.length,
            "start": self.start.to_json(),
        }


@dataclass(slots=True)
class SameToolRun:
    """Consecutive calls of one tool, each with arguments unlike the call before it."""

    tool: str
    length: int
    start: Where

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "length": self.length, "start": self.start.to_json()}


@dataclass(slots=True)
class SessionStats:
    """One session's numbers, plus the few fields of live state that compute them online."""

    file: str
    session: str
    calls: int = 0
    denied: int = 0
    duplicates: int = 0
    unparsed_args: int = 0
    longest: Streak | None = None
    longest_alternation: Alternation | None = None
    longest_same_tool: SameToolRun | None = None
    # live state, meaningless once the report is finished
    current: Streak | None = None
    open_denial: Denial | None = None
    prev_prefix: str | None = None
    prev2_prefix: str | None = None
    prev_tool: str | None = None
    prev_where: Where | None = None
    alt: Alternation | None = None
    same: SameToolRun | None = None

    def to_json(self) -> dict[str, Any]:
        def opt(value: Any) -> Any:
            return None if value is None else value.to_json()

        return {
            "file": self.file,
            "session": self.session,
            "calls": self.calls,
            "denied": self.denied,
            "duplicates": self.duplicates,
            "unparsedArgs": self.unparsed_args,
            "longestStreak": opt(self.longest),
            "longestAlternation": opt(self.longest_alternation),
            "longestSameToolRun": opt(self.longest_same_tool),
        }


@dataclass(slots=True)
class ReadError:
    """Input that could not be read: a file, or one record in it; never quotes the input."""

    file: str
    line: int | None
    path: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        elif self.path is not None:
            where += f":{self.path}"
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "message": self.message}


@dataclass(slots=True)
class FileInfo:
    """One input file: its format and totals, or why it could not be replayed."""

    file: str
    format: str | None = None
    calls: int = 0
    denied: int = 0
    sessions: int = 0
    unreadable: int = 0
    error: str | None = None
    size: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "format": self.format,
            "calls": self.calls,
            "denied": self.denied,
            "sessions": self.sessions,
            "unreadable": self.unreadable,
            "error": self.error,
        }


@dataclass
class Report:
    """Everything a summary shows; mergeable across files replayed separately."""

    max_repeats: int
    max_repeats_source: str
    cap: int
    files: list[FileInfo] = field(default_factory=list)
    sessions: list[SessionStats] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    denied_streaks: int = 0
    streak_lengths: Counter[int] = field(default_factory=Counter)
    counts: Counter[int] = field(default_factory=Counter)
    """counts[c] = verdicts with count c for 1 <= c <= cap; counts[cap + 1] = above cap.
    A dict, not a list: its size is bounded by the longest streak, not by the cap."""
    first_at: dict[int, Where] = field(default_factory=dict)
    """The first call in input order whose count was c (for c <= cap)."""
    errors: list[ReadError] = field(default_factory=list)
    calls: int = 0
    denied: int = 0
    duplicates: int = 0
    unparsed_args: int = 0
    unreadable: int = 0

    @property
    def failed_files(self) -> int:
        return sum(1 for info in self.files if info.error is not None)

    @property
    def sessions_with_denial(self) -> int:
        return sum(1 for stats in self.sessions if stats.denied)


class Analyzer:
    """Builds a Report from judged records; one per run (per file unless sessions continue)."""

    def __init__(self, max_repeats: int, max_repeats_source: str, cap: int) -> None:
        self.report = Report(max_repeats, max_repeats_source, max(cap, max_repeats, HISTOGRAM_TOP))
        self._sessions: dict[str, SessionStats] = {}
        self._file: FileInfo | None = None
        self._file_sessions: set[str] = set()
        self._call = 0

    def start_file(self, name: str, size: int = 0) -> FileInfo:
        """Begin a file; later calls are located in it."""
        info = FileInfo(name, size=size)
        self.report.files.append(info)
        self._file = info
        self._file_sessions = set()
        self._call = 0
        return info

    def bad_record(self, bad: BadRecord) -> None:
        info = self._file
        assert info is not None, "start_file first"
        info.unreadable += 1
        self.report.unreadable += 1
        if len(self.report.errors) < ERRORS_KEPT:
            self.report.errors.append(ReadError(info.file, bad.line, bad.path, bad.message))

    def file_error(self, message: str) -> None:
        """The current file could not be (fully) read: a located, file-level error."""
        info = self._file
        assert info is not None, "start_file first"
        info.error = message
        self.report.unreadable += 1
        if len(self.report.errors) < ERRORS_KEPT:
            self.report.errors.append(ReadError(info.file, None, None, message))

    def observe(self, record: Record, verdict: Verdict | None) -> None:
        """Count one judged record (a BadRecord when ``verdict`` is None)."""
        if verdict is None:
            self.bad_record(record)  # type: ignore[arg-type]
            return
        info = self._file
        assert info is not None, "start_file first"
        report = self.report
        self._call += 1
        where = Where(info.file, record.line, record.path, self._call)
        key = verdict.session_id
        stats = self._sessions.get(key)
        if stats is None:
            stats = self._sessions[key] = SessionStats(info.file, key)
            report.sessions.append(stats)
        if key not in self._file_sessions:
            self._file_sessions.add(key)
            info.sessions += 1
        count = verdict.count
        info.calls += 1
        report.calls += 1
        stats.calls += 1
        if record.args_unparsed:  # type: ignore[union-attr]
            stats.unparsed_args += 1
            report.unparsed_args += 1
        if verdict.denied:
            info.denied += 1
            stats.denied += 1
            report.denied += 1
        report.counts[count if count <= report.cap else report.cap + 1] += 1
        if verdict.duplicate:
            stats.duplicates += 1
            report.duplicates += 1
            return
        if count <= report.cap and count not in report.first_at:
            report.first_at[count] = where
        self._streak(stats, verdict, where)
        self._patterns(stats, verdict, where)

    def _streak(self, stats: SessionStats, verdict: Verdict, where: Where) -> None:
        count = verdict.count
        current = stats.current
        if count == 1 or current is None:
            if current is not None:
                self._close(stats)
            current = stats.current = Streak(verdict.tool_name, verdict.hash_prefix, count, where)
        else:
            current.length = count
        if count == self.report.max_repeats:
            stats.open_denial = Denial(
                stats.session,
                verdict.tool_name,
                verdict.hash_prefix,
                where,
                current.start,
                count,
                0,
            )
            self.report.denied_streaks += 1
            if len(self.report.denials) < DENIALS_KEPT:
                self.report.denials.append(stats.open_denial)

    def _close(self, stats: SessionStats) -> None:
        current = stats.current
        if current is None:
            return
        self.report.streak_lengths[current.length] += 1
        if stats.longest is None or current.length > stats.longest.length:
            stats.longest = current
        denial = stats.open_denial
        if denial is not None:
            denial.streak_length = current.length
            denial.more = current.length - self.report.max_repeats
            stats.open_denial = None
        stats.current = None

    @staticmethod
    def _patterns(stats: SessionStats, verdict: Verdict, where: Where) -> None:
        prefix, tool = verdict.hash_prefix, verdict.tool_name
        prev, prev_tool = stats.prev_prefix, stats.prev_tool
        # A, B, A, B, ...: each call equals the one two back and differs from the last.
        alt = stats.alt
        if prev is None or prefix == prev:
            alt = None
        elif alt is not None and prefix == stats.prev2_prefix:
            alt.length += 1
        else:
            assert prev_tool is not None and stats.prev_where is not None
            alt = Alternation((prev_tool, tool), (prev, prefix), 2, stats.prev_where)
        stats.alt = alt
        if alt is not None and alt.length >= 3:
            best = stats.longest_alternation
            if best is None or alt.length > best.length:
                stats.longest_alternation = alt  # the same object: it grows while it lasts
        # Same tool, arguments changing at every call: the brake's count stays at 1.
        same = stats.same
        if same is not None and tool == prev_tool and prefix != prev:
            same.length += 1
        else:
            same = stats.same = SameToolRun(tool, 1, where)
        if same.length >= 2:
            best_same = stats.longest_same_tool
            if best_same is None or same.length > best_same.length:
                stats.longest_same_tool = same
        stats.prev2_prefix, stats.prev_prefix = prev, prefix
        stats.prev_tool, stats.prev_where = tool, where

    def finish(self) -> Report:
        """Close every open streak and return the report (the analyzer is spent)."""
        for stats in self.report.sessions:
            self._close(stats)
            stats.current = stats.open_denial = stats.alt = stats.same = None
            stats.prev_prefix = stats.prev2_prefix = stats.prev_tool = None
            stats.prev_where = None
        self._sessions = {}
        return self.report


def merge(reports: Iterable[Report]) -> Report:
    """Reports of files replayed separately, in input order, as one report."""
    merged: Report | None = None
    for report in reports:
        if merged is None:
            merged = report
            continue
        if report.cap != merged.cap or report.max_repeats != merged.max_repeats:
            raise ValueError("reports made with different settings")
        merged.files += report.files
        merged.sessions += report.sessions
        room = DENIALS_KEPT - len(merged.denials)
        merged.denials += report.denials[: max(room, 0)]
        merged.denied_streaks += report.denied_streaks
        merged.streak_lengths.update(report.streak_lengths)
        merged.counts.update(report.counts)
        for count, where in report.first_at.items():
            merged.first_at.setdefault(count, where)
        merged.errors += report.errors[: max(ERRORS_KEPT - len(merged.errors), 0)]
        merged.calls += report.calls
        merged.denied += report.denied
        merged.duplicates += report.duplicates
        merged.unparsed_args += report.unparsed_args
        merged.unreadable += report.unreadable
    if merged is None:
        raise ValueError("nothing to merge")
    return merged


# --- the sweep -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SweepRow:
    max_repeats: int
    denied_calls: int
    sessions_with_denial: int
    first_denial: Where | None

    def to_json(self) -> dict[str, Any]:
        return {
            "maxRepeats": self.max_repeats,
            "deniedCalls": self.denied_calls,
            "sessionsWithDenial": self.sessions_with_denial,
            "firstDenial": None if self.first_denial is None else self.first_denial.to_json(),
        }


def parse_sweep(text: str) -> range:
    """``"2..10"`` as range(2, 11); a single ``"5"`` is ``5..5``. Raises ValueError."""
    low, sep, high = text.strip().partition("..")
    try:
        lo = int(low)
        hi = int(high) if sep else lo
    except ValueError:
        raise ValueError(f"expected LOW..HIGH such as 2..10, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"expected 1 <= LOW <= HIGH, got {text!r}")
    if hi > SWEEP_MAX:
        raise ValueError(f"HIGH must be at most {SWEEP_MAX}, got {hi}")
    return range(lo, hi + 1)


def sweep(report: Report, limits: Sequence[int]) -> list[SweepRow]:
    """What each maxRepeats would have denied in this report, computed from its streaks.

    Exact for limits up to ``report.cap`` (the analyzer is built with the sweep's top).
    """
    counts = sorted(report.counts.items())
    cap = report.cap
    longest = [s.longest.length if s.longest else 0 for s in report.sessions]
    rows = []
    for m in limits:
        if m > cap:
            raise ValueError(f"sweep limit {m} above the analyzed cap {cap}")
        rows.append(
            SweepRow(
                m,
                sum(n for c, n in counts if c >= m),
                sum(1 for length in longest if length >= m),
                report.first_at.get(m),
            )
        )
    return rows


def histogram(report: Report, top: int = HISTOGRAM_TOP) -> list[tuple[str, int]]:
    """Streak lengths in buckets ``1``, ``2``, ... ``top+``."""
    buckets = [0] * top
    for length, n in report.streak_lengths.items():
        buckets[min(length, top) - 1] += n
    return [(str(i + 1) if i + 1 < top else f"{top}+", n) for i, n in enumerate(buckets)]


def report_to_json(report: Report, sweep_rows: Sequence[SweepRow] | None = None) -> dict[str, Any]:
    """The ``--json`` document; field names are documented in the README."""
    formats = Counter(info.format for info in report.files if info.format)
    return {
        "schema": SCHEMA,
        "maxRepeats": report.max_repeats,
        "maxRepeatsSource": report.max_repeats_source,
        "totals": {
            "files": len(report.files),
            "filesFailed": report.failed_files,
            "formats": dict(sorted(formats.items())),
            "calls": report.calls,
            "passed": report.calls - report.denied,
            "denied": report.denied,
            "deniedStreaks": report.denied_streaks,
            "sessions": len(report.sessions),
            "sessionsWithDenial": report.sessions_with_denial,
            "duplicates": report.duplicates,
            "unparsedArgs": report.unparsed_args,
            "unreadable": report.unreadable,
        },
        "files": [info.to_json() for info in report.files],
        "sessions": [stats.to_json() for stats in report.sessions],
        "denials": [denial.to_json() for denial in report.denials],
        "denialsNotListed": report.denied_streaks - len(report.denials),
        "streakLengths": {str(k): report.streak_lengths[k] for k in sorted(report.streak_lengths)},
        "sweep": None if sweep_rows is None else [row.to_json() for row in sweep_rows],
        "errors": [error.to_json() for error in report.errors],
        "errorsNotListed": report.unreadable - len(report.errors),
    }


# --- replaying files ---------------------------------------------------------------


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
    from .formats import UnknownFormatError, detect, get
    from .pipeline import judge
    from .reader import UnreadableInputError, open_source

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
        observe = analyzer.observe
        n = 0
        for record, verdict in judge(adapter.parse(source), brake):
            observe(record, verdict)
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
