"""``replay --suggest-policy``: the evidence for a policy, gathered in one pass, and the policy.

Two kinds of evidence, per session (``SessionStats.suggest``), so that a run's
outcome (``--outcomes``) can weigh it afterwards:

* **identical streaks** that reach the replay's maxRepeats, per tool: how many, the
  longest, and in how many of them the results changed from one call to the next
  (the call polled something that moved: the progress mode's case). Streaks like
  these in runs that *succeeded* are what a per-tool limit above the longest, or
  ``progress = true``, would let through;
* **near streaks**: calls of one tool, one after the other, whose arguments are the
  same but for one to three argument paths (a timestamp, a request id, a cursor),
  reaching maxRepeats. Counted without those paths (``args_ignore``) they are one
  call repeated: the loop the exact hash cannot see. Evidence in runs that
  *failed* is what ``args_ignore`` would catch.

Values are never kept: each argument leaf is reduced to an 8-byte digest of its
canonical JSON, compared with the call before it and dropped; a result to a
32-byte digest. Only tool names and argument *paths* leave this module, and a
path only when each member name in it looks like a name a tool's schema defines
(``printable``): a letter or ``_`` first, then letters, digits, ``_`` or ``-``, at
most 64 characters, at most 3 digits, no run of 16 letters and digits (a key, a
token or a hash used as a member name fails this). A member that is in one call
and not the other (a map keyed by data: the key is the value that changed) is
named by its parent, never by its own name. A near streak whose paths fail the
rule is counted as withheld, and its paths are not printed.

``suggest`` turns the evidence into rules (``Suggestion``): deterministic (tools in
name order, paths sorted), each with the figures behind it; ``render/suggest.py``
writes them as a TOML policy with comments.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.canonical import JSONInputError, canonical_json, utf8
from ..core.records import Record, ToolCall, ToolResult
from ..core.verdicts import Verdict
from .analyzer import Analyzer
from .evidence import Evidence, NearStreaks, ToolStreaks
from .report import Report, SessionStats

__all__ = [
    "MAX_VARYING",
    "Evidence",
    "NearStreaks",
    "Suggestion",
    "SuggestAnalyzer",
    "ToolStreaks",
    "path_text",
    "printable",
    "suggest",
]

MAX_VARYING = 3
"""The most argument paths that may differ for two calls to count as one call repeated."""
MAX_LEAVES = 512
"""Calls with more argument leaves than this (or nested deeper than ``MAX_DEPTH``) are not
compared path by path (their near streaks are not looked for)."""
MAX_DEPTH = 16
RESULT_IDS_KEPT = 8
"""Call ids of the current streak kept to pair its results (results follow their calls)."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?\Z"
)
_NUMBER = re.compile(r"-?\d+(\.\d+)?\Z")
_TOKEN = re.compile(r"(?=[^0-9]*[0-9])[A-Za-z0-9_=:+-]{6,}\Z")
NOISE = frozenset({"number", "timestamp", "token"})
"""The kinds of value a suggested ``args_ignore`` path may hold: a count, a cursor, a
time, an id or a nonce. A path whose values are text (a command, a file path, a
query) or a whole object is not noise: ignoring it would make different calls one."""
_LONG_RUN = re.compile(r"[A-Za-z0-9]{16}")
Path = tuple[str | int, ...]


def shape(value: Any) -> str:
    """The kind of an argument value, kept instead of the value: ``number``,
    ``timestamp``, ``token`` (letters, digits, ``_=:+-``, at least one digit, 6 or more
    characters: an id, a nonce), ``text``, ``flag`` (true, false, null) or
    ``structure`` (an object or an array)."""
    if isinstance(value, bool) or value is None:
        return "flag"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        if _NUMBER.match(value):
            return "number"
        if _TIMESTAMP.match(value):
            return "timestamp"
        if _TOKEN.match(value):
            return "token"
        return "text"
    return "structure"


def _value_at(value: Any, path: Path) -> Any:
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def printable(name: str) -> bool:
    """Whether a member name may be printed in a suggested path (the module docstring)."""
    if not _NAME.match(name) or _LONG_RUN.search(name):
        return False
    return sum(char.isdigit() for char in name) <= 3


