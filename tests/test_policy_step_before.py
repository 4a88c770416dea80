"""``streak.policy_step`` against the rules as they were written before issue 41 made it
one function (``tests/policy_step_before.py``: a mutable call, one function a rule, in
the order of ``RULES``): the same state after every call, field by field, for drawn
policies using every key (per-tool limits, exemptions, ``args_ignore``, ``warn_at``,
progress and its ceiling, cycles, the window, same-error, same-result, stop) and drawn
sequences of calls, duplicates and results (``result_step``, which both share, so
the progress restarts, the awaited results and their runs are reached)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, reject, settings
from hypothesis import strategies as st
from policy_step_before import policy_step as policy_step_before

from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.core.streak import policy_step, result_step

TOOLS = ["a", "a", "a", "b", "read_x", "grep"]  # "a" most: long streaks

MATCH = st.sampled_from(['["a"]', '["read_*"]', '["*"]', '["b", "grep"]', '["?"]'])
RULE = st.one_of(
    st.fixed_dictionaries({"match": MATCH, "exempt": st.just(True)}),
    st.fixed_dictionaries(
        {"match": MATCH, "max_repeats": st.integers(1, 5)},
        optional={
            "progress": st.booleans(),
            "warn_at": st.integers(1, 4),
            "progress_max": st.integers(2, 5),
            "same_result": st.just(False),
            "args_ignore": st.just('["$.t"]'),
        },
    ),
)
GLOBAL = st.fixed_dictionaries(
    {},
    optional={
        "progress": st.booleans(),
        "warn_at": st.integers(1, 4),
        "progress_max": st.integers(2, 5),
    },
)
SECTIONS = st.fixed_dictionaries(
    {},
    optional={
        "cycles": st.tuples(st.integers(2, 4), st.integers(2, 3)).map(
            lambda c: f"max_period = {c[0]}\nmax_repeats = {c[1]}\n"
        ),
        "window": st.tuples(st.integers(2, 4), st.integers(0, 3)).map(
            lambda w: f"calls = {w[0] + w[1]}\nmax_repeats = {w[0]}\n"
        ),
        "same_error": st.integers(1, 3).map(lambda n: f"after = {n}\n"),
        "same_result": st.tuples(st.integers(1, 3), st.booleans()).map(
            lambda r: f"after = {r[0]}\nany_tool = {str(r[1]).lower()}\n"
        ),
        "stop": st.integers(1, 3).map(lambda n: f"after_denials = {n}\n"),
    },
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.sampled_from(TOOLS), st.integers(0, 1), st.integers(0, 9)),
        st.tuples(
            st.just("result"), st.sampled_from([None, "id"]), st.integers(0, 2), st.booleans()
        ),
    ),
    max_size=40,
)


def _value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def toml_of(globals_: dict, rules: list[dict], sections: dict) -> str:
    text = "".join(f"{key} = {_value(value)}\n" for key, value in globals_.items())
    for rule in rules:
        text += "[[tools]]\n" + "".join(f"{k} = {_value(v)}\n" for k, v in rule.items())
    for name, body in sections.items():
        text += f"[{name}]\n{body}"
    return text


@settings(max_examples=500, deadline=None)
@given(
    globals_=GLOBAL,
    rules=st.lists(RULE, max_size=3),
    sections=SECTIONS,
    max_repeats=st.integers(1, 4),
    steps=STEPS,
)
@example(  # a cycle of two calls, three times: denied by [cycles], then a stop
    globals_={},
    rules=[],
    sections={"cycles": "max_period = 3\nmax_repeats = 3\n", "stop": "after_denials = 1\n"},
    max_repeats=5,
    steps=[("call", tool, 0, 0) for tool in "abababab"],
)
@example(  # results that change restart the streak, then the ceiling denies
    globals_={"progress": True, "progress_max": 4},
    rules=[],
    sections={},
    max_repeats=2,
    steps=[
        step for n in range(5) for step in (("call", "a", 0, 0), ("result", None, n % 3, False))
    ],
)
def test_policy_step_equals_the_rules_as_written_before(
    globals_: dict, rules: list[dict], sections: dict, max_repeats: int, steps: list[tuple]
) -> None:
    try:
        policy, _ = parse_policy(toml_of(globals_, rules, sections), "policy.toml")
    except PolicyError:
        reject()  # keys that exclude each other: drawn, refused by the loader
    if policy.empty:
        return
    now = before = None
    last_id: Any = None
    for step in steps:
        if step[0] == "call":
            _, tool, args, call_number = step
            digest = call_digest(tool, {"x": args})
            call_id = None if call_number == 0 else f"c{call_number}"
            now, duplicate = policy_step(now, tool, digest, call_id, max_repeats, policy)
            before, was_duplicate = policy_step_before(
                before, tool, digest, call_id, max_repeats, policy
            )
            assert (now, duplicate) == (before, was_duplicate)
            last_id = call_id
        else:
            _, paired_by, result, error = step
            digest = call_digest("result", result)
            call_id = last_id if paired_by == "id" else None
            now, paired = result_step(now, call_id, digest, error)
            before, was_paired = result_step(before, call_id, digest, error)
            assert (now, paired) == (before, was_paired)
