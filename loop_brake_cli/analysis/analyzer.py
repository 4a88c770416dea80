"""Counting a replay as it happens: one session's streaks, denials and near-loops, online.

``Analyzer`` is fed the ``(record, verdict)`` pairs that ``pipeline.judge``
yields, so every number here is counted by the same brake that ``filter`` uses
(a call logged twice under one call id counted once). It keeps a constant
amount of state per session (the current streak, the longest one, the current
alternation and same-tool run) and never a list of calls, so a transcript of
any length replays in bounded memory.
"""

from __future__ import annotations

from ..core.records import BadRecord, Record, Usage
from ..core.verdicts import Verdict
from .report import (
    DENIALS_KEPT,
    ERRORS_KEPT,
    HISTOGRAM_TOP,
    Alternation,
    Denial,
    FileInfo,
    ReadError,
    Report,
    SameToolRun,
    SessionStats,
    Skipped,
    Streak,
    Where,
)
from .timeline import TimelineCall
from .waste import Cost, Turn, Waste, close_turn

_new_where = tuple.__new__  # Where's fields in order, with no Python-level __new__
# A call's location is a plain tuple of Where's fields while it is live state, and
# becomes a Where only when a report object keeps it: tuple.__new__ of a named tuple
# (and freeing one) costs about 2,000 instructions, a plain tuple a tenth of that.
Location = tuple[str, int | None, str | None, int]