def path_text(path: Path) -> str | None:
    """``$.a.b[0]`` for a path whose member names are all ``printable``; else None."""
    parts = ["$"]
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif printable(step):
            parts.append(f".{step}")
        else:
            return None
    return "".join(parts)


def _leaves(value: Any) -> dict[Path, bytes] | None:
    """Every leaf of ``value`` by its path, as an 8-byte digest; None past the bounds."""
    out: dict[Path, bytes] = {}
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if len(path) > MAX_DEPTH:
            return None
        if isinstance(item, dict) and item:
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list) and item:
            stack.extend(((*path, index), child) for index, child in enumerate(item))
        else:
            try:
                text = canonical_json(item)
            except (JSONInputError, TypeError, ValueError):
                return None
            out[path] = hashlib.blake2b(utf8(text), digest_size=8).digest()
        if len(out) > MAX_LEAVES:
            return None
    return out


def _varying(before: dict[Path, bytes], after: dict[Path, bytes]) -> frozenset[Path] | None:
    """The paths two calls differ at, a member present in one only named by its parent;
    None when they are not the same call but for a few paths (nothing else in common,
    more than ``MAX_VARYING`` paths, or a top-level member added or removed)."""
    varying: set[Path] = set()
    for path in before.keys() | after.keys():
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None or new is None:
            if len(path) < 2:
                return None
            path = path[:-1]
        varying.add(path)
    if len(varying) > MAX_VARYING:
        return None
    same = any(
        digest == after.get(path) and not any(path[: len(v)] == v for v in varying)
        for path, digest in before.items()
    )
    return frozenset(varying) if same else None


@dataclass(slots=True)
class _Live:
    """A session's state while replaying (never in a report)."""

    tool: str | None = None
    leaves: dict[Path, bytes] | None = None
    count: int = 0
    count_before: int = 0
    streak_tool: str | None = None
    streak_ids: list[Any] = field(default_factory=list)
    streak_result: bytes | None = None
    streak_results: int = 0
    streak_changed: bool = False
    near_tool: str | None = None
    near_paths: frozenset[Path] = frozenset()
    near_length: int = 0
    near_shapes: set[str] = field(default_factory=set)


