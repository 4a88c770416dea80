"""The ``[window]`` and ``[same_error]`` rules (issue 29) against a brute-force reference
written from docs/policies.md, on generated sequences of calls and results.

The reference keeps every counted call of the session with its first paired result
and recomputes each decision from that whole history: the streak, the times the
call's hash is seen among the last ``calls`` calls, and the run of identical errors
found by walking back over the calls of the same tool (denied calls skipped). The
implementation keeps ``calls`` digests and one counter (``streak.policy_step``,
``streak.result_step``): a break in the bounded window, the run or the rule order
shows as a difference. The messages, the located errors of ``check-config`` and the
stores' encoding of the new state are written out in full below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest, call_hash
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.core.progress import result_digest, result_error
from loop_brake_cli.core.streak import policy_step, result_step
from loop_brake_cli.stores.policy_rows import decode_policy_state, encode_policy_state

TOOLS = ["a", "b", "free"]
CANARY = "canary-29d4-rules-secret"
RESULTS: list[Any] = [
    {"content": [{"type": "text", "text": "boom " + CANARY}], "isError": True},
    {"content": [{"type": "text", "text": "other " + CANARY}], "isError": True},
    {"content": [{"type": "text", "text": "fine " + CANARY}], "isError": False},
    {"error": {"code": -32602, "message": "unknown tool " + CANARY}},
    "plain text " + CANARY,
]


def policy_of(text: str) -> Any:
    return parse_policy(text, "policy.toml")[0]


class Entry:
    def __init__(self, tool: str, args: int) -> None:
        self.tool, self.args = tool, args
        self.denied = False
        self.result: tuple[bytes, bool] | None = None  # (digest, error) of its first result


class Reference:
    """One session: every counted call kept, each decision recomputed from the history."""

    def __init__(self, max_repeats: int, window: tuple[int, int] | None,
                 after: int | None, stop: int | None) -> None:  # fmt: skip
        self.max_repeats, self.window, self.after, self.stop = max_repeats, window, after, stop
        self.history: list[Entry] = []
        self.last_id: Any = None
        self.last: dict | None = None

    def call(self, tool: str, args: int, call_id: Any) -> dict:
        if call_id is not None and call_id == self.last_id and self.last is not None:
            return {**self.last, "duplicate": True}
        self.last_id = call_id
        entry = Entry(tool, args)
        self.history.append(entry)
        same = [(e.tool, e.args) == (tool, args) for e in self.history]
        count = 1
        while count < len(same) and same[-count - 1]:
            count += 1
        exempt = tool == "free"
        out = {"count": count, "denied": False, "rule": "streak", "repeats": 0, "window": 0}
        out["limit"] = None if exempt else self.max_repeats
        if not exempt and count >= self.max_repeats:
            out["denied"] = True
        if not out["denied"] and not exempt and self.window is not None:
            calls, needed = self.window
            seen = sum(same[-calls:])
            if seen >= needed:
                out.update(denied=True, rule="window", limit=needed, repeats=seen, window=calls)
        if not out["denied"] and not exempt and self.after is not None:
            run, digest = 0, None
            for earlier in reversed(self.history[:-1]):
                if earlier.tool != tool:
                    break
                if earlier.denied:
                    continue  # it did not run: neither extends nor ends the run
                if earlier.result is None or not earlier.result[1]:
                    break
                if digest is None:
                    digest = earlier.result[0]
                elif earlier.result[0] != digest:
                    break
                run += 1
            if run >= self.after:
                out.update(denied=True, rule="same_error", limit=self.after, repeats=run)
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
        if self.after is None:
            return  # no rule reads results: the brake reads none (LoopBrake.progress)
        if not self.history or (call_id is not None and call_id != self.last_id):
            return
        self.last_id = None  # a paired result ends its call: the id may count again
        latest = self.history[-1]
        if latest.result is None and not latest.denied:
            latest.result = (result_digest(value), result_error(value))


def toml_of(window: tuple[int, int] | None, after: int | None, stop: int | None) -> str:
    text = '[[tools]]\nmatch = "free"\nexempt = true\n'
    if window is not None:
        text += f"[window]\ncalls = {window[0]}\nmax_repeats = {window[1]}\n"
    if after is not None:
        text += f"[same_error]\nafter = {after}\n"
    if stop is not None:
        text += f"[stop]\nafter_denials = {stop}\n"
    return text


STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("call"),
            st.sampled_from(TOOLS),
            st.sampled_from([0, 0, 1, 2]),
            st.sampled_from(["fresh"] * 6 + ["none", "repeat"]),
        ),
        st.tuples(
            st.just("result"),
            st.sampled_from([0, 0, 0, 1, 2, 3, 4]),
            st.sampled_from(["own"] * 5 + ["none", "other"]),
            st.just(""),
        ),
    ),
    max_size=40,
)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    window=st.one_of(
        st.none(),
        st.integers(2, 6).flatmap(lambda w: st.tuples(st.just(w), st.integers(2, w))),
    ),
    after=st.one_of(st.none(), st.integers(1, 3)),
    stop=st.one_of(st.none(), st.integers(1, 3)),
    max_repeats=st.integers(2, 5),
    steps=STEPS,
)
@example(window=(5, 3), after=None, stop=None, max_repeats=9,
         steps=[("call", t, 0, "fresh") for t in "abab" + "a"])  # fmt: skip
@example(window=None, after=2, stop=None, max_repeats=9,
         steps=[s for n in range(4) for s in (("call", "a", n % 3, "fresh"),
                                              ("result", 0, "own", ""))])  # fmt: skip
@example(window=None, after=2, stop=None, max_repeats=9,
         steps=[("call", "a", 0, "fresh"), ("result", 0, "own", ""), ("call", "a", 1, "fresh"),
                ("call", "a", 2, "fresh"), ("result", 0, "own", ""),
                ("call", "a", 0, "fresh")])  # fmt: skip  # a call without a result ends the run
def test_window_and_same_error_equal_the_brute_force_reference(
    window: tuple[int, int] | None,
    after: int | None,
    stop: int | None,
    max_repeats: int,
    steps: list[tuple],
) -> None:
    policy = policy_of(toml_of(window, after, stop))
    brake = LoopBrake(max_repeats, policy=policy)
    model = Reference(max_repeats, window, after, stop)
    latest: Any = None
    for number, (kind, first, second, third) in enumerate(steps):
        if kind == "result":
            call_id = {"own": latest, "none": None, "other": "elsewhere"}[second]
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
            "window": verdict.window,
            "denials": verdict.denials if verdict.denied else 0,
            "duplicate": verdict.duplicate,
        }
        assert got == {key: expected[key] for key in got}, (number, steps[: number + 1])
        assert CANARY not in verdict.message


# -- written out --------------------------------------------------------------------------

PREFIX_A = call_hash("a", {})[:12]
ERROR = RESULTS[0]


def test_a_call_seen_three_times_in_five_with_others_between_is_denied() -> None:
    brake = LoopBrake(9, policy=policy_of("[window]\ncalls = 5\nmax_repeats = 3\n"))
    verdicts = [brake.check(tool, {}, session_id="s") for tool in "abacab"]
    assert [v.denied for v in verdicts] == [False, False, False, False, True, False]
    denied = verdicts[4]
    assert (denied.rule, denied.limit, denied.window, denied.cycle_repeats) == ("window", 3, 5, 3)
    assert denied.message == (
        f'loop brake: tool "a" called 3 times with identical arguments within the last 5 calls '
        f"(call {PREFIX_A}\u2026, limit 3); the call was denied before it ran.\n"
        "Change the arguments, call a different tool, or stop."
    )
    # the window slides: a b a c a b -> the next a sees a, c, a, b, a in its last 5
    assert brake.check("a", {}, session_id="s").denied
    assert not brake.check("a", {}, session_id="t").denied  # per session


def test_a_call_a_cycle_and_the_window_both_deny_is_the_cycles() -> None:
    """The rules decide in their documented order (``streak.policy_step``: cycle, then
    window): b c a b a b completes two repetitions of (a, b) and is b's third in the
    last 6 calls; the cycle names the denial. The window alone denies that call too."""
    cycles = "[cycles]\nmax_period = 2\nmax_repeats = 2\n"
    window = "[window]\ncalls = 6\nmax_repeats = 3\n"
    brake = LoopBrake(9, policy=policy_of(cycles + window))
    verdicts = [brake.check(tool, {}, session_id="s") for tool in "bcabab"]
    assert [v.denied for v in verdicts] == [False] * 5 + [True]
    assert (verdicts[5].rule, verdicts[5].cycle_repeats, verdicts[5].window) == ("cycle", 2, 0)
    alone = LoopBrake(9, policy=policy_of(window))
    verdicts = [alone.check(tool, {}, session_id="s") for tool in "bcabab"]
    assert [v.denied for v in verdicts] == [False] * 5 + [True]
    assert (verdicts[5].rule, verdicts[5].window) == ("window", 6)


def test_the_window_is_bounded_to_its_calls() -> None:
    policy = policy_of("[window]\ncalls = 4\nmax_repeats = 2\n")
    state = None
    for tool in "abcdefgh":
        state, _ = policy_step(state, tool, call_digest(tool, {}), None, 9, policy)
    assert state is not None and len(state.seen) == 4
    assert state.seen == tuple(call_digest(tool, {}) for tool in "efgh")


def test_identical_errors_from_changing_arguments_deny_the_next_call_of_that_tool() -> None:
    brake = LoopBrake(9, policy=policy_of("[same_error]\nafter = 3\n"))
    for n in range(3):
        assert not brake.check("a", {"n": n}, session_id="s", call_id=f"c{n}").denied
        assert brake.observe_result("s", f"c{n}", ERROR)
    denied = brake.check("a", {"n": 9}, session_id="s", call_id="c9")
    prefix = call_hash("a", {"n": 9})[:12]
    assert (denied.denied, denied.rule, denied.limit, denied.cycle_repeats) == (
        True,
        "same_error",
        3,
        3,
    )
    assert denied.message == (
        f'loop brake: tool "a" returned the same error 3 times in a row (limit 3); '
        f"this call (call {prefix}\u2026) was denied before it ran.\n"
        "Read the error and change the approach, call a different tool, or stop."
    )
    assert CANARY not in repr(denied)
    assert brake.check("a", {"n": 10}, session_id="s").denied  # until another tool runs
    assert not brake.check("b", {}, session_id="s").denied
    assert not brake.check("a", {"n": 11}, session_id="s").denied


def test_a_success_a_different_error_or_no_result_ends_the_run() -> None:
    for ending in (RESULTS[2], RESULTS[1], None):
        brake = LoopBrake(9, policy=policy_of("[same_error]\nafter = 2\n"))
        brake.check("a", {"n": 0}, session_id="s")
        brake.observe_result("s", None, ERROR)
        brake.check("a", {"n": 1}, session_id="s")
        if ending is not None:
            brake.observe_result("s", None, ending)
        verdict = brake.check("a", {"n": 2}, session_id="s")
        assert not verdict.denied, ending


def test_a_call_whose_result_never_came_ends_the_run() -> None:
    """error, (no result), error: a run of 1, not 2, so the fourth call runs."""
    brake = LoopBrake(9, policy=policy_of("[same_error]\nafter = 2\n"))
    brake.check("a", {"n": 0}, session_id="s")
    brake.observe_result("s", None, ERROR)
    brake.check("a", {"n": 1}, session_id="s")  # its result never arrives
    assert not brake.check("a", {"n": 2}, session_id="s").denied
    brake.observe_result("s", None, ERROR)
    assert not brake.check("a", {"n": 3}, session_id="s").denied
    brake.observe_result("s", None, ERROR)
    assert brake.check("a", {"n": 4}, session_id="s").rule == "same_error"


def test_a_host_digest_with_an_error_flag_counts_as_an_error() -> None:
    brake = LoopBrake(9, policy=policy_of("[same_error]\nafter = 2\n"))
    digest = bytes(range(32))
    for n in range(2):
        brake.check("a", {"n": n}, session_id="s")
        brake.observe_result("s", None, digest=digest, error=True)
    assert brake.check("a", {"n": 2}, session_id="s").rule == "same_error"


def test_the_stores_encoding_of_the_new_state_round_trips() -> None:
    policy = policy_of("[window]\ncalls = 3\nmax_repeats = 3\n[same_error]\nafter = 3\n")
    state = None
    for n in range(3):
        state, _ = policy_step(state, "a", call_digest("a", {"n": n}), f"c{n}", 9, policy)
        state, _ = result_step(state, f"c{n}", result_digest(ERROR), True)
    assert state is not None and state.errors == 3 and len(state.seen) == 3
    waiting, _ = policy_step(state, "b", call_digest("b", {}), "c9", 9, policy)
    assert waiting.awaiting  # a call let run waits for its result, in the store too
    assert decode_policy_state(waiting.slot, 1.0, encode_policy_state(waiting, 1.0), policy) == (
        waiting
    )
    text = encode_policy_state(state, 7.5)
    assert CANARY not in text
    assert decode_policy_state(state.slot, 7.5, text, policy) == state
    plain = policy_of("[stop]\nafter_denials = 2\n")  # the rules switched off: nothing kept
    back = decode_policy_state(state.slot, 7.5, text, plain)
    assert back.seen == () and back.errors == 0 and not back.awaiting


def test_without_the_new_keys_the_stored_row_is_as_before() -> None:
    policy = policy_of("[stop]\nafter_denials = 2\n")
    state, _ = policy_step(None, "a", call_digest("a", {}), "c1", 3, policy)
    text = encode_policy_state(state, 1.0)
    assert '"w"' not in text and '"x"' not in text
    assert text.startswith('{"u":1.0,"d":[false,"streak",3,3,false,null,0,0,0,false,0],')


INT = "must be an integer of at least"
LOCATED = [
    ("[window]\ncalls = 3\nmax_repeats = 4\n", "3:1: max_repeats (4) must be at most calls (3)"),
    ("[window]\ncalls = 65\nmax_repeats = 2\n", f"2:1: calls {INT} 2 and at most 64, not 65"),
    ("[window]\ncalls = 5\n", "1:1: [window] needs max_repeats (an integer >= 2)"),
    (
        '[window]\ncalls = "5"\nmax_repeats = 2\n',
        f'2:1: calls {INT} 2 and at most 64, not the string "5"',
    ),
    ("[window]\ncalls = 5\nmax_repeats = 1\n", f"3:1: max_repeats {INT} 2 and at most 64, not 1"),
    ("[window]\ncalls = 5\nmax_repeats = 2\n  windw = 3\n", '4:3: unknown key "windw" in [window]'),
    ("window = 3\n", "1:1: window must be a table ([window]), not 3"),
    ("\n[same_error]\nafter = 0\n", f"3:1: after {INT} 1 and at most 1000, not 0"),
    ("[same_error]\n", "1:1: [same_error] needs after (an integer >= 1)"),
    ("[same_error]\nafter = true\n", f"2:1: after {INT} 1 and at most 1000, not true"),
    ("[same_error]\naftr = 2\n", '2:1: unknown key "aftr" in [same_error] (did you mean after?)'),
    ("same_error = 1\n", "1:1: same_error must be a table ([same_error]), not 1"),
    ("[same_error]\nafter = 1.5\n", f"2:1: after {INT} 1 and at most 1000, not 1.5"),
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


def test_check_config_describes_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[window]\ncalls = 8\nmax_repeats = 3\n[same_error]\nafter = 3\n")
    done = run_cli("check-config", "--policy", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[1:] == [
        "  window: a call seen 3 times in the last 8 calls is denied",
        "  same_error: after 3 identical errors in a row from one tool, its next call is denied",
    ]
    done = run_cli("check-config", "--policy", str(path), "--json")
    assert b'"window": {"calls": 8, "maxRepeats": 3}, "sameError": {"after": 3}' in done.stdout


def test_result_error_reads_the_documented_shapes() -> None:
    assert result_error({"content": [], "isError": True})
    assert result_error({"error": {"code": 1}})
    assert not result_error({"content": [], "isError": False})
    assert not result_error({"error": "x", "other": 1})
    assert not result_error("Error: boom")


def test_the_documented_sample_outputs(tmp_path: Path) -> None:
    """docs/policies.md shows these lines; the samples are in samples/README.md."""
    from conftest import ROOT

    window = run_cli(
        "filter", "--policy", str(ROOT / "samples/policies/window.toml"), "--only", "deny",
        str(ROOT / "samples/spaced-repeats.jsonl"),
    )  # fmt: skip
    lines = [json.loads(line) for line in window.stdout.splitlines()]
    assert [(v["line"], v["rule"], v["seen"], v["window"]) for v in lines] == [
        (5, "window", 3, 8),
        (7, "window", 4, 8),
    ]
    same = run_cli(
        "filter", "--policy", str(ROOT / "samples/policies/same-error.toml"),
        str(ROOT / "tests/fixtures/rules/same-error.jsonl"),
    )  # fmt: skip
    lines = [json.loads(line) for line in same.stdout.splitlines()]
    assert [(v["verdict"], v["rule"]) for v in lines] == [("pass", "streak")] * 3 + [
        ("deny", "same_error"),
        ("pass", "streak"),
        ("pass", "streak"),
    ]
    assert lines[3]["errors"] == 3 and lines[3]["line"] == 7
    docs = (ROOT / "docs/policies.md").read_text(encoding="utf-8")
    for out in (window.stdout, same.stdout):
        for line in out.decode().splitlines():
            if '"deny"' in line:
                assert line in docs
    plain = run_cli("filter", str(ROOT / "samples/spaced-repeats.jsonl"))
    assert b'"deny"' not in plain.stdout
