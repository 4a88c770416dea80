"""analysis.py: streak statistics, denials, histogram, what the brake misses, the sweep.

The sweep is checked against the brake itself: for random call sequences (with
call-id duplicates and several sessions) the numbers computed from one replay
must equal what a brake at each limit really denies.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.analysis import (
    Analyzer,
    Report,
    histogram,
    merge,
    parse_sweep,
    replay_files,
    report_to_json,
    sweep,
)
from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import BadRecord, ToolCall
from loop_brake_cli.readers.pipeline import judge


def analyse(calls, max_repeats: int = 3, cap: int = 10, file: str = "f.jsonl") -> Report:
    brake = LoopBrake(max_repeats)
    analyzer = Analyzer(max_repeats, "test", cap)
    analyzer.start_file(file)
    for record, verdict in judge(calls, brake):
        analyzer.add(record, verdict)
    return analyzer.finish()


def call(tool: str, arg: object = 0, session: str = "s", line: int = 0, call_id=None) -> ToolCall:
    return ToolCall(tool, {"a": arg}, session, call_id, line or None)


def numbered(specs) -> list[ToolCall]:
    """Calls from (tool, arg[, session[, call_id]]) tuples, located at lines 1, 2, ..."""
    out = []
    for line, spec in enumerate(specs, 1):
        tool, arg, *rest = spec
        session = rest[0] if rest else "s"
        call_id = rest[1] if len(rest) > 1 else None
        out.append(call(tool, arg, session, line, call_id))
    return out


def test_a_thirty_call_streak_is_one_denial_with_27_more_attempts():
    calls = numbered([("read", 1), *[("edit", "same")] * 30, ("read", 2)])
    report = analyse(calls)
    (stats,) = report.sessions
    assert (stats.calls, stats.denied) == (32, 28)
    assert stats.longest.tool == "edit" and stats.longest.length == 30
    assert stats.longest.start.line == 2
    (denial,) = report.denials
    assert denial.at.line == 4 and denial.at.call == 4  # the third identical call
    assert (denial.streak_length, denial.more) == (30, 27)
    assert report.streak_lengths == {1: 2, 30: 1}
    assert dict(histogram(report))["10+"] == 1 and dict(histogram(report))["1"] == 2


def test_streak_that_stops_at_the_limit_has_no_more_attempts():
    report = analyse(numbered([("t", 1)] * 3))
    assert report.denials[0].more == 0


def test_sessions_keep_their_own_streaks():
    calls = numbered([("t", 1, "a"), ("t", 1, "b"), ("t", 1, "a"), ("t", 1, "b"), ("t", 1, "a")])
    report = analyse(calls)
    assert [(s.session, s.longest.length, s.denied) for s in report.sessions] == [
        ("a", 3, 1),
        ("b", 2, 0),
    ]


def test_duplicates_by_call_id_are_counted_once_and_not_as_streak_growth():
    calls = numbered([("t", 1, "s", "c1"), ("t", 1, "s", "c1"), ("t", 1, "s", "c2")])
    report = analyse(calls)
    (stats,) = report.sessions
    assert (stats.calls, stats.duplicates, stats.longest.length, stats.denied) == (2, 1, 2, 0)


def test_alternation_and_same_tool_runs_are_measured():
    calls = numbered(
        [("a", 1), ("b", 1), ("a", 1), ("b", 1), ("a", 1), ("a", 1)]  # A/B x5, then a repeat
        + [("grep", i) for i in range(4)]  # same tool, changing arguments
    )
    report = analyse(calls)
    (stats,) = report.sessions
    alt = stats.longest_alternation
    assert (alt.tools, alt.length, alt.start.line) == (("a", "b"), 5, 1)
    same = stats.longest_same_tool
    assert (same.tool, same.length, same.start.line) == ("grep", 4, 7)


def test_identical_repeats_are_not_a_same_tool_run_or_an_alternation():
    report = analyse(numbered([("t", 1)] * 5))
    (stats,) = report.sessions
    assert stats.longest_alternation is None and stats.longest_same_tool is None


def test_bad_records_are_located_and_counted():
    analyzer = Analyzer(3, "test", 10)
    analyzer.start_file("x.jsonl")
    analyzer.add(BadRecord("not valid JSON", 7), None)
    report = analyzer.finish()
    assert report.unreadable == 1
    assert str(report.errors[0]) == "x.jsonl:7: not valid JSON"


@pytest.mark.parametrize(
    ("text", "expected"), [("2..10", range(2, 11)), ("5", range(5, 6)), (" 1..1 ", range(1, 2))]
)
def test_parse_sweep(text, expected):
    assert parse_sweep(text) == expected


@pytest.mark.parametrize("text", ["0..3", "5..2", "a..b", "2..", "1..100000"])
def test_parse_sweep_rejects(text):
    with pytest.raises(ValueError):
        parse_sweep(text)


def test_sweep_on_a_streak_of_six():
    report = analyse(numbered([("poll", 0)] * 6 + [("x", 1)]), cap=10)
    rows = {row.max_repeats: row for row in sweep(report, range(2, 9))}
    assert [rows[m].denied_calls for m in range(2, 9)] == [5, 4, 3, 2, 1, 0, 0]
    assert rows[6].sessions_with_denial == 1 and rows[7].sessions_with_denial == 0
    assert rows[3].first_denial.line == 3 and rows[7].first_denial is None


def test_counts_above_the_cap_still_count_as_denied():
    report = analyse(numbered([("t", 0)] * 50), cap=10)
    assert report.cap == 10
    assert sweep(report, [3])[0].denied_calls == 48
    assert sweep(report, [10])[0].denied_calls == 41


SESSIONS = st.sampled_from(["s1", "s2"])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.integers(0, 1),
        SESSIONS,
        st.one_of(st.none(), st.sampled_from(["c1", "c2"])),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(CALLS)
def test_the_sweep_equals_the_brake_at_every_limit(specs):
    report = analyse(numbered(specs), max_repeats=3, cap=8)
    rows = sweep(report, range(1, 9))
    for row in rows:
        brake = LoopBrake(row.max_repeats)
        pairs = list(judge(numbered(specs), brake))
        denied = [(r, v) for r, v in pairs if v.denied and not v.duplicate]
        assert row.denied_calls == len(denied)
        assert row.sessions_with_denial == len({v.session_id for _, v in denied})
        first = next((r.line for r, v in denied if not v.duplicate), None)
        assert (row.first_denial.line if row.first_denial else None) == first
    # and the summary at the current limit agrees with a plain count
    current = next(row for row in rows if row.max_repeats == 3)
    assert current.denied_calls == report.denied
    assert sum(report.streak_lengths[k] * k for k in report.streak_lengths) == report.calls


def write_events(path, specs) -> None:
    import json

    with open(path, "w") as f:
        for tool, arg, session in specs:
            f.write(json.dumps({"tool": tool, "args": {"a": arg}, "sessionId": session}) + "\n")


def test_per_file_reports_merge_into_the_single_process_report(tmp_path):
    files = []
    for i, specs in enumerate(
        [[("t", 1, "s")] * 4, [("u", 2, "s"), ("u", 3, "s")] * 3, [("t", 1, "x")] * 7]
    ):
        path = tmp_path / f"{i}.jsonl"
        write_events(path, specs)
        files.append(str(path))
    kwargs = dict(max_repeats=3, max_repeats_source="test", cap=10, format_name=None)
    whole = replay_files(files, max_line_bytes=1 << 20, **kwargs)
    from loop_brake_cli.analysis import Job, replay_job

    parts = [
        pickle.loads(pickle.dumps(replay_job(Job(f, None, 3, "test", 10, 1 << 20)))) for f in files
    ]
    merged = merge(parts)
    assert report_to_json(merged, sweep(merged, range(2, 8))) == report_to_json(
        whole, sweep(whole, range(2, 8))
    )
    assert report_to_json(whole)["totals"]["denied"] == 2 + 5


def test_continue_sessions_lets_a_streak_cross_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_events(a, [("t", 1, "s")] * 2)
    write_events(b, [("t", 1, "s")] * 2)
    kwargs = dict(max_repeats=3, max_repeats_source="t", cap=10, format_name=None)
    separate = replay_files([str(a), str(b)], max_line_bytes=1 << 20, **kwargs)
    joined = replay_files(
        [str(a), str(b)], max_line_bytes=1 << 20, continue_sessions=True, **kwargs
    )
    assert (separate.denied, len(separate.sessions)) == (0, 2)
    assert (joined.denied, len(joined.sessions)) == (2, 1)
    assert joined.sessions[0].longest.length == 4


def test_a_huge_limit_costs_no_memory():
    report = analyse(numbered([("t", 0)] * 5), max_repeats=10**12, cap=10)
    assert len(report.counts) <= 5 and report.denied == 0
    assert sweep(report, [2])[0].denied_calls == 4