class Analyzer:
    """Builds a Report from judged records; one per run (per file unless sessions continue)."""

    def __init__(
        self, max_repeats: int, max_repeats_source: str, cap: int, timeline: bool = False
    ) -> None:
        """``timeline``: also keep every call of every session (``SessionStats.timeline``)."""
        self.report = Report(max_repeats, max_repeats_source, max(cap, max_repeats, HISTOGRAM_TOP))
        self._sessions: dict[str, SessionStats] = {}
        self._timeline = timeline
        # Usage seen for sessions with no call yet: their turns so far, and the open one.
        self._pending: dict[str, tuple[Cost, Turn | None]] = {}
        self._file: FileInfo | None = None
        self._file_sessions: set[str] = set()
        self._call = 0
        # The report's two histograms, counted here in plain dicts (bounded by the longest
        # streak, not by the cap) and moved into its Counters by finish(): `+= 1` on a
        # Counter (a dict subclass) takes the interpreter's slow path, twice per call.
        self._counts: dict[int, int] = {}  # verdicts by count (cap + 1: above the cap)
        self._lengths: dict[int, int] = {}  # closed streaks by length

    def start_file(self, name: str, size: int = 0) -> FileInfo:
        """Begin a file; later calls are located in it."""
        info = FileInfo(name, size=size)
        self.report.files.append(info)
        self._file = info
        self._file_sessions = set()
        self._call = 0
        return info

    def start_run(self) -> None:
        """A dataset's next row, a run of its own: its calls are numbered from 1 again, so
        a call's ordinal is the same whichever piece of the file held it (``replay -j``)."""
        self._call = 0

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

    def skip_file(self, reason: str, quiet: bool = False) -> None:
        """The current file is not a transcript: it leaves the totals, listed as skipped."""
        info = self._file
        assert info is not None and self.report.files[-1] is info, "start_file first"
        self.report.files.pop()
        self.report.skipped.append(Skipped(info.file, reason, quiet))
        self._file = None

    def add(self, record: Record, verdict: Verdict | None) -> None:
        """Count one judged record (a BadRecord when ``verdict`` is None)."""
        if verdict is None:
            if record.__class__ is Usage:  # one per model turn: the common case
                self._usage(record)  # type: ignore[arg-type]
            elif record.__class__ is BadRecord:
                self.bad_record(record)
            return
        info = self._file
        assert info is not None, "start_file first"
        report = self.report
        # The verdict's leading fields in one unpacking: the 3.11 interpreter does not
        # specialise a named tuple's attributes (each read is a generic look-up).
        denied, tool, key, count, _, prefix, _, duplicate, rule = verdict[:9]
        stats = self._sessions.get(key)
        if stats is None:
            stats = self._new_session(key, info.file)
        if duplicate:
            # The same call logged twice (its call id repeats the session's last one): one
            # call, so it counts nowhere but here (not in calls, denials, streaks or the
            # timeline), and every output says so the same way.
            stats.duplicates += 1
            report.duplicates += 1
            return
        self._call += 1
        where = (info.file, record.line, record.path, self._call)
        if key not in self._file_sessions:
            self._file_sessions.add(key)
            info.sessions += 1
        info.calls += 1
        report.calls += 1
        stats.calls += 1
        if record.args_unparsed:  # type: ignore[union-attr]
            stats.unparsed_args += 1
            report.unparsed_args += 1
        if denied:
            info.denied += 1
            stats.denied += 1
            report.denied += 1
        elif rule is not None and verdict.warn_at is not None:  # only a policy warns
            report.warned += 1
        counts, bucket = self._counts, count if count <= report.cap else report.cap + 1
        counts[bucket] = counts.get(bucket, 0) + 1
        if count <= report.cap and count not in report.first_at:
            report.first_at[count] = _new_where(Where, where)
        prev, prev_tool = stats.prev_prefix, stats.prev_tool
        if rule is not None and verdict.progress and not verdict.exempt:
            self._ceiling(stats, prefix == prev and tool == prev_tool, where)
        # The streak, written out (once per call): its length is the brake's count.
        wasted = False
        if count == 1 or not stats.streak_length:
            if stats.streak_length:  # the last streak ends
                self._close(stats)
            stats.streak_start = where
        elif stats.open_denial is not None:
            wasted = True  # after the streak's first denial (analysis/waste.py)
        stats.streak_length = count
        # The streak's first denied call (without a policy: count == maxRepeats; under
        # one, the tool's own limit, or a cycle or stop denial at any count).
        if denied and stats.open_denial is None:
            self._deny(stats, tool, prefix, count, where)
            if rule is not None and rule != "streak":  # a policy's other rules say which
                denial = stats.open_denial
                denial.rule, denial.limit = rule, verdict.limit  # type: ignore[union-attr]
        if wasted:
            self._wasted(stats)
        if stats.timeline is not None:
            self._mark(stats, verdict, where, wasted)
        # A, B, A, B, ...: each call equals the one two back and differs from the last.
        if prev is None or prefix == prev:
            stats.alt_length = 0
        elif stats.alt_length and prefix == stats.prev2_prefix:
            stats.alt_length += 1
            self._alternation(stats, tool, prefix)
        else:
            stats.alt_length, stats.alt_start = 2, stats.prev_where
        # Same tool, arguments changing at every call: the brake's count stays at 1.
        if tool == prev_tool and prefix != prev:
            stats.same_length += 1
            best = stats.longest_same_tool
            if best is None or stats.same_length > best.length:
                if stats.same_longest is stats.same_start:
                    best.length = stats.same_length  # type: ignore[union-attr]  # still growing
                else:
                    start = stats.same_longest = stats.same_start
                    run = SameToolRun(tool, stats.same_length, _new_where(Where, start))
                    stats.longest_same_tool = run
        else:
            stats.same_length, stats.same_start = 1, where
        stats.prev2_prefix, stats.prev_prefix = prev, prefix
        stats.prev_tool, stats.prev_where = tool, where

    def _ceiling(self, stats: SessionStats, same: bool, where: Location) -> None:
        """A call in the progress mode: its identical calls in a row, whatever the
        results (what ``progress_max`` is compared with), into the ceiling's histogram."""
        identical = stats.identical = stats.identical + 1 if same else 1
        if identical > stats.identical_longest:
            stats.identical_longest = identical
        report = self.report
        bucket = identical if identical <= report.cap else report.cap + 1
        report.ceiling_counts[bucket] += 1
        if identical <= report.cap and identical not in report.ceiling_first_at:
            report.ceiling_first_at[identical] = _new_where(Where, where)

    def _new_session(self, key: str, file: str) -> SessionStats:
        stats = self._sessions[key] = SessionStats(file, key)
        self.report.sessions.append(stats)
        if self._timeline:
            stats.timeline = []
        pending = self._pending.pop(key, None) if self._pending else None
        if pending is not None:
            stats.spent, stats.turn = pending
        return stats

    def _usage(self, usage: Usage) -> None:
        """A model turn begins: the session's calls from here to its next Usage are its own."""
        key = usage.session
        stats = self._sessions.get(key)
        if stats is None:  # no call yet: keep the turn until the session's first call
            spent, turn = self._pending.get(key) or (Cost(), None)
            if turn is not None:
                close_turn(turn, 0, spent, Waste())
            ordinal = spent.turns + 1
            self._pending[key] = (spent, Turn(usage, ordinal, 0))
            return
        calls = stats.calls
        turn = stats.turn
        if turn is None:
            stats.turn = Turn(usage, stats.spent.turns + 1, calls)
            return
        close_turn(turn, calls, stats.spent, stats.waste)
        # Nothing keeps a closed turn: it becomes the next one (no allocation per turn).
        turn.usage = usage
        turn.ordinal = stats.spent.turns + 1
        turn.start = calls
        turn.wasted = 0

    @staticmethod
    def _wasted(stats: SessionStats) -> None:
        stats.waste.calls += 1
        if stats.turn is None:
            stats.waste.unknown_calls += 1
        else:
            stats.turn.wasted += 1

    @staticmethod
    def _mark(stats: SessionStats, verdict: Verdict, where: Location, wasted: bool) -> None:
        kind = "stop" if verdict.stop else "deny" if verdict.denied else "pass"
        turn = stats.turn
        stats.timeline.append(  # type: ignore[union-attr]
            TimelineCall(
                verdict.tool_name,
                verdict.hash_prefix,
                verdict.count,
                kind,
                _new_where(Where, where),
                wasted,
                None if turn is None else turn.ordinal,
            )
        )

    def _deny(
        self, stats: SessionStats, tool: str, prefix: str, count: int, where: Location
    ) -> None:
        """The first denied call of the session's streak."""
        report = self.report
        at, start = _new_where(Where, where), _new_where(Where, stats.streak_start)
        denial = stats.open_denial = Denial(stats.session, tool, prefix, at, start, count, 0)
        report.denied_streaks += 1
        if len(report.denials) < DENIALS_KEPT:
            report.denials.append(denial)

    def _close(self, stats: SessionStats) -> None:
        """The session's streak has ended: its calls are the last one (``prev_*``)."""
        length = stats.streak_length
        lengths = self._lengths
        lengths[length] = lengths.get(length, 0) + 1
        if stats.longest is None or length > stats.longest.length:
            start = _new_where(Where, stats.streak_start)
            stats.longest = Streak(stats.prev_tool, stats.prev_prefix, length, start)  # type: ignore[arg-type]
        denial = stats.open_denial
        if denial is not None:
            denial.more = length - denial.streak_length  # identical calls after it
            denial.streak_length = length
            stats.open_denial = None
        stats.streak_length = 0

    @staticmethod
    def _alternation(stats: SessionStats, tool: str, prefix: str) -> None:
        """The alternation grew (to 3 calls or more): the longest yet, if it is longer.

        Its first two calls are the last two, in an order the length's parity gives:
        with an odd length this call is the first one's again."""
        length, best = stats.alt_length, stats.longest_alternation
        if best is not None and length <= best.length:
            return
        if stats.alt_longest is stats.alt_start:
            best.length = length  # type: ignore[union-attr]  # the longest, still growing
            return
        prev, prev_tool = stats.prev_prefix, stats.prev_tool
        if length & 1:
            tools, prefixes = (tool, prev_tool), (prefix, prev)
        else:
            tools, prefixes = (prev_tool, tool), (prev, prefix)
        start = stats.alt_longest = stats.alt_start
        stats.longest_alternation = Alternation(tools, prefixes, length, _new_where(Where, start))

    def finish(self) -> Report:
        """Close every open streak and return the report (the analyzer is spent)."""
        for stats in self.report.sessions:
            if stats.streak_length:
                self._close(stats)
            if stats.identical_longest:
                self.report.ceiling_sessions[stats.identical_longest] += 1
            if stats.turn is not None:
                close_turn(stats.turn, stats.calls, stats.spent, stats.waste)
                stats.turn = None
            stats.prev_prefix = stats.prev2_prefix = stats.prev_tool = None
            stats.prev_where = stats.streak_start = stats.alt_start = stats.same_start = None
            stats.alt_longest = stats.same_longest = None
            stats.alt_length = stats.same_length = 0
        self._sessions = {}
        self._pending = {}
        report = self.report
        report.counts.update(self._counts)
        report.streak_lengths.update(self._lengths)
        return report
