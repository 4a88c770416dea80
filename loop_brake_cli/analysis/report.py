"""A replay's findings as plain data: calls located, streaks, denials, patterns, per-file totals.

A ``Report`` is plain data that pickles: per-file reports from worker processes
``merge`` in input order into what one process would have produced. Lists are
capped (``DENIALS_KEPT``, ``ERRORS_KEPT``) while their totals keep counting, so
a report's size does not grow with the input. Only tool names, session ids,
12-hex hash prefixes and locations are held, never tool arguments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .waste import Cost, Turn, Waste
from .where import Where

if TYPE_CHECKING:
    from .evidence import Evidence
    from .stop_point import StopPoint
    from .timeline import TimelineCall

DENIALS_KEPT = 10_000
"""Denials listed in a report; more are counted (``denied_streaks``) but not listed."""
ERRORS_KEPT = 1_000
"""Unreadable records listed in a report; more are counted (``unreadable``)."""
HISTOGRAM_TOP = 10
"""The streak-length histogram's last bucket is ``10+``."""


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
    rule: str | None = None  # a policy's rule when not the streak's (``progress_max`` ...)
    limit: int | None = None  # that rule's limit

    def to_json(self) -> dict[str, Any]:
        out = {
            "session": self.session,
            "tool": self.tool,
            "hashPrefix": self.hash_prefix,
            "at": self.at.to_json(),
            "streakStart": self.streak_start.to_json(),
            "streakLength": self.streak_length,
            "moreAfterDenial": self.more,
        }
        if self.rule is not None:  # else the denial is what it was before rules were named
            out["rule"], out["limit"] = self.rule, self.limit
        return out


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
    waste: Waste = field(default_factory=Waste)
    """The calls after each streak's first denial, and their cost (analysis/waste.py)."""
    spent: Cost = field(default_factory=Cost)
    """Every model turn of the session with recorded usage (none: no usage recorded)."""
    timeline: list[TimelineCall] | None = None
    """Every call, when asked for (analysis/timeline.py); None otherwise."""
    stops: dict[int, StopPoint] | None = None
    """Where each maxRepeats would have stopped the session, when asked for
    (analysis/stops.py, ``replay --outcomes``); None otherwise."""
    suggest: Evidence | None = None
    """The evidence for a policy (analysis/suggest.py, ``replay --suggest-policy``);
    None otherwise."""
    # Live state, meaningless once the report is finished. The current streak,
    # alternation and same-tool run are a length and a start (0: none), made into
    # objects only when one becomes the session's longest: their calls are the last
    # one or two (``prev_*``), so nothing else is needed to build them. Locations are
    # plain tuples of Where's fields here (analyzer.Location); ``*_longest`` is the
    # start of the current run while it is the session's longest (it grows in place).
    turn: Turn | None = None
    open_denial: Denial | None = None
    prev_prefix: str | None = None
    prev2_prefix: str | None = None
    prev_tool: str | None = None
    prev_where: tuple[Any, ...] | None = None
    streak_length: int = 0
    streak_start: tuple[Any, ...] | None = None
    alt_length: int = 0
    alt_start: tuple[Any, ...] | None = None
    alt_longest: tuple[Any, ...] | None = None
    same_length: int = 0
    same_start: tuple[Any, ...] | None = None
    same_longest: tuple[Any, ...] | None = None
    identical: int = 0  # identical calls in a row in the progress mode (the ceiling's count)
    identical_longest: int = 0  # the session's longest such run

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
    opened: bool = True
    """False: the file could not be opened; a summary names it on stderr only."""
    warning: str | None = None
    """Read as a forced ``--format`` though it looks like another format (and calls came
    out): said on stderr and in ``--json`` (the key only then), not an error."""
    part: int = 0
    """A later piece of a dataset split by row group (its first row group): merged into
    the piece before it, so a split file is one file in the merged report."""
    zero: str | None = None
    """The file gave no tool call (issue 39): what was read instead, said on stderr only
    (``--json`` stays as it was; with ``--strict`` it is the file's ``error``)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "file": self.file,
            "format": self.format,
            "calls": self.calls,
            "denied": self.denied,
            "sessions": self.sessions,
            "unreadable": self.unreadable,
            "error": self.error,
        }
        if self.warning is not None:
            out["warning"] = self.warning
        return out


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file found in a directory that is not a transcript, so not replayed.

    ``quiet``: a file agents keep beside their transcripts (Gemini CLI's logs.json)."""

    file: str
    reason: str
    quiet: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "reason": self.reason}


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
    """counts[c] = calls with count c for 1 <= c <= cap; counts[cap + 1] = above cap (a call
    logged twice under one call id is one call).
    A dict, not a list: its size is bounded by the longest streak, not by the cap."""
    first_at: dict[int, Where] = field(default_factory=dict)
    """The first call in input order whose count was c (for c <= cap)."""
    ceiling_counts: Counter[int] = field(default_factory=Counter)
    """Under a policy's progress mode: ``ceiling_counts[c]`` = calls of a tool in the
    progress mode (not exempt) that made c identical calls in a row, whatever their
    results (``streak.identical_calls``, the count ``progress_max`` is compared with;
    cap + 1: above cap). Empty without the progress mode."""
    ceiling_first_at: dict[int, Where] = field(default_factory=dict)
    """The first such call in input order whose identical count was c (for c <= cap)."""
    ceiling_sessions: Counter[int] = field(default_factory=Counter)
    """``ceiling_sessions[n]`` = sessions whose longest such run was n calls."""
    errors: list[ReadError] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    calls: int = 0
    denied: int = 0
    duplicates: int = 0
    unparsed_args: int = 0
    unreadable: int = 0
    warned: int = 0
    """Calls that ran with a warning (a policy's ``warn_at``); duplicates not counted."""
    warns: bool = False
    """The policy has ``warn_at``: only then do summaries say how many were warned."""
    stop_after: int | None = None
    """The ignored denials that stop a run, when the sessions' stop points were kept
    (analysis/stops.py, ``replay --outcomes``); None otherwise."""
    stop_in_a_row: int | None = None
    """With stop points kept under a policy's ``[stop]``: its denials in a row."""
    stop_after_source: str | None = None
    """Where ``stop_after`` came from (``--stop-after``, or the default), as the replay
    that kept the stop points said it."""

    @property
    def failed_files(self) -> int:
        return sum(1 for info in self.files if info.error is not None)

    @property
    def opened_files(self) -> list[FileInfo]:
        """The files that could be opened (the others are named on stderr only)."""
        return [info for info in self.files if info.opened]

    @property
    def sessions_with_denial(self) -> int:
        return sum(1 for stats in self.sessions if stats.denied)


