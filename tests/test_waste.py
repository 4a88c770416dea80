"""analysis/waste.py and the timeline: what the calls after a streak's first denial cost.

Records are fed through the real brake (pipeline.judge) into the Analyzer, as
replay does; the rule under test is the one docs/replay.md states: a call after
its streak's first denial is wasted, a turn all of whose calls are wasted counts
once with all its tokens, a partly wasted turn is counted without its tokens,
and a wasted call with no usage before it has an unknown cost.
"""

from __future__ import annotations

import pickle

from loop_brake_cli.analysis import Analyzer, Report, merge
from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import ToolCall, Usage
from loop_brake_cli.readers.pipeline import judge


def analyse(records, max_repeats: int = 3, timeline: bool = False) -> Report:
    analyzer = Analyzer(max_repeats, "test", 10, timeline)
    analyzer.start_file("f.jsonl")
    for record, verdict in judge(records, LoopBrake(max_repeats), None):
        analyzer.add(record, verdict)
    return analyzer.finish()


def call(tool: str = "edit", arg: object = "same", session: str = "s", call_id=None) -> ToolCall:
    return ToolCall(tool, {"a": arg}, session, call_id)


def usage(n: int, session: str = "s", model: str | None = "m", **kinds: int) -> Usage:
    figures = {"input_tokens": 100 * n, "output_tokens": n} | kinds
    return Usage(session, f"turn-{n}", model, **figures)


def test_one_turn_per_call_all_wasted_after_the_first_denial():
    records = []
    for n in range(1, 31):
        records += [usage(n), call()]
    (stats,) = analyse(records).sessions
    waste = stats.waste
    # denied at the 3rd identical call: calls 4..30 are the 27 tries after it
    assert (waste.calls, waste.unknown_calls, waste.partial_turns) == (27, 0, 0)
    assert waste.cost.turns == 27
    tokens = waste.cost.tokens()
    assert tokens.input == 100 * sum(range(4, 31)) and tokens.output == sum(range(4, 31))
    assert tokens.cache_read is None and tokens.reasoning is None  # not recorded, never 0
    assert stats.spent.turns == 30 and stats.spent.tokens().output == sum(range(1, 31))


def test_a_turn_that_emitted_several_wasted_calls_counts_once():
    records = [usage(1), call(), call(), call(), usage(2), call(), call(), call()]
    (stats,) = analyse(records).sessions
    assert stats.waste.calls == 3  # the 4th, 5th and 6th identical calls
    # turn 1 produced calls 1-3 (none wasted); turn 2 calls 4-6 (all wasted): once
    assert stats.waste.cost.turns == 1 and stats.waste.cost.tokens().input == 200


def test_a_partly_wasted_turn_is_counted_without_its_tokens():
    records = [usage(1), call(), call(), call(), call(), call("read", 1), usage(2), call("x")]
    (stats,) = analyse(records).sessions
    assert stats.waste.calls == 1
    assert stats.waste.partial_turns == 1
    assert stats.waste.cost.turns == 0 and not stats.waste.cost.tokens().recorded


def test_wasted_calls_with_no_usage_before_them_have_unknown_cost():
    records = [call(), call(), call(), call(), call(), usage(6), call()]
    (stats,) = analyse(records).sessions
    assert stats.waste.calls == 3
    assert stats.waste.unknown_calls == 2
    assert stats.waste.cost.turns == 1 and stats.waste.cost.tokens().input == 600


def test_a_format_without_usage_has_no_turns_and_no_tokens():
    (stats,) = analyse([call()] * 5).sessions
    assert stats.waste.calls == 2 and stats.waste.unknown_calls == 2
    assert stats.spent.turns == 0 and stats.waste.cost.tokens().input is None


def test_usage_before_a_sessions_first_call_is_kept_and_turns_without_calls_are_spent():
    records = [usage(1), usage(2), call(), call(session="t"), usage(3, session="t"), call("x")]
    stats = {s.session: s for s in analyse(records).sessions}
    assert stats["s"].spent.turns == 2  # turn 1 produced no call; turn 2 the first call
    assert stats["s"].spent.tokens().input == 300
    assert stats["t"].spent.turns == 1
    assert len(stats) == 2  # usage alone never makes a session


def test_a_turn_figures_are_read_when_it_closes():
    first = usage(1)
    records = [first, call(), call(), call()]
    later = [usage(2), call(), call()]
    analyzer = Analyzer(3, "test", 10)
    analyzer.start_file("f")
    brake = LoopBrake(3)
    for record, verdict in judge(records, brake):
        analyzer.add(record, verdict)
    first.output_tokens = 50  # an adapter raises the figures of a turn it has yielded
    for record, verdict in judge(later, brake):
        analyzer.add(record, verdict)
    (stats,) = analyzer.finish().sessions
    assert stats.spent.tokens().output == 52


def test_duplicates_are_not_wasted_and_models_are_kept_apart():
    records = [
        usage(1, model="a"),
        call(call_id=1),
        usage(2, model="a"),
        call(call_id=2),
        usage(3, model="b"),
        call(call_id=3),
        usage(4, model="b"),
        call(call_id=4),
        call(call_id=4),  # the same call logged twice
    ]
    (stats,) = analyse(records).sessions
    assert stats.waste.calls == 1 and stats.waste.cost.turns == 1
    assert {m: c.turns for m, c in stats.waste.cost.by_model.items()} == {"b": 1}
    assert {m: c.turns for m, c in stats.spent.by_model.items()} == {"a": 2, "b": 2}


def test_timeline_only_when_asked_and_marks_waste_and_turns_not_duplicates():
    records = [call("read", 1), usage(1), call(call_id=1), call(call_id=2), call(call_id=3)]
    records += [call(call_id=3), usage(2), call(call_id=5)]
    assert analyse(records).sessions[0].timeline is None
    (stats,) = analyse(records, timeline=True).sessions
    timeline = stats.timeline
    # call_id=3 twice: the same call logged again, one call (no record of its own)
    assert [(c.tool, c.count, c.verdict, c.waste, c.turn) for c in timeline] == [
        ("read", 1, "pass", False, None),
        ("edit", 1, "pass", False, 1),
        ("edit", 2, "pass", False, 1),
        ("edit", 3, "deny", False, 1),
        ("edit", 4, "deny", True, 2),
    ]
    assert [c.where.call for c in timeline] == [1, 2, 3, 4, 5]
    assert len({c.hash_prefix for c in timeline}) == 2
    assert timeline[-1].to_json()["at"]["call"] == 5


def test_reports_with_waste_and_timelines_pickle_and_merge():
    one = analyse([usage(1), call(), call(), call(), usage(2), call()], timeline=True)
    two = analyse([call()] * 4)
    merged = merge([pickle.loads(pickle.dumps(one)), pickle.loads(pickle.dumps(two))])
    assert [s.waste.calls for s in merged.sessions] == [1, 1]
    assert merged.sessions[0].waste.cost.turns == 1 and len(merged.sessions[0].timeline) == 4
    assert merged.sessions[1].timeline is None
