"""The progress mode's rule (``streak.result_step`` with ``policy_step``) and its digest.

Checked call by call against a reference model written from the rule as the issue
states it (a list of the streak's calls and their results, restarted when the
latest call's result differs from the last one seen earlier in the streak), not
from the implementation's slot fields.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import JSONInputError
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.core.progress import DEFAULT_IGNORE, digest_of_hex, normalise, result_digest
from loop_brake_cli.core.streak import policy_step, result_step

PROGRESS = "progress = true\n"
RULES = """\
progress = true
[[tools]]
match = "quiet"
progress = false
[[tools]]
match = "poll"
max_repeats = 4
"""


def policy(text: str = PROGRESS):
    return parse_policy(text, "p.toml")[0]


def brake(text: str = PROGRESS, max_repeats: int = 3) -> LoopBrake:
    return LoopBrake(max_repeats, policy=policy(text))


def run(b: LoopBrake, results: list[str | None], tool: str = "poll") -> list[tuple[int, bool]]:
    """One call per entry, each followed by its result (None: no result)."""
    out = []
    for index, result in enumerate(results):
        verdict = b.check(tool, {}, session_id="s", call_id=f"c{index}")
        out.append((verdict.count, verdict.denied))
        if result is not None:
            b.observe_result("s", f"c{index}", result)
    return out


def test_a_changing_result_restarts_the_streak_and_the_next_call_is_two() -> None:
    assert run(brake(), ["a", "b", "c", "d", "e"]) == [(1, False), (2, False)] + [(2, False)] * 3


def test_only_a_progress_denial_says_identical_results() -> None:
    """docs/policies.md: every line of a tool in the progress mode carries
    ``"progress": true``; ``"identicalResults"`` is on a streak denial only."""
    from loop_brake_cli.core.records import ToolCall, verdict_record

    b = brake()
    lines = []
    for index, result in enumerate(["a", "b", "b", "b"]):
        verdict = b.check("poll", {}, session_id="s", call_id=f"c{index}")
        lines.append(verdict_record(ToolCall("poll", {}, "s", f"c{index}"), verdict))
        b.observe_result("s", f"c{index}", result)
    assert [line["verdict"] for line in lines] == ["pass", "pass", "pass", "deny"]
    assert all(line["progress"] is True for line in lines)
    assert ["identicalResults" in line for line in lines] == [False, False, False, True]
    assert lines[-1]["identicalResults"] == 2


def test_a_result_that_stopped_changing_is_denied_at_the_limit() -> None:
    got = run(brake(), ["a", "b", "b", "b", "b"])
    assert got == [(1, False), (2, False), (2, False), (3, True), (4, True)]


def test_no_result_at_all_is_the_seeds_counting() -> None:
    assert run(brake(), [None] * 4) == [(1, False), (2, False), (3, True), (4, True)]


def test_a_missing_result_compares_with_the_last_one_seen_in_the_streak() -> None:
    # c1 reports nothing; c2's result differs from c0's, the last one seen: a restart
    got = run(brake(max_repeats=5), ["a", None, "b", None, None])
    assert got == [(1, False), (2, False), (3, False), (2, False), (3, False)]


def test_the_result_of_a_denied_call_is_not_progress() -> None:
    # a denied call did not run: what came back is the denial (its text counts up)
    got = run(brake(), ["a", "a", "denied, count 3", "denied, count 4", "x"])
    assert got == [(1, False), (2, False), (3, True), (4, True), (5, True)]


def test_the_denial_says_progress_and_how_many_results_were_identical() -> None:
    b = brake()
    run(b, ["same", "same"])
    verdict = b.check("poll", {}, session_id="s", call_id="c9")
    assert verdict.denied and verdict.rule == "streak" and verdict.progress
    assert verdict.identical_results == 2
    assert "and the last 2 results identical" in verdict.message
    assert verdict.message.startswith('loop brake: tool "poll" called 3 times in a row')


@pytest.mark.parametrize(
    ("results", "identical", "said"),
    [
        (["a", "b", "b"], 2, "the last 2 results identical"),  # c1 restarted it: c1, c2
        (["a", "b", None], 1, "1 result reported"),  # c2 reported nothing: c1 alone
        (["a", "b", "c", "c"], 2, "the last 2 results identical"),  # restarted twice
        (["a", "a"], 2, "the last 2 results identical"),  # no restart: c0 and c1
    ],
)
def test_a_denial_after_a_restart_counts_the_results_since_it(results, identical, said) -> None:
    """Issue 42: the identical results a denial names are those of its streak since the
    last restart (the restarting call's result is the first), not one more or less."""
    b = brake()
    run(b, results)
    verdict = b.check("poll", {}, session_id="s", call_id="last")
    assert verdict.denied and verdict.count == 3
    assert verdict.identical_results == identical
    assert f"and {said} (call" in verdict.message


def test_the_rule_of_the_latest_calls_tool_decides() -> None:
    b = brake(RULES)
    assert run(b, ["a", "b", "c"], tool="quiet") == [(1, False), (2, False), (3, True)]
    b = brake(RULES)  # poll: progress (global) with its own limit 4
    assert run(b, ["a", "b", "c", "c", "c", "c"])[-1] == (4, True)


def test_without_progress_results_change_nothing() -> None:
    b = LoopBrake(3, policy=policy('[[tools]]\nmatch = "poll"\nmax_repeats = 3\n'))
    assert not b.progress
    got = run(b, ["a", "b", "c", "d"])
    assert got == [(1, False), (2, False), (3, True), (4, True)]
    assert b.observe_result("s", "c3", "x") is False


def test_results_pair_by_call_id_else_with_the_latest_call() -> None:
    b = brake()
    assert b.observe_result("s", None, "x") is False  # no call in the session yet
    b.check("poll", {}, session_id="s", call_id="c0")
    assert b.observe_result("s", "other", "x") is False  # not the latest call
    assert b.observe_result("t", "c0", "x") is False  # another session
    assert b.observe_result("s", "c0", "x") is True
    assert b.observe_result("s", "c0", "x") is False  # its call ended with the first
    assert b.observe_result("s", None, "x") is True  # no id: the latest call


def test_a_duplicate_call_keeps_the_counted_calls_verdict_and_its_result_ends_it() -> None:
    """A duplicate (the call seen twice before it ran) gets the counted call's verdict;
    its result restarts the streak and ends the call, so the id counts again, as 2."""
    b = brake(max_repeats=4)
    run(b, ["a", "a"])
    counted = b.check("poll", {}, session_id="s", call_id="c2")
    again = b.check("poll", {}, session_id="s", call_id="c2")
    assert again.duplicate and again.count == counted.count == 3
    b.observe_result("s", "c2", "b")  # changed: the next call restarts
    reused = b.check("poll", {}, session_id="s", call_id="c2")
    assert not reused.duplicate and reused.count == 2
    assert b.check("poll", {}, session_id="s", call_id="c3").count == 3


def test_result_step_is_pure() -> None:
    pol = policy()
    state, _ = policy_step(None, "poll", b"d" * 32, "c0", 3, pol)
    before = state
    after, paired = result_step(state, "c0", b"r" * 32)
    assert paired and after is not state and state == before
    assert after.slot.call_id is None  # the paired call ended
    assert result_step(after, None, b"r" * 32) == (after, True)  # the same result again
    assert result_step(after, "c0", b"r" * 32) == (after, False)  # its call ended
    assert result_step(None, "c0", b"r" * 32) == (None, False)


def test_a_digest_given_by_the_host_equals_the_one_computed() -> None:
    b1, b2 = brake(), brake()
    for index, result in enumerate(["a", "b", "b"]):
        b1.check("poll", {}, session_id="s", call_id=index)
        b2.check("poll", {}, session_id="s", call_id=index)
        b1.observe_result("s", index, result)
        b2.observe_result("s", index, digest=result_digest(result))
    assert b1.check("poll", {}, session_id="s") == b2.check("poll", {}, session_id="s")


def test_the_default_patterns_drop_codex_noise_and_keep_the_exit() -> None:
    first = "Chunk ID: 6b27f4\nWall time: 5.0021 seconds\nProcess running with session ID 98003"
    later = "Chunk ID: b7b023\nWall time: 5.0374 seconds\nProcess running with session ID 98003"
    done = "Chunk ID: 5b41db\nWall time: 0.0000 seconds\nProcess exited with code 0"
    assert result_digest(first) == result_digest(later)
    assert result_digest(first) != result_digest(done)
    assert result_digest(first, ()) != result_digest(later, ())  # without the defaults
    assert normalise("at 2026-05-11T11:43:08.120Z pid 4242 in 1316ms") == "at   in "


def test_an_mcp_result_is_its_content_and_is_error() -> None:
    base = {"content": [{"type": "text", "text": "ok"}]}
    assert result_digest({**base, "_meta": {"took": 3}}) == result_digest(base)
    assert result_digest({**base, "structuredContent": {"x": 1}}) == result_digest(base)
    assert result_digest({**base, "isError": True}) != result_digest(base)
    assert result_digest({**base, "other": 1}) != result_digest(base)  # not MCP-shaped


def test_a_string_and_a_json_value_differ_and_keys_are_canonical() -> None:
    assert result_digest("1") != result_digest(1)
    assert result_digest({"a": 1, "b": 2}) == result_digest({"b": 2, "a": 1})
    assert len(result_digest(None)) == 32


def test_a_value_that_is_not_json_raises_without_quoting_it() -> None:
    with pytest.raises(TypeError) as caught:
        result_digest({"secret-canary": object()})
    assert "secret-canary" not in str(caught.value)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(JSONInputError):
        result_digest(deep)


def test_digest_of_hex() -> None:
    assert digest_of_hex("ab" * 32) == bytes.fromhex("ab" * 32)
    assert digest_of_hex("AB" * 32) == bytes.fromhex("ab" * 32)
    assert digest_of_hex("ab" * 31) is None and digest_of_hex(7) is None


def test_policy_keys_are_checked_and_located() -> None:
    text = 'progress = 1\nresult_ignore = ["ok", "(unclosed"]\n[[tools]]\nmatch = "x"\n'
    text += "exempt = true\nprogress = true\n"
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.toml")
    messages = [str(problem) for problem in caught.value.problems]
    assert messages[0] == "p.toml:1:1: progress must be true or false, not 1"
    assert messages[1].startswith("p.toml:2:1: result_ignore[1] is not a valid regular")
    assert messages[2] == "p.toml:6:1: an exempt rule is never denied: drop progress"


def test_result_ignore_adds_to_or_replaces_the_defaults() -> None:
    added = policy('progress = true\nresult_ignore = ["^x$"]\n')
    assert added.result_ignore == (*DEFAULT_IGNORE, "^x$")
    replaced = policy('progress = true\nresult_ignore_defaults = false\nresult_ignore = ["^x$"]\n')
    assert replaced.result_ignore == ("^x$",)
    _, warnings = parse_policy(
        'result_ignore = ["^x$"]\n[[tools]]\nmatch="a"\nmax_repeats=2\n', "p"
    )
    assert [w.message for w in warnings] == ["result_ignore has no effect without progress = true"]


def test_a_progress_only_rule_and_a_progress_only_file_are_policies() -> None:
    assert not policy("progress = true\n").empty
    rule = policy('[[tools]]\nmatch = "poll"\nprogress = true\n')
    assert rule.uses_progress and rule.tools[0].max_repeats is None
    assert pickle.loads(pickle.dumps(rule)) == rule  # replay -j sends it to workers


# --- the rule against a reference model ------------------------------------------------


class Reference:
    """The rule as the issue states it, per session: the calls of the current streak with
    the result each reported (the last one if several; none for a denied call, which
    did not run), restarted when the latest call's result differs from the last
    result reported earlier in the streak."""

    def __init__(self, limits: dict[str, int], progress: dict[str, bool]) -> None:
        self.limits, self.progress = limits, progress
        self.sessions: dict[str, dict] = {}

    def call(self, session: str, tool: str, args: int, call_id: object) -> tuple[int, bool]:
        state = self.sessions.get(session)
        if state is not None and call_id is not None and call_id == state["id"]:
            return state["verdict"]
        streak = state["streak"] if state is not None else []
        if state is not None and state["key"] == (tool, args):
            if self.progress[tool] and len(streak) > 1 and streak[-1] is not None:
                earlier = [r for r in streak[:-1] if r is not None]
                if earlier and earlier[-1] != streak[-1]:
                    streak = streak[-1:]
            streak = streak + [None]
        else:
            streak = [None]
        # the results the streak's earlier calls reported (all identical, or it would
        # have restarted): what a denial says (identicalResults)
        identical = sum(r is not None for r in streak[:-1]) if self.progress[tool] else 0
        verdict = (len(streak), len(streak) >= self.limits[tool], identical)
        self.sessions[session] = {"key": (tool, args), "id": call_id, "streak": streak}
        self.sessions[session]["verdict"] = verdict
        return verdict

    def result(self, session: str, call_id: object, value: str) -> bool:
        state = self.sessions.get(session)
        if state is None or (call_id is not None and call_id != state["id"]):
            return False
        state["id"] = None  # a paired result ends its call: the id may count again
        if self.progress[state["key"][0]] and not state["verdict"][1]:
            state["streak"][-1] = value
        return True


CALL = st.tuples(
    st.just("call"),
    st.sampled_from(["s1"] * 5 + ["s2"]),
    st.sampled_from(["poll"] * 4 + ["quiet"]),
    st.sampled_from([0] * 7 + [1]),
    st.sampled_from(["fresh"] * 6 + ["none", "latest"]),
)
RESULT = st.tuples(
    st.just("result"),
    st.sampled_from(["s1"] * 5 + ["s2"]),
    st.sampled_from(["latest"] * 6 + ["none", "other"]),
    st.sampled_from(["a", "b", "c", "Chunk ID: 1\nx", "Chunk ID: 2\nx"]),
)
# mostly a call followed by its result: streaks of polls whose results change or not
EVENTS = st.lists(
    st.one_of(st.tuples(CALL, RESULT), st.tuples(CALL), st.tuples(RESULT)), max_size=40
).map(lambda steps: [event for step in steps for event in step])


def _polls(*results: str) -> list[tuple]:
    """A poll in session s1 followed by its result, once per result."""
    steps = [(("call", "s1", "poll", 0, "fresh"), ("result", "s1", "latest", r)) for r in results]
    return [event for step in steps for event in step]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(events=EVENTS, global_progress=st.booleans())
@example(events=_polls("a", "b", "c", "c", "a"), global_progress=True)
def test_the_rule_equals_the_reference_model(events: list, global_progress: bool) -> None:
    text = f'progress = {str(global_progress).lower()}\n[[tools]]\nmatch = "poll"\n'
    text += "max_repeats = 4\nprogress = true\n"
    b = LoopBrake(3, policy=policy(text))
    model = Reference({"poll": 4, "quiet": 3}, {"poll": True, "quiet": global_progress})
    latest: dict[str, object] = {}
    for number, event in enumerate(events):
        if event[0] == "call":
            _, session, tool, args, kind = event
            call_id = {"fresh": f"c{number}", "none": None, "latest": latest.get(session)}[kind]
            verdict = b.check(tool, {"a": args}, session_id=session, call_id=call_id)
            got = (verdict.count, verdict.denied, verdict.identical_results)
            assert got == model.call(session, tool, args, call_id)
            if not verdict.duplicate:
                latest[session] = call_id
        else:
            _, session, kind, value = event
            call_id = {"latest": latest.get(session), "none": None, "other": "nope"}[kind]
            # the model compares raw values: the two Chunk ID results are one after cleaning
            expected = model.result(session, call_id, value.replace("2", "1"))
            assert b.observe_result(session, call_id, value) == expected
