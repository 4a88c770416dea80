"""The page data: a finished replay ``Report`` as the compact JSON the page's script draws.

Only what the rest of replay already shows goes in: file names, session ids, tool
names, 12-hex hash prefixes, counts, verdicts and locations, never an argument or
a result. Repeated strings become indexes into tables (``files``, ``tools``, a
session's hash prefixes) and per-call fields are parallel arrays, so a
10,000-call session costs a few hundred kilobytes, not megabytes.

The per-call records are the timeline that ``analysis`` keeps when asked
(``SessionStats.timeline``); waste (which calls, their tokens) is decided there,
and this module only lays it out: a streak band is a run of counts 1, 2, 3...,
its first denial the run's first ``deny`` or ``stop``, the shading the runs of
wasted calls.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...analysis import Report, SessionStats, TimelineCall, Where
from ...analysis.prices import Prices
from ...analysis.waste import KINDS, dollars

ALTERNATION_SHOWN = 4
SAME_TOOL_SHOWN = 3
"""The informational measures are marked from the lengths at which the text summary
lists them (render.py's "What the exact brake does not catch")."""

_VERDICT_CODES = {"pass": "p", "deny": "d", "stop": "s"}
"""One letter per call (a call logged twice under one call id is one call, drawn once)."""


class _Index:
    """Strings to small integers, in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.counts: list[int] = []

    def __call__(self, name: str, weight: int = 0) -> int:
        index = self.ids.get(name)
        if index is None:
            index = self.ids[name] = len(self.ids)
            self.counts.append(0)
        self.counts[index] += weight
        return index

    def names(self) -> list[str]:
        return list(self.ids)


def page_data(
    report: Report, policy: str | None = None, prices: Prices | None = None
) -> dict[str, Any]:
    """The page's JSON for ``report`` (a finished replay; timelines where kept); ``policy``
    names the policy file, ``prices`` gives dollars (none without)."""
    files, tools = _Index(), _Index()
    for info in report.opened_files:
        files(info.file)
    sessions = [_session(stats, files, tools, prices) for stats in report.sessions]
    base = _common_dir(files.names())
    waste_tokens = [s["wt"] for s in sessions if s["wt"] is not None]
    cache_reads = [s["wr"] for s in sessions if s["wr"] is not None]
    waste_dollars = [s["wd"] for s in sessions if s["wd"] is not None]
    cache_dollars = [s["wrd"] for s in sessions if s["wrd"] is not None]
    return {
        "maxRepeats": report.max_repeats,
        "maxRepeatsSource": report.max_repeats_source,
        "policy": policy,
        "prices": None if prices is None else prices.path,
        "currency": None if prices is None else prices.currency,
        "totals": {
            "files": len(report.opened_files),
            "sessions": len(report.sessions),
            "calls": report.calls,
            "denied": report.denied,
            "sessionsWithDenial": report.sessions_with_denial,
            "wasteCalls": sum(s["wc"] for s in sessions),
            "wasteTokens": sum(waste_tokens) if waste_tokens else None,
            "wasteCacheReads": sum(cache_reads) if cache_reads else None,
            "wasteDollars": sum(waste_dollars) if waste_dollars else None,
            "wasteCacheDollars": sum(cache_dollars) if cache_dollars else None,
            "duplicates": report.duplicates,
            **({"warned": report.warned} if report.warns else {}),  # a policy's warn_at
        },
        "problems": _problems(report),
        "base": base,
        "files": [os.path.relpath(name, base) if base else name for name in files.names()],
        "tools": tools.names(),
        "toolCalls": tools.counts,
        "sessions": sessions,
    }


def _session(
    stats: SessionStats, files: _Index, tools: _Index, prices: Prices | None
) -> dict[str, Any]:
    longest = stats.longest
    timeline = _timeline(stats, files, tools)
    waste_calls, waste_tokens, cache_reads, waste_dollars, cache_dollars = _waste(stats, prices)
    kinds = stats.waste.cost.tokens()
    return {
        "f": files(stats.file),
        "s": None if stats.session == stats.file else stats.session,  # None: "(the file)"
        "n": stats.calls,
        "u": stats.duplicates,
        "d": stats.denied,
        "wc": waste_calls,
        "wt": waste_tokens,
        "wr": cache_reads,
        "wd": waste_dollars,
        "wrd": cache_dollars,
        "wn": stats.waste.cost.turns,
        "wk": None if waste_tokens is None else [kinds.get(kind) for kind in KINDS],
        "ls": longest.length if longest else 0,
        "lt": tools(longest.tool) if longest else None,
        "lh": longest.hash_prefix if longest else None,
        "tl": timeline,
    }


def _waste(
    stats: SessionStats, prices: Prices | None
) -> tuple[int, int | None, int | None, float | None, float | None]:
    """Wasted calls; their fresh tokens and their cache reads; what they cost, and what
    of that the cache reads cost. None where unknown: the transcript recorded no usage
    for the session (never 0), no cache read was recorded, or, for the costs, no prices
    were given.

    Fresh tokens are the kinds that do not overlap other than cache reads: input,
    output (reasoning is part of it) and cache writes (analysis/waste.py). Cache reads
    are apart: a long context re-read each turn dwarfs the rest while costing a tenth
    as much, so one sum of the two would mislead."""
    waste = stats.waste
    if not stats.spent.turns:
        return waste.calls, None, None, None, None
    tokens = waste.cost.tokens()
    kinds = [tokens.get(kind) for kind in ("input", "output", "cache_write")]
    fresh = sum(n for n in kinds if n is not None)
    cache_reads = tokens.get("cache_read")
    if prices is None:
        return waste.calls, fresh, cache_reads, None, None
    cost = dollars(waste.cost, prices)
    if not cost.priced_turns:  # no price matches its models: unknown, never 0
        return waste.calls, fresh, cache_reads, None, None
    cached = cost.cache_read if cache_reads is not None else None
    return waste.calls, fresh, cache_reads, cost.amount, cached


def _timeline(stats: SessionStats, files: _Index, tools: _Index) -> dict[str, Any] | None:
    calls = stats.timeline
    if calls is None:
        return None
    hashes = _Index()
    tool_ids, hash_ids, counts, ordinals, locations, file_ids = [], [], [], [], [], []
    verdicts: list[str] = []
    position: dict[tuple[str, int], int] = {}
    for index, call in enumerate(calls):
        where = call.where
        tool_ids.append(tools(call.tool, 1))
        hash_ids.append(hashes(call.hash_prefix))
        counts.append(call.count)
        ordinals.append(where.call)
        locations.append(where.line if where.line is not None else where.path)
        file_ids.append(files(where.file))
        code = _VERDICT_CODES.get(call.verdict, "p")
        verdicts.append(code)
        position[(where.file, where.call)] = index
    out: dict[str, Any] = {
        "t": tool_ids,
        "h": hash_ids,
        "hs": hashes.names(),
        "c": counts,
        "o": ordinals,
        "l": locations,
        "v": "".join(verdicts),
        "st": [],
        "fd": [],
        "w": _runs([call.waste for call in calls]),
        "alt": None,
        "same": None,
    }
    if len(set(file_ids)) > 1:  # --continue-sessions: a session across files
        out["fi"] = file_ids
    _streaks(calls, out)
    alt, same = stats.longest_alternation, stats.longest_same_tool
    if alt is not None and alt.length >= ALTERNATION_SHOWN:
        out["alt"] = _span(position, alt.start, alt.length)
    if same is not None and same.length >= SAME_TOOL_SHOWN:
        out["same"] = _span(position, same.start, same.length)
    return out


def _streaks(calls: Sequence[TimelineCall], out: dict[str, Any]) -> None:
    """Bands for streaks of 2+ identical calls, and each streak's first denial."""
    bands, first_denials = out["st"], out["fd"]
    start, top, denied = 0, 0, False
    for index, call in enumerate(calls):
        if call.count == 1:
            if top >= 2:
                bands.append([start, index - start])
            start, top, denied = index, 0, False
        top = max(top, call.count)
        if call.verdict != "pass" and not denied:
            first_denials.append(index)
            denied = True
    if top >= 2:
        bands.append([start, len(calls) - start])


def _runs(flags: Sequence[bool]) -> list[list[int]]:
    """``[start, length]`` of each run of True."""
    runs: list[list[int]] = []
    start = None
    for index, flag in enumerate(flags):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            runs.append([start, index - start])
            start = None
    if start is not None:
        runs.append([start, len(flags) - start])
    return runs


def _common_dir(names: Sequence[str]) -> str:
    """The directory every file shares, so the page can show shorter names ("" if none);
    as the text summary names them."""
    dirs = [os.path.dirname(name) for name in names if name != "<stdin>"]
    if not dirs or not all(dirs) or len(dirs) != len(names):
        return ""
    try:
        return os.path.commonpath(dirs)
    except ValueError:
        return ""


def _span(position: dict[tuple[str, int], int], start: Where, length: int) -> list[int] | None:
    index = position.get((start.file, start.call))
    return None if index is None else [index, length]


def _problems(report: Report) -> dict[str, Any]:
    """What the totals leave out, as the run said it on stderr: every unreadable record
    or file (located; the messages never quote the input) and every file skipped as not
    a transcript (a file agents keep beside their transcripts, such as Gemini CLI's
    logs.json, is skipped quietly there and here)."""
    return {
        "unreadable": report.unreadable,
        "errors": [str(error) for error in report.errors],
        "skipped": [[item.file, item.reason] for item in report.skipped if not item.quiet],
    }
