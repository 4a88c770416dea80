"""``streak.policy_step`` against a brute-force reference written from docs/policies.md,
on generated call sequences and policies, and the policy texts written out in full.

The reference keeps every counted call of the session and recomputes each decision
from that whole history (the streak, the longest periodic tail for each period, the
run of denials), where the implementation keeps a slot and a bounded window: a
break in either the incremental window or the decision order shows as a difference.
The progress mode has its own reference (tests/test_progress_rule.py)."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.policy import parse_policy

TOOLS = ["a", "b", "read_file", "grep"]


def policy_of(text: str) -> Any:
    return parse_policy(text, "policy.toml")[0]


class Reference:
    """One session under a policy, decided from the whole history (docs/policies.md)."""

    def __init__(self, rules: list[dict], cycles: tuple[int, int] | None, stop: int | None,
                 max_repeats: int) -> None:  # fmt: skip
        self.rules, self.cycles, self.stop, self.max_repeats = rules, cycles, stop, max_repeats
        self.history: list[tuple[str, int]] = []  # counted calls: (tool, args)
        self.denied: list[bool] = []
        self.last_id: Any = None
        self.last: dict | None = None

    def rule(self, tool: str) -> dict | None:
        """The first rule with a glob matching the whole name."""
        for rule in self.rules:
            if any(fnmatchcase(tool, pattern) for pattern in rule["match"]):
                return rule
        return None

    def exempt(self, tool: str) -> bool:
        rule = self.rule(tool)
        return rule is not None and rule.get("exempt", False)

    def cycle(self) -> tuple[int, int] | None:
        """(period, full repetitions) of the shortest cycle the history ends with."""
        if self.cycles is None:
            return None
        max_period, needed = self.cycles
        calls = self.history
        for period in range(2, max_period + 1):
            if len(calls) < period:
                continue
            tail = period  # the longest p-periodic tail: every call equals the one p before
            while tail < len(calls) and calls[-tail - 1] == calls[-tail - 1 + period]:
                tail += 1
            last = calls[-period:]
            if tail // period < needed or len(set(last)) < 2:
                continue
            if any(self.exempt(tool) for tool, _ in last):
                continue
            return period, tail // period
        return None

    def call(self, tool: str, args: int, call_id: Any) -> dict:
        if call_id is not None and call_id == self.last_id and self.last is not None:
            return {**self.last, "duplicate": True}
        self.history.append((tool, args))
        self.last_id = call_id
        count = 1
        while count < len(self.history) and self.history[-count - 1] == (tool, args):
            count += 1
        rule = self.rule(tool)
        exempt = rule is not None and rule.get("exempt", False)
        limit = rule["max_repeats"] if rule is not None and "max_repeats" in rule else None
        streak_limit = limit if limit is not None else self.max_repeats
        out = {"count": count, "max_repeats": streak_limit, "exempt": exempt, "duplicate": False}
        out["match"] = next(
            (p for p in rule["match"] if fnmatchcase(tool, p)) if rule is not None else iter(()),
            None,
        )
        if exempt:
            out.update(denied=False, rule="streak", limit=None, max_repeats=self.max_repeats)
        else:
            out.update(denied=count >= streak_limit, rule="streak", limit=streak_limit)
        out["cycle_repeats"] = 0
        if not out["denied"] and not exempt:
            found = self.cycle()
            if found is not None:
                assert self.cycles is not None
                out.update(denied=True, rule="cycle", limit=self.cycles[1])
                out["cycle_repeats"] = found[1]
                out["cycle"] = [
                    (t, call_hash(t, {"x": a})[:12]) for t, a in self.history[-found[0] :]
                ]
        self.denied.append(out["denied"])
        denials = 0
        while denials < len(self.denied) and self.denied[-denials - 1]:
            denials += 1
        out["denials"] = denials
        if out["denied"] and self.stop is not None and denials >= self.stop:
            out.update(rule="stop", limit=self.stop)
        self.last = out
        return out


RULE = st.one_of(
    st.fixed_dictionaries(
        {
            "match": st.sampled_from([["a"], ["read_*"], ["*"], ["b", "grep"], ["?"]]),
            "max_repeats": st.integers(1, 4),
        }  # fmt: skip
    ),
    st.fixed_dictionaries(
        {"match": st.sampled_from([["a"], ["read_*"], ["g*"]]), "exempt": st.just(True)}
    ),
)
CALLS = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from([0, 0, 0, 1]),
        st.sampled_from(["fresh"] * 6 + ["none", "repeat"]),
    ),
    max_size=40,
)


def toml_of(rules: list[dict], cycles: tuple[int, int] | None, stop: int | None) -> str:
    text = ""
    for rule in rules:
        text += "[[tools]]\nmatch = [" + ", ".join(f'"{p}"' for p in rule["match"]) + "]\n"
        if rule.get("exempt"):
            text += "exempt = true\n"
        else:
            text += f"max_repeats = {rule['max_repeats']}\n"
    if cycles is not None:
        text += f"[cycles]\nmax_period = {cycles[0]}\nmax_repeats = {cycles[1]}\n"
    if stop is not None:
        text += f"[stop]\nafter_denials = {stop}\n"
    return text


def _cyclic(pattern: str, times: int) -> list[tuple[str, int, str]]:
    return [(tool, 0, "fresh") for tool in pattern * times]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    rules=st.lists(RULE, max_size=3),
    cycles=st.one_of(st.none(), st.tuples(st.integers(2, 4), st.integers(2, 3))),
    stop=st.one_of(st.none(), st.integers(1, 3)),
    max_repeats=st.integers(2, 4),
    calls=CALLS,
)
@example(rules=[{"match": ["a"], "max_repeats": 1}], cycles=None, stop=2, max_repeats=3,
         calls=[("a", 0, "fresh")])  # fmt: skip
@example(rules=[{"match": ["a"], "max_repeats": 5}], cycles=(2, 2), stop=None, max_repeats=3,
         calls=[(t, 0, "fresh") for t in "abab"])  # fmt: skip
@example(rules=[], cycles=(4, 3), stop=3, max_repeats=3, calls=_cyclic("abcd", 4))
@example(rules=[], cycles=(2, 3), stop=None, max_repeats=5, calls=_cyclic("ab", 4))
@example(rules=[{"match": ["*"], "max_repeats": 9}], cycles=(3, 2), stop=None, max_repeats=3,
         calls=[(t, 0, "fresh") for t in "aabaab"] + [("a", 0, "fresh")] * 6)  # fmt: skip
def test_policy_step_equals_the_brute_force_reference(
    rules: list[dict],
    cycles: tuple[int, int] | None,
    stop: int | None,
    max_repeats: int,
    calls: list[tuple[str, int, str]],
) -> None:
    text = toml_of(rules, cycles, stop)
    policy = policy_of(text) if text else None
    brake = LoopBrake(max_repeats, policy=policy)
    model = Reference(rules, cycles, stop, max_repeats)
    latest: Any = None
    for number, (tool, args, kind) in enumerate(calls):
        call_id = {"fresh": f"c{number}", "none": None, "repeat": latest}[kind]
        verdict = brake.check(tool, {"x": args}, session_id="s", call_id=call_id)
        expected = model.call(tool, args, call_id)
        if not verdict.duplicate:
            latest = call_id
        if policy is None:  # no rule at all: the seed's verdict
            assert (verdict.count, verdict.denied, verdict.rule) == (
                expected["count"],
                expected["denied"],
                None,
            )
            continue
        got = {
            "count": verdict.count,
            "denied": verdict.denied,
            "rule": verdict.rule,
            "limit": verdict.limit,
            "max_repeats": verdict.max_repeats,
            "exempt": verdict.exempt,
            "duplicate": verdict.duplicate,
            "denials": verdict.denials if verdict.denied else 0,
            "cycle_repeats": verdict.cycle_repeats,
            "match": verdict.match,
        }
        want = {key: expected[key] for key in got}
        assert got == want, (number, text)
        if verdict.rule == "cycle":
            assert [list(pair) for pair in verdict.cycle] == [list(p) for p in expected["cycle"]]


# -- the cases issue 24 found unguarded, written out -------------------------------------


def test_a_rule_limit_of_one_with_stop_after_two_denies_the_first_call_without_a_stop() -> None:
    policy = policy_of('[[tools]]\nmatch = "a"\nmax_repeats = 1\n[stop]\nafter_denials = 2\n')
    brake = LoopBrake(3, policy=policy)
    first, second = (brake.check("a", {}, session_id="s") for _ in range(2))
    assert first.denied and first.rule == "streak" and first.denials == 1 and not first.stop
    assert second.stop and second.denials == 2 and second.limit == 2


def test_the_first_matching_rule_decides() -> None:
    policy = policy_of(
        '[[tools]]\nmatch = "read_*"\nmax_repeats = 2\n[[tools]]\nmatch = "*"\nmax_repeats = 5\n'
    )
    brake = LoopBrake(3, policy=policy)
    verdicts = [brake.check("read_file", {}, session_id="s") for _ in range(2)]
    assert [v.denied for v in verdicts] == [False, True]
    assert verdicts[1].limit == 2 and verdicts[1].match == "read_*"
    other = [brake.check("grep", {}, session_id="t") for _ in range(5)]
    assert [v.denied for v in other] == [False] * 4 + [True] and other[4].match == "*"


def test_only_an_exempt_rule_stops_a_cycle_from_counting() -> None:
    text = '[[tools]]\nmatch = "a"\nmax_repeats = 5\n[cycles]\nmax_period = 2\nmax_repeats = 2\n'
    brake = LoopBrake(3, policy=policy_of(text))
    verdicts = [brake.check(tool, {}, session_id="s") for tool in "abab"]
    assert [v.denied for v in verdicts] == [False, False, False, True]
    assert verdicts[3].rule == "cycle" and verdicts[3].cycle_repeats == 2
    exempt = text.replace("max_repeats = 5", "exempt = true")
    brake = LoopBrake(3, policy=policy_of(exempt))
    assert not any(brake.check(tool, {}, session_id="s").denied for tool in "ababab")


def test_a_rule_with_progress_false_leaves_the_progress_mode_off() -> None:
    policy = policy_of('[[tools]]\nmatch = "a"\nmax_repeats = 4\nprogress = false\n')
    assert not policy.uses_progress and not LoopBrake(3, policy=policy).progress
    on = policy_of('[[tools]]\nmatch = "a"\nmax_repeats = 4\nprogress = true\n')
    assert on.uses_progress


PREFIX_A = call_hash("a", {})[:12]
PREFIX_B = call_hash("b", {})[:12]


def test_the_cycle_message_in_full_and_its_max_repeats_is_the_streak_limit() -> None:
    text = '[[tools]]\nmatch = "b"\nmax_repeats = 7\n[cycles]\nmax_period = 2\nmax_repeats = 2\n'
    brake = LoopBrake(3, policy=policy_of(text))
    verdict = [brake.check(tool, {}, session_id="s") for tool in "abab"][-1]
    assert verdict.message == (
        f'loop brake: calls "a", "b" repeated 2 times in a row (calls {PREFIX_A}\u2026, '
        f"{PREFIX_B}\u2026, limit 2); the call was denied before it ran.\n"
        "Change the arguments, call a different tool, or stop."
    )
    assert verdict.rule == "cycle" and verdict.limit == 2 and verdict.max_repeats == 7
    assert verdict.cycle == (("a", PREFIX_A), ("b", PREFIX_B))


def test_an_exempt_verdicts_max_repeats_is_the_global_limit() -> None:
    brake = LoopBrake(4, policy=policy_of('[[tools]]\nmatch = "a"\nexempt = true\n'))
    verdict = [brake.check("a", {}, session_id="s") for _ in range(6)][-1]
    assert verdict.exempt and not verdict.denied and verdict.limit is None
    assert verdict.max_repeats == 4 and verdict.count == 6


def test_the_stop_message_in_full() -> None:
    brake = LoopBrake(2, policy=policy_of("[stop]\nafter_denials = 2\n"))
    verdict = [brake.check("a", {}, session_id="s") for _ in range(3)][-1]
    assert verdict.stop and verdict.message == (
        "loop brake: 2 calls in a row were denied in this session (stop after 2); "
        f'the last was tool "a" (call {PREFIX_A}\u2026).\n'
        "Stop: report to the user what you were trying to do instead of retrying."
    )


def test_the_progress_messages_count_the_identical_results() -> None:
    brake = LoopBrake(3, policy=policy_of("progress = true\n"))
    texts = []
    for results in ([], ["r"], ["r", "r"]):
        brake.reset()
        for _ in range(2 - len(results)):
            brake.check("a", {}, session_id="s")
        for result in results:
            brake.check("a", {}, session_id="s")
            brake.observe_result("s", None, result)
        texts.append(brake.check("a", {}, session_id="s").message)
    said = ["no result reported", "1 result reported", "the last 2 results identical"]
    for text, results in zip(texts, said, strict=True):
        assert text == (
            f'loop brake: tool "a" called 3 times in a row with identical arguments and '
            f"{results} (call {PREFIX_A}\u2026, limit 3); the call was denied before it ran.\n"
            "Change the arguments, call a different tool, or stop."
        )


def test_the_seeds_denial_in_full() -> None:
    brake = LoopBrake(2, policy=None)
    verdict = [brake.check('say "hi"', {}, session_id="s") for _ in range(2)][-1]
    prefix = call_hash('say "hi"', {})[:12]
    assert verdict.message == (
        'loop brake: tool "say \\"hi\\"" called 2 times in a row with identical arguments '
        f"(call {prefix}\u2026, limit 2); the call was denied before it ran.\n"
        "Change the arguments, call a different tool, or stop."
    )
    assert len(verdict.hash_prefix) == 12 and verdict.hash_prefix == prefix
