"""``progress_max`` and ``[same_result]`` (issue 39 items 1 and 2) against a brute-force
reference written from docs/policies.md, on generated sequences of calls and results.

The reference keeps every counted call of the session with its first paired result
and recomputes each decision from that whole history: the progress mode's count (a
restart when a call's result differs from the last one seen earlier in the streak),
the identical calls in a row whatever their results (what ``progress_max`` is
compared with), and the run of identical results found by walking back over the
calls that ran. The implementation keeps a few counters (``streak.policy_step``,
``streak.result_step``): a break in them or in the rule order shows as a difference.
The messages, the located errors of ``check-config``, the stores' encoding of the new
state and the documented sample outputs are written out in full below."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest, call_hash
from loop_brake_cli.core.policy import DEFAULT_PROGRESS_MAX, PolicyError, parse_policy
from loop_brake_cli.core.progress import result_digest
from loop_brake_cli.core.streak import policy_step, result_step
from loop_brake_cli.stores.policy_rows import decode_policy_state, encode_policy_state

TOOLS = ["a", "b", "free"]  # "free": same_result = false (still in the progress mode)
CANARY = "canary-39b7-same-result-secret"
RESULTS: list[Any] = [
    {"content": [{"type": "text", "text": f"No results. {CANARY}\nWall time: 0.25 seconds"}]},
    {"content": [{"type": "text", "text": "3 results " + CANARY}], "isError": False},
    {"content": [{"type": "text", "text": "boom " + CANARY}], "isError": True},
    "plain text " + CANARY,
    # RESULTS[0] once the default patterns clean it (the Wall time line; isError false)
    {
        "content": [{"type": "text", "text": f"No results. {CANARY}\nWall time: 1.50 seconds"}],
        "isError": False,
    },
]


def policy_of(text: str) -> Any:
    return parse_policy(text, "policy.toml")[0]


class Entry:
    def __init__(self, tool: str, args: int) -> None:
        self.tool, self.args = tool, args
        self.denied = False
        self.same_denied = False  # denied by [same_result] (before a stop renamed it)
        self.result: bytes | None = None  # the digest of its first paired result


class Reference:
    """One session under ``progress = true``, ``progress_max`` and ``[same_result]``,
    each decision recomputed from the whole history."""

    def __init__(self, max_repeats: int, ceiling: int | None, after: int | None,
                 any_tool: bool, stop: int | None) -> None:  # fmt: skip
        self.max_repeats, self.ceiling, self.after = max_repeats, ceiling, after
        self.any_tool, self.stop = any_tool, stop
        self.history: list[Entry] = []
        self.last_id: Any = None
        self.last: dict | None = None

    def progress_count(self, run: list[Entry]) -> int:
        """The progress mode's count of the run's last call: a call whose result differs
        from the last one seen earlier in the streak restarts it (that call is 1)."""
        count, seen = 0, None
        for index in range(len(run)):
            if index:
                earlier = run[index - 1]
                result = None if earlier.denied else earlier.result
                if result is not None and seen is not None and result != seen:
                    count = 1
                if result is not None:
                    seen = result
            count += 1
        return count

    def same_results(self, tool: str) -> int:
        """The run of identical results the call of ``tool`` finds, walking back."""
        run, digest = 0, None
        for earlier in reversed(self.history[:-1]):
            if earlier.tool == "free":
                if self.any_tool:
                    continue  # not read: neither extends nor ends the run
                break  # another tool's call
            if not self.any_tool and earlier.tool != tool:
                break
            if earlier.same_denied and self.any_tool:
                break  # nothing the agent calls would end it: the denial did
            if earlier.denied:
                continue  # it did not run
            if earlier.result is None:
                break  # its result never came
            if digest is None:
                digest = earlier.result
            elif earlier.result != digest:
                break
            run += 1
        return run

    def call(self, tool: str, args: int, call_id: Any) -> dict:
        if call_id is not None and call_id == self.last_id and self.last is not None:
            return {**self.last, "duplicate": True}
        self.last_id = call_id
        entry = Entry(tool, args)
        self.history.append(entry)
        run: list[Entry] = []
        for earlier in reversed(self.history):
            if (earlier.tool, earlier.args) != (tool, args):
                break
            run.insert(0, earlier)
        identical = len(run)
        count = self.progress_count(run)
        out = {"count": count, "denied": count >= self.max_repeats, "rule": "streak"}
        out.update(limit=self.max_repeats, repeats=0)
        ceiling = self.ceiling
        if ceiling is None:
            ceiling = max(DEFAULT_PROGRESS_MAX, self.max_repeats)
        if not out["denied"] and identical >= ceiling:
            out.update(denied=True, rule="progress_max", limit=ceiling, repeats=identical)
        if not out["denied"] and self.after is not None and tool != "free":
            sames = self.same_results(tool)
            if sames >= self.after:
                out.update(denied=True, rule="same_result", limit=self.after, repeats=sames)
                entry.same_denied = True
        entry.denied = out["denied"]
        denials = 0
        while denials < len(self.history) and self.history[-denials - 1].denied:
            denials += 1
        out["denials"] = denials if out["denied"] else 0
        if out["denied"] and self.stop is not None and denials >= self.stop:
            out.update(rule="stop", limit=self.stop)
        out["duplicate"] = False
        self.last = out
        return out

    def result(self, call_id: Any, value: Any) -> None:
        if not self.history or call_id != self.last_id:
            return
        self.last_id = None  # a paired result ends its call: the id may count again
        latest = self.history[-1]
        if latest.result is None and not latest.denied:
            latest.result = result_digest(value)


def toml_of(ceiling: int | None, after: int | None, any_tool: bool, stop: int | None) -> str:
    text = "progress = true\n" + ("" if ceiling is None else f"progress_max = {ceiling}\n")
    text += '[[tools]]\nmatch = "free"\nsame_result = false\n'
    if after is not None:
        text += f"[same_result]\nafter = {after}\n" + ("any_tool = true\n" if any_tool else "")
    if stop is not None:
        text += f"[stop]\nafter_denials = {stop}\n"
    return text


STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("call"),
            st.sampled_from(TOOLS),
            st.sampled_from([0, 0, 0, 1, 2]),
            st.sampled_from(["fresh"] * 6 + ["none", "repeat"]),
        ),
        st.tuples(
            st.just("result"),
            st.sampled_from([0, 0, 0, 1, 2, 3, 4]),
            st.sampled_from(["own"] * 6 + ["other"]),
            st.just(""),
        ),
    ),
    max_size=45,
)


def _search_loop(times: int, tool: str = "a") -> list[tuple]:
    steps = [(("call", tool, n % 3, "fresh"), ("result", 0, "own", "")) for n in range(times)]
    return [step for pair in steps for step in pair]


def _poll(times: int) -> list[tuple]:
    steps = [(("call", "a", 0, "fresh"), ("result", n % 4, "own", "")) for n in range(times)]
    return [step for pair in steps for step in pair]


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    ceiling=st.one_of(st.none(), st.integers(2, 6)),
    after=st.one_of(st.none(), st.integers(1, 3)),
    any_tool=st.booleans(),
    stop=st.one_of(st.none(), st.integers(1, 3)),
    max_repeats=st.integers(2, 5),
    steps=STEPS,
)
@example(ceiling=None, after=3, any_tool=False, stop=None, max_repeats=9, steps=_search_loop(5))
@example(ceiling=None, after=2, any_tool=True, stop=None, max_repeats=9,
         steps=[s for t in "abab" for s in (("call", t, 1, "fresh"), ("result", 0, "own", ""))]
         + [("call", "free", 0, "fresh"), ("result", 1, "own", ""), ("call", "b", 2, "fresh")]
         + [("call", "a", 2, "fresh")])  # fmt: skip
@example(ceiling=None, after=2, any_tool=True, stop=None, max_repeats=9,
         steps=[("call", "a", 0, "fresh"), ("result", 0, "own", ""), ("call", "free", 0, "fresh"),
                ("result", 1, "own", ""), ("call", "b", 0, "fresh"), ("result", 0, "own", ""),
                ("call", "a", 1, "fresh")])  # fmt: skip  # the free call is invisible
@example(ceiling=5, after=None, any_tool=False, stop=None, max_repeats=3, steps=_poll(8))
@example(ceiling=None, after=None, any_tool=False, stop=2, max_repeats=3, steps=_poll(34))
@example(ceiling=4, after=None, any_tool=False, stop=None, max_repeats=5,
         steps=_poll(3) + [("call", "a", 0, "repeat"), ("call", "a", 0, "fresh")])  # fmt: skip
def test_progress_max_and_same_result_equal_the_brute_force_reference(
    ceiling: int | None,
    after: int | None,
    any_tool: bool,
    stop: int | None,
    max_repeats: int,
    steps: list[tuple],
) -> None:
    policy = policy_of(toml_of(ceiling, after, any_tool, stop))
    brake = LoopBrake(max_repeats, policy=policy)
    model = Reference(max_repeats, ceiling, after, any_tool, stop)
    latest: Any = None
    for number, (kind, first, second, third) in enumerate(steps):
        if kind == "result":
            call_id = {"own": latest, "other": "elsewhere"}[second]
            if call_id is None:
                continue  # a result without an id pairs again: the reference keeps the first
            brake.observe_result("s", call_id, RESULTS[first])
            model.result(call_id, RESULTS[first])
            continue
        call_id = {"fresh": f"c{number}", "none": None, "repeat": latest}[third]
        verdict = brake.check(first, {"x": second}, session_id="s", call_id=call_id)
        expected = model.call(first, second, call_id)
        if not verdict.duplicate:
            latest = call_id
        got = {
            "count": verdict.count,
            "denied": verdict.denied,
            "rule": verdict.rule,
            "limit": verdict.limit,
            "repeats": verdict.cycle_repeats,
            "denials": verdict.denials if verdict.denied else 0,
            "duplicate": verdict.duplicate,
        }
        assert got == {key: expected[key] for key in got}, (number, steps[: number + 1])
        assert CANARY not in verdict.message


# -- written out --------------------------------------------------------------------------

NO_RESULTS = RESULTS[0]


_numbers = itertools.count()


def _searches(brake: LoopBrake, tool: str, times: int, result: Any = NO_RESULTS) -> list:
    """``times`` calls of ``tool``, each with new arguments, each followed by ``result``."""
    out = []
    for _ in range(times):
        n = next(_numbers)
        verdict = brake.check(tool, {"q": f"query {n} {CANARY}"}, session_id="s", call_id=f"q{n}")
        out.append(verdict)
        if not verdict.denied:
            brake.observe_result("s", f"q{n}", result)
    return out


def test_the_fourth_of_four_rephrased_searches_with_one_result_is_denied() -> None:
    brake = LoopBrake(3, policy=policy_of("[same_result]\nafter = 3\n"))
    verdicts = _searches(brake, "search", 4)
    assert [v.denied for v in verdicts] == [False, False, False, True]
    denied = verdicts[3]
    prefix = denied.hash_prefix
    assert len(prefix) == 12 and prefix not in {v.hash_prefix for v in verdicts[:3]}
    assert (denied.rule, denied.limit, denied.cycle_repeats, denied.count) == (
        "same_result",
        3,
        3,
        1,
    )
    assert denied.message == (
        "loop brake: 3 calls in a row returned the same result, whatever their arguments "
        f'(limit 3); this call to tool "search" (call {prefix}\u2026) was denied before it '
        "ran.\nAsking again will not change the answer: use it, change the approach, or stop."
    )
    assert CANARY not in repr(denied)
    # one tool: the denial holds until another tool is called, which ends the run
    assert brake.check("search", {"q": "again"}, session_id="s").denied
    assert not brake.check("read", {}, session_id="s").denied
    assert not brake.check("search", {"q": "later"}, session_id="s").denied


def test_results_that_differ_or_never_come_end_the_run() -> None:
    brake = LoopBrake(3, policy=policy_of("[same_result]\nafter = 2\n"))
    _searches(brake, "search", 1)
    _searches(brake, "search", 1, RESULTS[1])  # another result: a new run of 1
    assert not _searches(brake, "search", 1)[0].denied  # run: RESULTS[1], then NO_RESULTS
    brake.check("search", {"q": "no result"}, session_id="s")  # its result never comes
    assert not _searches(brake, "search", 2)[1].denied  # the missing result ended the run
    assert _searches(brake, "search", 1)[0].rule == "same_result"


def test_result_ignore_applies_before_the_digest() -> None:
    """A Wall time line (a default pattern) does not make a result new."""
    brake = LoopBrake(9, policy=policy_of("[same_result]\nafter = 2\n"))
    _searches(brake, "search", 1, RESULTS[4])
    _searches(brake, "search", 1, NO_RESULTS)
    assert _searches(brake, "search", 1)[0].rule == "same_result"
    own = LoopBrake(
        9, policy=policy_of("result_ignore_defaults = false\n[same_result]\nafter = 2\n")
    )
    _searches(own, "search", 1, RESULTS[4])
    _searches(own, "search", 1, NO_RESULTS)
    assert not _searches(own, "search", 1)[0].denied


def test_one_tool_runs_are_per_tool_and_any_tool_runs_across_tools() -> None:
    one = LoopBrake(9, policy=policy_of("[same_result]\nafter = 2\n"))
    mixed = [_searches(one, tool, 1)[0] for tool in ("web", "docs", "web", "docs")]
    assert not any(v.denied for v in mixed)
    anyone = LoopBrake(9, policy=policy_of("[same_result]\nafter = 2\nany_tool = true\n"))
    mixed = [_searches(anyone, tool, 1)[0] for tool in ("web", "docs", "web", "docs", "x")]
    assert [v.denied for v in mixed] == [False, False, True, False, False]
    # the denial ended the run: the next call starts a new one (docs ran, then x ran)
    assert _searches(anyone, "y", 1)[0].rule == "same_result"


def test_a_tool_with_same_result_false_is_never_denied_and_not_read() -> None:
    text = '[same_result]\nafter = 2\nany_tool = true\n[[tools]]\nmatch = "status"\n'
    brake = LoopBrake(9, policy=policy_of(text + "same_result = false\n"))
    tools = ("status",) * 4 + ("web", "status", "web", "web")
    verdicts = [_searches(brake, tool, 1)[0] for tool in tools]
    assert [v.denied for v in verdicts] == [False] * 6 + [False, True]
    assert verdicts[-1].cycle_repeats == 2  # the status calls neither extended nor ended it


def test_progress_max_denies_identical_calls_whose_results_keep_changing() -> None:
    brake = LoopBrake(3, policy=policy_of("progress = true\nprogress_max = 5\n"))
    verdicts = []
    for n in range(7):
        verdict = brake.check("date", {"cmd": CANARY}, session_id="s", call_id=f"d{n}")
        verdicts.append(verdict)
        brake.observe_result("s", f"d{n}", f"09:14:{n:02d} is not the time {CANARY} {n}")
    assert [(v.count, v.denied) for v in verdicts[:4]] == [(1, False)] + [(2, False)] * 3
    assert [(v.denied, v.rule) for v in verdicts[4:]] == [(True, "progress_max")] + [
        (True, "streak")  # a denied call's result is not progress: the streak goes on
    ] * 2
    denied = verdicts[4]
    prefix = call_hash("date", {"cmd": CANARY})[:12]
    assert (denied.limit, denied.cycle_repeats) == (5, 5)
    assert denied.message == (
        'loop brake: tool "date" called 5 times in a row with identical arguments, its results '
        f"changing (call {prefix}\u2026, progress_max 5); the call was denied before it ran.\n"
        "A poll this long is not converging: change the approach, call a different tool, or stop."
    )
    assert CANARY not in repr(verdicts)
    assert not brake.check("other", {}, session_id="s").denied  # another call ends the run


def test_the_default_ceiling_and_a_rules_own() -> None:
    assert DEFAULT_PROGRESS_MAX == 30
    for text, limit, ceiling in [
        ("progress = true\n", 3, 30),
        ("progress = true\n", 40, 40),  # a higher limit raises the default ceiling
        ('progress = true\n[[tools]]\nmatch = "date"\nprogress_max = 4\n', 3, 4),
        ('progress = true\nprogress_max = 8\n[[tools]]\nmatch = "x"\nprogress_max = 4\n', 3, 8),
    ]:
        brake = LoopBrake(limit, policy=policy_of(text))
        for n in range(ceiling):
            verdict = brake.check("date", {}, session_id="s", call_id=f"d{n}")
            brake.observe_result("s", f"d{n}", n)
        assert verdict.rule == "progress_max" and verdict.limit == ceiling, (text, limit)
        assert verdict.cycle_repeats == ceiling


def test_without_the_progress_mode_progress_max_changes_nothing() -> None:
    text = 'progress = true\nprogress_max = 3\n[[tools]]\nmatch = "quiet"\nprogress = false\n'
    brake = LoopBrake(9, policy=policy_of(text))
    for n in range(5):
        verdict = brake.check("quiet", {}, session_id="s", call_id=f"q{n}")
        brake.observe_result("s", f"q{n}", n)
    assert not verdict.denied and verdict.count == 5


def test_the_stores_encoding_of_the_new_state_round_trips() -> None:
    policy = policy_of("progress = true\nprogress_max = 9\n[same_result]\nafter = 5\n")
    state = None
    for n in range(4):
        state, _ = policy_step(state, "a", call_digest("a", {}), f"c{n}", 9, policy)
        state, _ = result_step(state, f"c{n}", result_digest(n % 2), False)
    assert state is not None and state.identical == 4 and state.slot.count == 2
    waiting, _ = policy_step(state, "a", call_digest("a", {}), "c9", 9, policy)
    assert waiting.same_awaiting
    for kept in (state, waiting):
        text = encode_policy_state(kept, 7.5)
        assert CANARY not in text and '"m":' in text and '"y":' in text
        assert decode_policy_state(kept.slot, 7.5, text, policy) == kept
    plain = policy_of("progress = true\n")  # [same_result] switched off: its run is dropped
    back = decode_policy_state(state.slot, 7.5, encode_policy_state(state, 7.5), plain)
    assert back.sames == 0 and back.same_digest is None and back.identical == 4


def test_without_the_new_rules_the_stored_row_is_as_before() -> None:
    for text in ("[stop]\nafter_denials = 2\n", "progress = true\n"):
        policy = policy_of(text)
        state, _ = policy_step(None, "a", call_digest("a", {}), "c1", 3, policy)
        state, _ = policy_step(state, "a", call_digest("a", {}), "c2", 3, policy)
        row = encode_policy_state(state, 1.0)
        assert '"m"' not in row and '"y"' not in row, text


INT = "must be an integer of at least"
LOCATED = [
    ("progress = true\nprogress_max = 1\n", f"2:1: progress_max {INT} 2 and at most 10000, not 1"),
    (
        'progress = true\nprogress_max = "30"\n',
        f'2:1: progress_max {INT} 2 and at most 10000, not the string "30"',
    ),  # fmt: skip
    (
        'progress = true\n[[tools]]\nmatch = "x"\nmax_repeats = 5\nprogress_max = 5\n',
        "5:1: progress_max (5) must be above this rule's max_repeats (5)",
    ),
    (
        '[[tools]]\nmatch = "x"\nexempt = true\nprogress_max = 5\n',
        "4:1: an exempt rule is never denied: drop progress_max",
    ),
    ("[same_result]\n", "1:1: [same_result] needs after (an integer >= 1)"),
    ("\n[same_result]\nafter = 0\n", f"3:1: after {INT} 1 and at most 1000, not 0"),
    ("[same_result]\nafter = 2\nany_tool = 1\n", "3:1: any_tool must be true or false, not 1"),
    ("[same_result]\naftr = 2\n", '2:1: unknown key "aftr" in [same_result] (did you mean after?)'),
    ("same_result = 1\n", "1:1: same_result must be a table ([same_result]), not 1"),
    (
        '[same_result]\nafter = 2\n[[tools]]\nmatch = "x"\nsame_result = "no"\n',
        '5:1: same_result must be true or false, not the string "no"',
    ),
]


@pytest.mark.parametrize(("text", "located"), LOCATED)
def test_check_config_locates_every_malformed_key(tmp_path: Path, text: str, located: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError):
        parse_policy(text, str(path))
    done = run_cli("check-config", "--policy", str(path))
    assert done.returncode == 2, done.stderr
    assert f"{path}:{located}" in done.stderr.decode()
    assert b"Traceback" not in done.stderr


WARNED = [
    ("progress_max = 12\n", "1:1: warning: progress_max has no effect without progress = true"),
    (
        'progress = true\nprogress_max = 4\n[[tools]]\nmatch = "x"\nmax_repeats = 5\n',
        "5:1: warning: the global progress_max (4) is not above this rule's max_repeats (5)",
    ),
    (
        '[[tools]]\nmatch = "x"\nsame_result = false\n',
        "3:1: warning: same_result has no effect without [same_result]",
    ),
    (
        "result_ignore_defaults = false\n[same_result]\nafter = 2\n",
        None,  # [same_result] reads results: no "no effect" warning
    ),
]


@pytest.mark.parametrize(("text", "warned"), WARNED)
def test_check_config_warns_where_a_key_has_no_effect(
    tmp_path: Path, text: str, warned: str | None
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    done = run_cli("check-config", "--policy", str(path))
    assert done.returncode == 0, done.stderr
    if warned is None:
        assert b"warning" not in done.stderr
    else:
        assert f"{path}:{warned}" in done.stderr.decode()


def test_check_config_describes_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'progress = true\nprogress_max = 12\n[same_result]\nafter = 3\nany_tool = true\n'
        '[[tools]]\nmatch = "BashOutput"\nprogress_max = 40\n'
        '[[tools]]\nmatch = "status"\nsame_result = false\n'
    )  # fmt: skip
    done = run_cli("check-config", "--policy", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[1:6] == [
        "  tools (line 6): BashOutput -> max_repeats global, progress_max 40",
        "  tools (line 9): status -> max_repeats global, not judged by same_result",
        "  same_result: after 3 identical results in a row from any tool, whatever the "
        "arguments, the next call is denied",
        "  progress: on for every tool (a changed result restarts the streak)",
        "  progress_max: 12 identical calls in a row are denied, results changing or not",
    ]
    doc = json.loads(run_cli("check-config", "--policy", str(path), "--json").stdout)
    assert doc["sameResult"] == {"after": 3, "anyTool": True} and doc["progressMax"] == 12
    assert doc["tools"][0]["progressMax"] == 40 and doc["tools"][1]["sameResult"] is False
    path.write_text("progress = true\n")
    done = run_cli("check-config", "--policy", str(path))
    assert (
        "  progress_max: the default 30 (or the call's limit when higher)" in done.stdout.decode()
    )


# -- the samples the docs show ---------------------------------------------------------


def _verdicts(*args: str) -> list[dict]:
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_same_result_sample_denies_the_fourth_search() -> None:
    policy = ROOT / "samples/policies/same-result.toml"
    events = ROOT / "tests/fixtures/rules/same-result.jsonl"
    lines = _verdicts("filter", "--policy", str(policy), str(events))
    assert [(v["verdict"], v["rule"], v["toolName"]) for v in lines] == [
        ("pass", "streak", "search_docs"),
        ("pass", "streak", "search_docs"),
        ("pass", "streak", "search_docs"),
        ("deny", "same_result", "search_docs"),
        ("pass", "streak", "read_file"),
        ("pass", "streak", "search_docs"),
    ]
    assert lines[3]["identicalResults"] == 3 and lines[3]["line"] == 7
    docs = (ROOT / "docs/policies.md").read_text(encoding="utf-8")
    assert json.dumps(lines[3], ensure_ascii=False, separators=(",", ":")) in docs
    replayed = _verdicts("replay", "--verdicts", "--policy", str(policy), str(events))
    assert [v["verdict"] for v in replayed] == [v["verdict"] for v in lines]
    seed = [v["verdict"] for v in _verdicts("filter", str(events))]
    assert seed.count("pass") == 6 and "deny" not in seed  # result lines: the seed's errors


def test_the_date_loop_is_denied_at_the_default_ceiling_and_the_build_poll_is_not() -> None:
    """Issue 39's acceptance: the 62-call date loop is denied at 30; the 20 polls of a
    build whose output changes run through at the default and are denied at 20."""
    progress = str(ROOT / "samples/policies/progress.toml")
    date_loop = str(ROOT / "tests/fixtures/polls/date-loop.jsonl")
    dates = _verdicts("replay", "--verdicts", "--policy", progress, date_loop)
    assert len(dates) == 62
    assert [v["verdict"] for v in dates] == ["pass"] * 29 + ["deny"] * 33
    assert dates[29]["rule"] == "progress_max" and dates[29]["identicalCalls"] == 30
    assert dates[29]["limit"] == 30 and dates[29]["count"] == 2  # the results kept changing
    build = str(ROOT / "tests/fixtures/polls/build-poll.jsonl")
    polls = _verdicts("replay", "--verdicts", "--policy", progress, build)
    assert all(v["verdict"] == "pass" for v in polls) and len(polls) == 21
    assert sum(v["toolName"] == "BashOutput" for v in polls) == 20
    seed = _verdicts("replay", "--verdicts", build)
    assert sum(v["verdict"] == "deny" for v in seed) == 18  # the seed denies the 3rd poll on


def test_replay_sweeps_progress_max(tmp_path: Path) -> None:
    progress = str(ROOT / "samples/policies/progress.toml")
    polls = str(ROOT / "tests/fixtures/polls")
    done = run_cli("replay", "--json", "--sweep", "19..31", "--policy", progress, polls)
    assert done.returncode == 0, done.stderr
    rows = {row["progressMax"]: row for row in json.loads(done.stdout)["progressMaxSweep"]}
    assert (rows[20]["deniedCalls"], rows[20]["sessionsWithDenial"]) == (44, 2)
    assert (rows[21]["deniedCalls"], rows[21]["sessionsWithDenial"]) == (42, 1)
    assert (rows[30]["deniedCalls"], rows[30]["firstDenial"]["line"]) == (33, 60)
    text = run_cli("replay", "--sweep", "20..30", "--policy", progress, polls)
    assert b"Sweep: what each progress_max would have denied" in text.stdout
    partial = tmp_path / "part.json"
    args = ("--partial", str(partial), "--sweep", "2..40", "--policy", progress, polls)
    done = run_cli("replay", *args)
    assert done.returncode == 0, done.stderr
    merged = run_cli("merge", "--json", "--sweep", "19..31", str(partial))
    assert merged.returncode == 0, merged.stderr
    again = {row["progressMax"]: row for row in json.loads(merged.stdout)["progressMaxSweep"]}
    assert again == rows
    plain = json.loads(run_cli("replay", "--json", "--sweep", "2..5", polls).stdout)
    assert "progressMaxSweep" not in plain  # no policy: the document is as before


def test_replay_names_the_rule_that_stopped_each_streak(tmp_path: Path) -> None:
    """The denials table and ``--json`` say which rule denied (a policy's rule other than
    the streak's), with its limit; a merged partial says the same."""
    progress = str(ROOT / "samples/policies/progress.toml")
    date_loop = str(ROOT / "tests/fixtures/polls/date-loop.jsonl")
    text = run_cli("replay", "--policy", progress, date_loop)
    assert text.returncode == 0, text.stderr
    assert (
        b"denied at the 30th identical call, results changing (progress_max); "
        b"the agent tried 32 more times"
    ) in text.stdout
    doc = json.loads(run_cli("replay", "--json", "--policy", progress, date_loop).stdout)
    assert [(d["rule"], d["limit"]) for d in doc["denials"]] == [("progress_max", 30)]
    partial = tmp_path / "part.json"
    assert (
        run_cli("replay", "--partial", str(partial), "--policy", progress, date_loop).returncode
        == 0
    )  # noqa: E501
    merged = json.loads(run_cli("merge", "--json", str(partial)).stdout)
    assert merged["denials"] == doc["denials"]
    same = run_cli(
        "replay", "--policy", str(ROOT / "samples/policies/same-result.toml"),
        str(ROOT / "tests/fixtures/rules/same-result.jsonl"),
    )  # fmt: skip
    assert b"denied after 3 identical results, whatever the arguments (same_result)" in (
        same.stdout
    )
    assert b"No results" not in same.stdout + same.stderr  # the result, never shown
    assert b"retry budget" not in same.stdout + same.stderr  # nor the arguments
    plain = json.loads(run_cli("replay", "--json", date_loop).stdout)  # the seed's streak rule
    assert plain["denials"] and all("rule" not in d for d in plain["denials"])
