"""Partial reports: a finished ``Report`` as a JSON file that merges with others.

``replay --partial FILE`` writes one; ``loop-brake merge`` reads several, in the
order given, and ``report.merge`` combines them into the report one replay of all
their inputs, in that order, would have made: the same text summary, ``--json``
and ``--html``, byte for byte. So a corpus can be replayed in pieces anywhere (a
cluster, CI shards) and reported once.

A partial holds what a report holds and nothing more: file names, session ids,
tool names, 12-hex hash prefixes, counts, locations, token figures, and each
call's timeline record (for ``--html``); written by ``replay --outcomes``, each
session's stop points too (``stops``, with ``stopAfter`` in its settings); never
a tool argument or result. Its ``settings`` (maxRepeats, where it came from, the
histogram's cap, the policy file, the stop's K) must agree across the partials
of one merge.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

from ..analysis.report import (
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
from ..analysis.timeline import TimelineCall
from ..analysis.waste import KINDS, Cost, ModelCost, Tokens, Waste

SCHEMA = "loop-brake.partial/1"


class PartialError(ValueError):
    """A partial file that cannot be used: located, quoting nothing of it."""


def _where(where: Where | None) -> list[Any] | None:
    return None if where is None else [where.file, where.line, where.path, where.call]


def _where_of(value: Any) -> Where | None:
    return None if value is None else Where(*value)


def _tokens(tokens: Tokens) -> list[int | None]:
    return [tokens.get(kind) for kind in KINDS]


def _cost(cost: Cost) -> dict[str, Any]:
    return {
        "turns": cost.turns,
        "byModel": [[m, c.turns, _tokens(c.tokens)] for m, c in cost.by_model.items()],
    }


def _cost_of(value: dict[str, Any]) -> Cost:
    cost = Cost(value["turns"])
    for model, turns, tokens in value["byModel"]:
        cost.by_model[model] = ModelCost(turns, Tokens(*tokens))
    return cost


def _stops(stops: dict[int, Any]) -> list[list[Any]]:
    return [
        [limit, stop.call, stop.turn, _where(stop.where), _cost(stop.saved)]
        for limit, stop in sorted(stops.items())
    ]


def _stops_of(value: list[list[Any]]) -> dict[int, Any]:
    from ..analysis.stop_point import StopPoint

    return {
        int(limit): StopPoint(call, turn, _where_of(where), _cost_of(saved))  # type: ignore[arg-type]
        for limit, call, turn, where, saved in value
    }


def _session(stats: SessionStats) -> dict[str, Any]:
    out = _session_fields(stats)
    if stats.stops is not None:  # replay --outcomes only: other partials are as before
        out["stops"] = _stops(stats.stops)
    return out


def _session_fields(stats: SessionStats) -> dict[str, Any]:
    longest, alt, same = stats.longest, stats.longest_alternation, stats.longest_same_tool
    waste = stats.waste
    return {
        "file": stats.file,
        "session": stats.session,
        "calls": stats.calls,
        "denied": stats.denied,
        "duplicates": stats.duplicates,
        "unparsedArgs": stats.unparsed_args,
        "longest": None
        if longest is None
        else [longest.tool, longest.hash_prefix, longest.length, _where(longest.start)],
        "alternation": None
        if alt is None
        else [list(alt.tools), list(alt.hash_prefixes), alt.length, _where(alt.start)],
        "sameTool": None if same is None else [same.tool, same.length, _where(same.start)],
        "waste": [waste.calls, waste.unknown_calls, waste.partial_turns, _cost(waste.cost)],
        "spent": _cost(stats.spent),
        "timeline": None
        if stats.timeline is None
        else [
            [c.tool, c.hash_prefix, c.count, c.verdict, _where(c.where), c.waste, c.turn]
            for c in stats.timeline
        ],
    }


def _session_of(value: dict[str, Any]) -> SessionStats:
    stats = SessionStats(value["file"], value["session"])
    stats.calls, stats.denied = value["calls"], value["denied"]
    stats.duplicates, stats.unparsed_args = value["duplicates"], value["unparsedArgs"]
    if value["longest"] is not None:
        tool, prefix, length, start = value["longest"]
        stats.longest = Streak(tool, prefix, length, _where_of(start))  # type: ignore[arg-type]
    if value["alternation"] is not None:
        tools, prefixes, length, start = value["alternation"]
        stats.longest_alternation = Alternation(
            tuple(tools),  # type: ignore[arg-type]
            tuple(prefixes),  # type: ignore[arg-type]
            length,
            _where_of(start),  # type: ignore[arg-type]
        )
    if value["sameTool"] is not None:
        tool, length, start = value["sameTool"]
        stats.longest_same_tool = SameToolRun(tool, length, _where_of(start))  # type: ignore[arg-type]
    calls, unknown, partial, cost = value["waste"]
    stats.waste = Waste(calls, unknown, partial, _cost_of(cost))
    stats.spent = _cost_of(value["spent"])
    if value["timeline"] is not None:
        stats.timeline = [
            TimelineCall(tool, prefix, count, verdict, _where_of(where), waste, turn)  # type: ignore[arg-type]
            for tool, prefix, count, verdict, where, waste, turn in value["timeline"]
        ]
    if "stops" in value:
        stats.stops = _stops_of(value["stops"])
    return stats


def to_partial(report: Report, policy: str | None = None) -> dict[str, Any]:
    """``report`` (finished) as a partial document."""
    settings: dict[str, Any] = {
        "maxRepeats": report.max_repeats,
        "maxRepeatsSource": report.max_repeats_source,
        "cap": report.cap,
        "policy": policy,
    }
    if report.stop_after is not None:  # the sessions' stop points are kept (--outcomes)
        settings["stopAfter"] = report.stop_after
        settings["stopInARow"] = report.stop_in_a_row
        settings["stopAfterSource"] = report.stop_after_source
    return {
        "schema": SCHEMA,
        "settings": settings,
        "files": [
            [
                i.file,
                i.format,
                i.calls,
                i.denied,
                i.sessions,
                i.unreadable,
                i.error,
                i.size,
                i.opened,
                i.warning,
                i.part,
                i.zero,
            ]
            for i in report.files
        ],  # fmt: skip
        "sessions": [_session(stats) for stats in report.sessions],
        "denials": [
            [
                d.session,
                d.tool,
                d.hash_prefix,
                _where(d.at),
                _where(d.streak_start),
                d.streak_length,
                d.more,
                *(() if d.rule is None else (d.rule, d.limit)),  # a policy's other rules
            ]
            for d in report.denials
        ],  # fmt: skip
        "deniedStreaks": report.denied_streaks,
        "streakLengths": sorted(report.streak_lengths.items()),
        "counts": sorted(report.counts.items()),
        "firstAt": [[count, _where(where)] for count, where in sorted(report.first_at.items())],
        "errors": [[e.file, e.line, e.path, e.message] for e in report.errors],
        "skipped": [[s.file, s.reason, s.quiet] for s in report.skipped],
        "totals": [
            report.calls,
            report.denied,
            report.duplicates,
            report.unparsed_args,
            report.unreadable,
        ],
        **({"warned": report.warned} if report.warns else {}),  # a policy's warn_at only
        **(_ceiling(report) if report.ceiling_counts else {}),  # the progress mode only
    }


def _ceiling(report: Report) -> dict[str, Any]:
    """The progress mode's ceiling histogram (``Report.ceiling_counts``), for the
    ``progress_max`` sweep of a merged report."""
    return {
        "ceilingCounts": sorted(report.ceiling_counts.items()),
        "ceilingFirstAt": [
            [count, _where(where)] for count, where in sorted(report.ceiling_first_at.items())
        ],
        "ceilingSessions": sorted(report.ceiling_sessions.items()),
    }


def from_partial(doc: Any) -> tuple[Report, str | None]:
    """The report a partial document holds, and its policy file (None: the seed's rule).
    Raises PartialError (or KeyError, TypeError, ValueError for a damaged document)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise PartialError(f'not a loop-brake partial report (no "schema": "{SCHEMA}")')
    settings = doc["settings"]
    report = Report(settings["maxRepeats"], settings["maxRepeatsSource"], settings["cap"])
    report.stop_after = settings.get("stopAfter")
    report.stop_in_a_row = settings.get("stopInARow")
    report.stop_after_source = settings.get("stopAfterSource")
    report.files = [FileInfo(*fields) for fields in doc["files"]]
    report.sessions = [_session_of(value) for value in doc["sessions"]]
    report.denials = [
        Denial(s, t, h, _where_of(at), _where_of(start), length, more, *rule)  # type: ignore[arg-type]
        for s, t, h, at, start, length, more, *rule in doc["denials"]
    ]
    report.denied_streaks = doc["deniedStreaks"]
    report.streak_lengths = Counter({int(k): v for k, v in doc["streakLengths"]})
    report.counts = Counter({int(k): v for k, v in doc["counts"]})
    report.first_at = {int(k): _where_of(w) for k, w in doc["firstAt"]}  # type: ignore[misc]
    report.errors = [ReadError(*fields) for fields in doc["errors"]]
    report.skipped = [Skipped(*fields) for fields in doc["skipped"]]
    (
        report.calls,
        report.denied,
        report.duplicates,
        report.unparsed_args,
        report.unreadable,
    ) = doc["totals"]
    if "warned" in doc:
        report.warned, report.warns = doc["warned"], True
    if "ceilingCounts" in doc:
        report.ceiling_counts = Counter({int(k): v for k, v in doc["ceilingCounts"]})
        report.ceiling_first_at = {int(k): _where_of(w) for k, w in doc["ceilingFirstAt"]}  # type: ignore[misc]
        report.ceiling_sessions = Counter({int(k): v for k, v in doc["ceilingSessions"]})
    return report, settings["policy"]


def write_partial(report: Report, path: str, policy: str | None = None) -> None:
    """The partial document of ``report`` to ``path``, replaced atomically."""
    data = json.dumps(to_partial(report, policy), ensure_ascii=True, separators=(",", ":"))
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="ascii") as out:
            out.write(data)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def read_partial(path: str) -> tuple[Report, str | None]:
    """The report in the partial file ``path``; PartialError says what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as stream:
            doc = json.load(stream)
    except OSError as exc:
        raise PartialError(f"cannot open: {exc.strerror or exc.__class__.__name__}") from None
    except ValueError as exc:
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "its text"
        raise PartialError(f"not valid JSON at {where}") from None
    try:
        return from_partial(doc)
    except PartialError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise PartialError(
            f"a damaged partial report ({exc.__class__.__name__}): write it again with "
            "replay --partial"
        ) from None