class SuggestAnalyzer(Analyzer):
    """An ``Analyzer`` that also gathers each session's evidence (``SessionStats.suggest``)
    against ``threshold`` (the replay's maxRepeats)."""

    wants_results = True

    def __init__(
        self, max_repeats: int, max_repeats_source: str, cap: int, timeline: bool = False
    ) -> None:
        super().__init__(max_repeats, max_repeats_source, cap, timeline)
        self.threshold = max_repeats
        self._live: dict[str, _Live] = {}

    def add(self, record: Record, verdict: Verdict | None) -> None:
        super().add(record, verdict)
        if verdict is None:
            if record.__class__ is ToolResult:
                self._result(record)  # type: ignore[arg-type]
            return
        if verdict.duplicate or record.__class__ is not ToolCall:
            return
        stats = self._sessions[verdict.session_id]
        if stats.suggest is None:
            stats.suggest = Evidence()
        live = self._live.get(verdict.session_id)
        if live is None:
            live = self._live[verdict.session_id] = _Live()
        self._streak(stats.suggest, live, verdict, record)
        self._near(stats.suggest, live, verdict, record)  # type: ignore[arg-type]

    def _streak(self, evidence: Evidence, live: _Live, verdict: Verdict, record: Record) -> None:
        if verdict.count <= 1 or live.streak_tool is None:
            self._close_streak(evidence, live)
            live.streak_tool = verdict.tool_name
            live.streak_ids = []
            live.streak_result, live.streak_results, live.streak_changed = None, 0, False
        live.count = verdict.count
        call_id = getattr(record, "call_id", None)
        live.streak_ids.append(call_id)
        del live.streak_ids[:-RESULT_IDS_KEPT]

    def _close_streak(self, evidence: Evidence, live: _Live) -> None:
        if live.streak_tool is None or live.count < self.threshold:
            return
        found = evidence.streaks.get(live.streak_tool)
        if found is None:
            found = evidence.streaks[live.streak_tool] = ToolStreaks()
        found.streaks += 1
        found.longest = max(found.longest, live.count)
        found.changing += live.streak_changed
        found.unresulted += live.streak_results < 2

    def _result(self, result: ToolResult) -> None:
        live = self._live.get(result.session)
        if live is None or live.streak_tool is None:
            return
        if result.call_id is not None and result.call_id not in live.streak_ids:
            return
        digest = result.digest
        if digest is None:
            from ..core.progress import result_digest

            try:
                digest = result_digest(result.result)
            except (JSONInputError, TypeError, ValueError):
                return
        if live.streak_results and digest != live.streak_result:
            live.streak_changed = True
        live.streak_result = digest
        live.streak_results += 1

    def _near(self, evidence: Evidence, live: _Live, verdict: Verdict, call: ToolCall) -> None:
        leaves = None if call.args_unparsed else _leaves(call.args)
        previous, previous_count = live.leaves, live.count_before
        varying = None
        if live.tool == verdict.tool_name and leaves is not None and previous is not None:
            varying = _varying(previous, leaves)
        if varying is not None and not varying:  # identical: a near streak goes on
            if live.near_length:
                live.near_length += 1
        elif (
            varying is not None
            and live.near_length
            and (len(live.near_paths | varying) <= MAX_VARYING)
        ):
            live.near_paths |= varying
            live.near_length += 1
            live.near_shapes.update(shape(_value_at(call.args, path)) for path in varying)
        else:
            self._close_near(evidence, live)
            if varying is not None:
                live.near_tool, live.near_paths = verdict.tool_name, varying
                live.near_length = previous_count + 1
                live.near_shapes = {shape(_value_at(call.args, path)) for path in varying}
        live.tool, live.leaves = verdict.tool_name, leaves
        live.count_before = verdict.count

    def _close_near(self, evidence: Evidence, live: _Live) -> None:
        length, tool, varying = live.near_length, live.near_tool, live.near_paths
        shapes = live.near_shapes
        live.near_length, live.near_tool, live.near_paths = 0, None, frozenset()
        live.near_shapes = set()
        if tool is None or length < self.threshold or not varying:
            return
        paths = [path_text(path) for path in varying]
        if not shapes <= NOISE:
            found = evidence.textual.setdefault(tool, NearStreaks())
        elif any(text is None for text in paths):
            found = evidence.withheld.setdefault(tool, NearStreaks())
        else:
            key = (tool, tuple(sorted(text for text in paths if text is not None)))
            found = evidence.near.setdefault(key, NearStreaks())
        found.streaks += 1
        found.longest = max(found.longest, length)

    def finish(self) -> Report:
        for stats in self.report.sessions:
            live = self._live.get(stats.session)
            if live is not None and stats.suggest is not None:
                self._close_streak(stats.suggest, live)
                self._close_near(stats.suggest, live)
        self._live = {}
        return super().finish()


# --- from evidence to rules ---------------------------------------------------------


@dataclass(slots=True)
class Side:
    """Evidence added up over the runs of one outcome: runs with any, and the figures."""

    runs: int = 0
    streaks: ToolStreaks | NearStreaks | None = None


@dataclass(slots=True)
class Suggestion:
    """One tool's rule, and the evidence behind each of its keys."""

    tool: str
    max_repeats: int | None = None
    progress: bool = False
    args_ignore: tuple[str, ...] = ()
    streaks: dict[str, Side] = field(default_factory=dict)
    """Identical streaks reaching maxRepeats by outcome: ``resolved``, ``failed``,
    ``unknown`` (runs with no outcome given)."""
    near: dict[str, Side] = field(default_factory=dict)
    """Near streaks of ``args_ignore``'s paths, by outcome."""
    withheld: int = 0
    """Near streaks of this tool whose paths are not printable."""
    textual: int = 0
    """Near streaks of this tool whose varying values are not noise (text, structure)."""
    not_suggested: str | None = None
    """Why the evidence of this tool gave no rule (it is still shown)."""