def _join(whole: FileInfo, piece: FileInfo) -> None:
    """A later piece of the same dataset file, added to its totals."""
    whole.calls += piece.calls
    whole.denied += piece.denied
    whole.sessions += piece.sessions
    whole.unreadable += piece.unreadable
    whole.size += piece.size
    if whole.error is None:
        whole.error = piece.error


def merge(reports: Iterable[Report]) -> Report:
    """Reports of files replayed separately, in input order, as one report."""
    merged: Report | None = None
    for report in reports:
        if merged is None:
            merged = report
            continue
        if (report.cap, report.max_repeats, report.stop_after, report.stop_in_a_row) != (
            merged.cap,
            merged.max_repeats,
            merged.stop_after,
            merged.stop_in_a_row,
        ):
            raise ValueError("reports made with different settings")
        files = report.files
        if files and files[0].part and merged.files and merged.files[-1].file == files[0].file:
            _join(merged.files[-1], files[0])
            files = files[1:]
        merged.files += files
        merged.sessions += report.sessions
        room = DENIALS_KEPT - len(merged.denials)
        merged.denials += report.denials[: max(room, 0)]
        merged.denied_streaks += report.denied_streaks
        merged.streak_lengths.update(report.streak_lengths)
        merged.counts.update(report.counts)
        for count, where in report.first_at.items():
            merged.first_at.setdefault(count, where)
        merged.ceiling_counts.update(report.ceiling_counts)
        for count, where in report.ceiling_first_at.items():
            merged.ceiling_first_at.setdefault(count, where)
        merged.ceiling_sessions.update(report.ceiling_sessions)
        merged.errors += report.errors[: max(ERRORS_KEPT - len(merged.errors), 0)]
        merged.skipped += report.skipped
        merged.calls += report.calls
        merged.denied += report.denied
        merged.warned += report.warned
        merged.warns = merged.warns or report.warns
        merged.duplicates += report.duplicates
        merged.unparsed_args += report.unparsed_args
        merged.unreadable += report.unreadable
    if merged is None:
        raise ValueError("nothing to merge")
    return merged
