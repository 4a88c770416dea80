"""The analyzer against a brute-force reference, on random short replays.

``Analyzer`` counts online, in constant state per session, and reuses its live
objects; the reference here holds every call and computes each figure straight
from its definition (report.py, waste.py): streaks are maximal runs of identical
calls, an alternation a maximal run where each call equals the one two back and
differs from the last, a same-tool run a maximal run of one tool whose arguments
change at every call, the longest of each the first to reach its length; call-id
duplicates (the id of the session's last counted call) are the same call logged
again: counted as duplicates and nowhere else (not as calls, denials or in the
histogram), and they take no ordinal. Sessions, files (sessions continue across
them), duplicates and usage records (the waste figures) are all drawn at random.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.analysis import Analyzer
from loop_brake_cli.analysis.report import HISTOGRAM_TOP, Report, Where
from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.records import ToolCall, Usage
from loop_brake_cli.readers.pipeline import judge

CALL = st.tuples(
    st.just("call"),
    st.sampled_from(["s1", "s2", "s3"]),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 2),  # the argument: with the tool, which call it is
    st.one_of(st.none(), st.sampled_from(["id1", "id2"])),
)
USAGE = st.tuples(st.just("usage"), st.sampled_from(["s1", "s2", "s3"]), st.integers(1, 9))
NEXT_FILE = st.just(("file",))
# A call repeated, for streaks longer than the histogram's cap (at least HISTOGRAM_TOP),
# each time with a call id of its own or none (the same id twice: a duplicate), maybe
# with a model turn beginning inside it (a turn of wasted calls only)
REPEAT_IDS = st.lists(st.sampled_from([None, None, None, "id1", "id2"]), min_size=2, max_size=16)
BURST = st.tuples(CALL, REPEAT_IDS, st.integers(0, 3), st.booleans()).map(
    lambda b: (
        [b[0][:4] + (call_id,) for call_id in b[1]]
        + ([("usage", b[0][1], 7)] + [b[0]] * b[2] if b[3] else [])
    )
)
# Two calls of one session taking turns (an alternation, or a same-tool run)
TAKING_TURNS = st.tuples(CALL, CALL, st.integers(1, 4)).map(
    lambda t: [t[0], t[1][:1] + t[0][1:2] + t[1][2:]] * t[2]
)
EVENTS = st.lists(
    st.one_of(CALL, CALL, CALL, CALL, CALL, USAGE, NEXT_FILE).map(lambda event: [event])
    | BURST
    | TAKING_TURNS,
    max_size=40,
).map(lambda parts: [event for part in parts for event in part])


def analyse(events: list[tuple[Any, ...]], max_repeats: int, cap: int) -> Report:
    """The analyzer as replay drives it (sessions continued across files)."""
    brake = LoopBrake(max_repeats, policy=None)
    analyzer = Analyzer(max_repeats, "test", cap)
    files = 0
    analyzer.start_file("f0")
    pending: list[Any] = []

    def flush() -> None:
        for record, verdict in judge(pending, brake):
            analyzer.add(record, verdict)
        pending.clear()

    for line, event in enumerate(events, 1):
        if event[0] == "file":
            flush()
            files += 1
            analyzer.start_file(f"f{files}")
        elif event[0] == "usage":
            pending.append(Usage(event[1], None, "m", event[2], line=line))
        else:
            _, session, tool, arg, call_id = event
            pending.append(ToolCall(tool, {"a": arg}, session, call_id, line))
    flush()
    return analyzer.finish()


def longest(runs: list[dict[str, Any]], least: int) -> dict[str, Any] | None:
    """The first run of the greatest length, if that length is at least ``least``."""
    best = None
    for run in runs:
        if run["length"] >= least and (best is None or run["length"] > best["length"]):
            best = run
    return best


def maximal_runs(seq: list[dict[str, Any]], joins: Any) -> list[tuple[int, int]]:
    """(first, last) of the maximal runs of calls where ``joins(before, call)`` holds
    for each call and the one before it."""
    runs, start = [], 0
    for i in range(1, len(seq) + 1):
        if i == len(seq) or not joins(seq[i - 1], seq[i]):
            runs.append((start, i - 1))
            start = i
    return runs


def reference(events: list[tuple[Any, ...]], max_repeats: int, cap: int) -> dict[str, Any]:
    """Every figure the analyzer reports, from the whole list of calls."""
    cap = max(cap, max_repeats, HISTOGRAM_TOP)  # the histogram's cap, as Report keeps it
    file, ordinal = "f0", 0
    counts: Counter[int] = Counter()
    totals = Counter(calls=0, denied=0, duplicates=0)
    first_at: dict[int, Where] = {}
    sessions: dict[str, dict[str, Any]] = {}  # in order of first call
    usages: dict[str, list[tuple[int, int]]] = {}  # session -> (calls before it, tokens)
    for line, event in enumerate(events, 1):
        if event[0] == "file":
            file, ordinal = f"f{int(file[1:]) + 1}", 0
            continue
        if event[0] == "usage":
            _, session, tokens = event
            before = len(sessions[session]["seq"]) if session in sessions else 0
            usages.setdefault(session, []).append((before, tokens))
            continue
        _, session, tool, arg, call_id = event
        stats = sessions.setdefault(
            session, {"file": file, "seq": [], "calls": 0, "dups": 0, "denied": 0}
        )
        seq = stats["seq"]
        last = seq[-1] if seq else None
        if last is not None and call_id is not None and call_id == last["call_id"]:
            stats["dups"] += 1  # the same call logged again: nothing else
            totals["duplicates"] += 1
            continue
        ordinal += 1
        where = Where(file, line, None, ordinal)
        stats["calls"] += 1
        totals["calls"] += 1
        digest = call_digest(tool, {"a": arg})
        count = last["count"] + 1 if last is not None and last["digest"] == digest else 1
        seq.append(
            {
                "tool": tool,
                "digest": digest,
                "prefix": digest[:6].hex(),
                "call_id": call_id,
                "count": count,
                "where": where,
            }
        )
        if count <= cap:
            first_at.setdefault(count, where)
        counts[min(count, cap + 1)] += 1
        totals["denied"] += count >= max_repeats
        stats["denied"] += count >= max_repeats

    lengths: Counter[int] = Counter()
    denials = []
    out_sessions = []
    for session, stats in sessions.items():
        seq = stats["seq"]
        streaks = []
        for first, last in maximal_runs(
            seq, lambda before, call: before["digest"] == call["digest"]
        ):
            length = last - first + 1
            lengths[length] += 1
            start = seq[first]
            streaks.append(
                {
                    "tool": start["tool"],
                    "hashPrefix": start["prefix"],
                    "length": length,
                    "start": start["where"].to_json(),
                }
            )
            if length >= max_repeats:
                at = seq[first + max_repeats - 1]
                denials.append(
                    (
                        at["where"].line,  # in input order: when the denied call was read
                        {
                            "session": session,
                            "tool": start["tool"],
                            "hashPrefix": start["prefix"],
                            "at": at["where"].to_json(),
                            "streakStart": start["where"].to_json(),
                            "streakLength": length,
                            "moreAfterDenial": length - max_repeats,
                        },
                    )
                )
        same = [
            {"tool": seq[first]["tool"], "length": last - first + 1, "start": seq[first]["where"]}
            for first, last in maximal_runs(
                seq,
                lambda before, call: (
                    before["tool"] == call["tool"] and before["prefix"] != call["prefix"]
                ),
            )
        ]
        best_same = longest(same, 2)
        if best_same is not None:
            best_same = {**best_same, "start": best_same["start"].to_json()}
        out_sessions.append(
            {
                "file": stats["file"],
                "session": session,
                "calls": stats["calls"],
                "denied": stats["denied"],
                "duplicates": stats["dups"],
                "unparsedArgs": 0,
                "longestStreak": longest(streaks, 1),
                "longestAlternation": longest(alternations_of(seq), 3),
                "longestSameToolRun": best_same,
                "waste": waste(seq, usages.get(session, []), max_repeats),
            }
        )
    return {
        "sessions": out_sessions,
        "denials": [denial for _, denial in sorted(denials, key=lambda pair: pair[0])],
        "deniedStreaks": len(denials),
        "counts": dict(counts),
        "streakLengths": dict(lengths),
        "firstAt": {count: where.to_json() for count, where in first_at.items()},
        "totals": dict(totals),
    }


def alternations_of(seq: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every maximal alternation (two calls at least), in order of its start.

    The alternation ending at call i starts at the earliest j < i such that every
    call of j..i differs from the one before it and, from j + 2 on, equals the one
    two back; it is maximal when the alternation ending at i + 1 starts elsewhere."""
    prefixes = [call["prefix"] for call in seq]

    def start_of(i: int) -> int | None:
        if i < 1 or prefixes[i] == prefixes[i - 1]:
            return None
        j = i - 1
        while j >= 1 and prefixes[j] != prefixes[j - 1] and prefixes[j + 1] == prefixes[j - 1]:
            j -= 1
        return j

    out = []
    for i in range(1, len(seq)):
        j = start_of(i)
        if j is not None and (i + 1 == len(seq) or start_of(i + 1) != j):
            out.append(
                {
                    "tools": [seq[j]["tool"], seq[j + 1]["tool"]],
                    "hashPrefixes": [prefixes[j], prefixes[j + 1]],
                    "length": i - j + 1,
                    "start": seq[j]["where"].to_json(),
                }
            )
    return out