def _side(sides: dict[str, Side], outcome: str, found: ToolStreaks | NearStreaks) -> None:
    side = sides.get(outcome)
    if side is None:
        side = sides[outcome] = Side(0, type(found)())
    side.runs += 1
    side.streaks.add(found)  # type: ignore[union-attr, arg-type]


def suggest(
    sessions: Sequence[SessionStats], outcomes: Iterable[tuple[int, bool]] | None
) -> list[Suggestion]:
    """Rules from the evidence of ``sessions``; ``outcomes``: (session index, resolved)
    of the matched runs (None: no outcome given, every run counts as ``unknown``; runs
    unmatched are left out when outcomes are given)."""
    labelled: list[tuple[SessionStats, str]]
    if outcomes is None:
        labelled = [(stats, "unknown") for stats in sessions]
    else:
        labelled = [
            (sessions[index], "resolved" if resolved else "failed") for index, resolved in outcomes
        ]
    by_tool: dict[str, Suggestion] = {}
    paths: dict[str, dict[tuple[str, ...], dict[str, Side]]] = {}
    for stats, outcome in labelled:
        evidence = stats.suggest
        if evidence is None:
            continue
        for tool, found in evidence.streaks.items():
            item = by_tool.setdefault(tool, Suggestion(tool))
            _side(item.streaks, outcome, found)
        for (tool, names), near in evidence.near.items():
            by_tool.setdefault(tool, Suggestion(tool))
            _side(paths.setdefault(tool, {}).setdefault(names, {}), outcome, near)
        for tool, near in evidence.withheld.items():
            by_tool.setdefault(tool, Suggestion(tool)).withheld += near.streaks
        for tool, near in evidence.textual.items():
            by_tool.setdefault(tool, Suggestion(tool)).textual += near.streaks
    for tool, item in by_tool.items():
        _decide_streaks(item, outcomes is None)
        _decide_paths(item, paths.get(tool, {}), outcomes is None)
    return [by_tool[tool] for tool in sorted(by_tool)]


def _decide_streaks(item: Suggestion, unlabelled: bool) -> None:
    """Streaks in resolved runs: progress when every one of them saw its results change,
    else a limit above the longest. Without outcomes a streak may be a loop as well as
    a success: only the progress mode is suggested (a call whose result changes at
    every repeat is polling something that moves), never a higher limit."""
    side = item.streaks.get("unknown" if unlabelled else "resolved")
    if side is None or side.streaks is None:
        return
    found = side.streaks
    assert isinstance(found, ToolStreaks)
    if found.changing == found.streaks:
        item.progress = True
    elif not unlabelled:
        item.max_repeats = found.longest + 1


def _decide_paths(
    item: Suggestion, by_paths: dict[tuple[str, ...], dict[str, Side]], unlabelled: bool
) -> None:
    """``args_ignore``: the paths of near streaks in failed runs (in any run, without
    outcomes), all together (sorted, at most 32); those seen only in resolved runs are
    shown, not suggested."""
    chosen: set[str] = set()
    sides: dict[str, Side] = {}
    helpful = "unknown" if unlabelled else "failed"
    for names in sorted(by_paths):
        found = by_paths[names]
        if helpful not in found:
            continue
        chosen.update(names)
        for outcome, side in found.items():
            total = sides.setdefault(outcome, Side(0, NearStreaks()))
            total.runs += side.runs
            total.streaks.add(side.streaks)  # type: ignore[union-attr, arg-type]
    if not chosen:
        if by_paths:
            only = sorted({name for names in by_paths for name in names})
            sides = {}
            for found in by_paths.values():
                for outcome, side in found.items():
                    total = sides.setdefault(outcome, Side(0, NearStreaks()))
                    total.runs += side.runs
                    total.streaks.add(side.streaks)  # type: ignore[union-attr, arg-type]
            item.near = sides
            item.not_suggested = (
                f"args_ignore for {', '.join(only)}, seen in resolved runs only (ignoring "
                "them would deny those runs' calls, and catch no failed run's loop)"
            )
        return
    item.args_ignore = tuple(sorted(chosen))[:32]
    item.near = sides