def waste(seq: list[dict[str, Any]], usages: list[tuple[int, int]], max_repeats: int) -> dict:
    """The calls after their streak's first denial, and the turns that produced them."""
    wasted = [call["count"] > max_repeats for call in seq]
    figures = Counter(calls=sum(wasted), turns=len(usages), input=sum(t for _, t in usages))
    figures["unknown"] = sum(wasted[: usages[0][0]]) if usages else sum(wasted)
    for k, (before, tokens) in enumerate(usages):
        end = usages[k + 1][0] if k + 1 < len(usages) else len(seq)
        produced = wasted[before:end]
        if produced and all(produced):
            figures["wastedTurns"] += 1
            figures["wastedInput"] += tokens
        elif any(produced):
            figures["partial"] += 1
    return +figures


def observed(report: Report) -> dict[str, Any]:
    """The same figures, read from the analyzer's report."""

    def session(stats: Any) -> dict[str, Any]:
        waste, spent = stats.waste, stats.spent
        figures = Counter(
            calls=waste.calls,
            unknown=waste.unknown_calls,
            partial=waste.partial_turns,
            wastedTurns=waste.cost.turns,
            wastedInput=waste.cost.tokens().input or 0,
            turns=spent.turns,
            input=spent.tokens().input or 0,
        )
        return {**stats.to_json(), "waste": +figures}

    return {
        "sessions": [session(stats) for stats in report.sessions],
        "denials": [denial.to_json() for denial in report.denials],
        "deniedStreaks": report.denied_streaks,
        "counts": dict(report.counts),
        "streakLengths": dict(report.streak_lengths),
        "firstAt": {count: where.to_json() for count, where in report.first_at.items()},
        "totals": {
            "calls": report.calls,
            "denied": report.denied,
            "duplicates": report.duplicates,
        },
    }


@settings(max_examples=600, deadline=None)
@given(EVENTS, st.integers(1, 4), st.integers(1, 12))
def test_the_analyzer_equals_the_brute_force_reference(events, max_repeats, cap):
    assert observed(analyse(events, max_repeats, cap)) == reference(events, max_repeats, cap)


def test_the_reference_sees_every_pattern():
    """A fixed replay where each pattern is there, so the comparison above is not vacuous."""
    calls = [("a", 0), ("b", 0), ("a", 0), ("b", 0), ("a", 0)]  # an alternation of 5
    calls += [("c", 1)] * 4  # a streak of 4: a denial and one wasted call
    calls += [("c", 0), ("c", 2), ("c", 1)]  # a same-tool run of 4 (from the streak's end)
    events = [("usage", "s1", 5)] + [("call", "s1", tool, arg, None) for tool, arg in calls]
    expected = reference(events, 3, 5)
    (stats,) = expected["sessions"]
    assert stats["longestAlternation"]["length"] == 5
    assert stats["longestStreak"]["length"] == 4
    assert stats["longestSameToolRun"]["length"] == 4
    assert expected["deniedStreaks"] == 1 and stats["waste"]["calls"] == 1
    assert observed(analyse(events, 3, 5)) == expected
