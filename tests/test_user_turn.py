"""``reset_on_user_turn`` (issue 29): a user turn ends its session's state, in the engine
and in filter; checked against a brute-force reference written from its definition
(docs/policies.md: the session starts over, as if it were new).

The reference is ``test_policy_reference.Reference``, the whole-history model of a
session under a policy; a user turn replaces the session's model by a fresh one.
Every sequence of up to seven events over two sessions, two calls and a user turn is
tried under a few policies (streak, cycles, stop), then hypothesis draws the rest.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_policy_reference import RULE, Reference, toml_of

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.core.records import ToolCall, UserTurn
from loop_brake_cli.readers.pipeline import Tally, judge

CANARY = "canary-5b1d-user-turn-secret"
RESET = "reset_on_user_turn = true\n"


def policy_of(text: str) -> Any:
    return parse_policy(text, "policy.toml")[0]


def run(brake: LoopBrake, events: list[tuple]) -> list[tuple]:
    """(count, denied, rule) of each call, through ``pipeline.judge`` as filter and
    replay feed the brake; a user turn is ``("user", session)``."""
    records = [
        UserTurn(event[1]) if event[0] == "user" else ToolCall(event[1], {"x": event[2]}, event[3])
        for event in events
    ]
    return [
        (verdict.count, verdict.denied, verdict.rule)
        for _, verdict in judge(records, brake, Tally())
        if verdict is not None
    ]


def reference(rules: list[dict], cycles: Any, stop: Any, max_repeats: int, events: list[tuple]):
    """The definition: a user turn gives its session a fresh history."""
    models: dict[str, Reference] = {}
    out = []
    for number, event in enumerate(events):
        if event[0] == "user":
            models.pop(event[1], None)
            continue
        _, tool, args, session = event
        model = models.setdefault(session, Reference(rules, cycles, stop, max_repeats))
        got = model.call(tool, args, f"c{number}")
        out.append((got["count"], got["denied"], got["rule"]))
    return out


EVENTS = [
    ("call", "a", 0, "s"),
    ("call", "b", 0, "s"),
    ("call", "a", 0, "t"),
    ("user", "s"),
]
POLICIES = [
    ([], None, None),
    ([], (2, 2), None),
    ([], None, 2),
    ([{"match": ["a"], "max_repeats": 2}], (2, 2), 1),
]


@pytest.mark.parametrize(("rules", "cycles", "stop"), POLICIES)
def test_every_short_sequence_equals_the_reference(rules, cycles, stop) -> None:
    text = RESET + toml_of(rules, cycles, stop)
    tried = 0
    for length in range(1, 8):
        for events in itertools.product(EVENTS, repeat=length):
            brake = LoopBrake(2, policy=policy_of(text))
            assert run(brake, list(events)) == reference(rules, cycles, stop, 2, list(events)), (
                events
            )
            tried += 1
    assert tried == sum(4**n for n in range(1, 8))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    rules=st.lists(RULE, max_size=3),
    cycles=st.one_of(st.none(), st.tuples(st.integers(2, 4), st.integers(2, 3))),
    stop=st.one_of(st.none(), st.integers(1, 3)),
    max_repeats=st.integers(2, 4),
    events=st.lists(
        st.one_of(
            st.tuples(
                st.just("call"),
                st.sampled_from(["a", "b", "read_file", "grep"]),
                st.sampled_from([0, 0, 1]),
                st.sampled_from(["s", "t"]),
            ),
            st.tuples(st.just("user"), st.sampled_from(["s", "t", "u"])),
        ),
        max_size=40,
    ),
)
def test_drawn_policies_and_sequences_equal_the_reference(
    rules, cycles, stop, max_repeats, events
) -> None:
    brake = LoopBrake(max_repeats, policy=policy_of(RESET + toml_of(rules, cycles, stop)))
    assert run(brake, events) == reference(rules, cycles, stop, max_repeats, events)


def test_without_the_key_a_user_turn_changes_nothing() -> None:
    events = [("call", "a", 0, "s")] * 2 + [("user", "s")] + [("call", "a", 0, "s")]
    assert run(LoopBrake(3), events) == [(1, False, None), (2, False, None), (3, True, None)]
    other = policy_of("[stop]\nafter_denials = 5\n")
    assert not LoopBrake(3, policy=other).user_turns
    assert [c for c, *_ in run(LoopBrake(3, policy=other), events)] == [1, 2, 3]
    assert not LoopBrake(3).user_turn("s")


def test_a_user_turn_ends_the_progress_state_and_the_denial_run() -> None:
    brake = LoopBrake(2, policy=policy_of(RESET + "progress = true\n[stop]\nafter_denials = 2\n"))
    assert [brake.check("a", {}, session_id="s").denials for _ in range(2)] == [0, 1]
    assert brake.user_turn("s") and len(brake) == 0
    first = brake.check("a", {}, session_id="s")
    brake.observe_result("s", None, {"rows": 1})
    second = brake.check("a", {}, session_id="s")
    # the denial before the turn is forgotten: this is the first of a new run, no stop
    assert (first.count, second.count, second.denied, second.stop) == (1, 2, True, False)
    assert second.identical_results == 1


def test_a_subagent_session_runs_on_and_a_call_id_before_the_turn_is_no_duplicate() -> None:
    brake = LoopBrake(3, policy=policy_of(RESET))
    brake.check("a", {}, session_id="s", call_id="c1")
    brake.check("a", {}, session_id="s/agent", call_id="d1")
    brake.user_turn("s")
    again = brake.check("a", {}, session_id="s", call_id="c1")
    assert (again.count, again.duplicate) == (1, False)
    assert brake.check("a", {}, session_id="s/agent", call_id="d2").count == 2


def test_a_user_turn_reaches_a_shared_store(tmp_path: Path) -> None:
    policy = policy_of(RESET)
    path = str(tmp_path / "state.db")
    one, two = LoopBrake(3, policy=policy, store=path), LoopBrake(3, policy=policy, store=path)
    assert [one.check("a", {}, session_id="s").count for _ in range(2)] == [1, 2]
    assert two.user_turn("s")  # another process's brake, the same store
    assert one.check("a", {}, session_id="s").count == 1


def test_the_policy_key_and_its_located_errors(tmp_path: Path) -> None:
    assert policy_of(RESET).reset_on_user_turn and not policy_of(RESET).empty
    assert not policy_of("reset_on_user_turn = false\n").reset_on_user_turn
    assert policy_of("reset_on_user_turn = false\n").empty
    for value, said in (('"yes"', 'not the string "yes"'), ("1", "not 1"), ("[]", "not an array")):
        with pytest.raises(PolicyError) as caught:
            parse_policy(f"# policy\n  reset_on_user_turn = {value}\n", "p.toml")
        assert str(caught.value) == f"p.toml:2:3: reset_on_user_turn must be true or false, {said}"
    with pytest.raises(PolicyError, match=r"p.toml:1:1: unknown key \"reset_on_user_turns\""):
        parse_policy("reset_on_user_turns = true\n", "p.toml")
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[project]\nname = "x"\n[tool.loop-brake]\nreset_on_user_turn = "on"\n')
    checked = run_cli("check-config", "--policy", str(bad))
    assert checked.returncode == 2
    assert f"{bad}:4:1: reset_on_user_turn must be true or false".encode() in checked.stderr
    for command in (("filter",), ("replay", "-")):
        refused = run_cli(*command, "--policy", str(bad), input=b"")
        assert refused.returncode == 2, command
        assert f"{bad}:4:1: reset_on_user_turn".encode() in refused.stderr
    good = tmp_path / "policy.toml"
    good.write_text(RESET)
    described = run_cli("check-config", "--policy", str(good), "--json")
    assert json.loads(described.stdout)["resetOnUserTurn"] is True


# -- filter ------------------------------------------------------------------------------

LINES = [
    {"tool": "a", "args": {"k": CANARY}, "sessionId": "s", "callId": "c1"},
    {"tool": "a", "args": {"k": CANARY}, "sessionId": "s", "callId": "c2"},
    {"type": "user", "sessionId": "s", "prompt": CANARY},
    {"tool": "a", "args": {"k": CANARY}, "sessionId": "s", "callId": "c3"},
    {"type": "user", "session_id": 7},
    {"tool": "a", "args": {"k": CANARY}, "sessionId": "s", "callId": "c4"},
]


def _events() -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in LINES)


def test_filter_without_the_key_reads_a_user_line_as_it_always_did(tmp_path: Path) -> None:
    """An error line (no tool name), the streak running on: the same bytes on the fast
    path, the exact path, and under a policy without the key."""
    other = tmp_path / "policy.toml"
    other.write_text("[stop]\nafter_denials = 9\n")
    runs = [
        run_cli("filter", "-m", "3", input=_events()),
        run_cli("filter", "-m", "3", input=_events(), env=_exact_env()),
    ]
    assert runs[0].stdout == runs[1].stdout
    lines = [json.loads(line) for line in runs[0].stdout.splitlines()]
    assert [line["verdict"] for line in lines] == ["pass", "pass", "error", "deny", "error", "deny"]
    assert lines[2]["error"].startswith("tool name missing")
    under = run_cli("filter", "-m", "3", "--policy", str(other), input=_events())
    assert [json.loads(line)["verdict"] for line in under.stdout.splitlines()][2] == "error"


def _exact_env() -> dict[str, str]:
    from conftest import cli_env

    return cli_env(LOOP_BRAKE_EXACT="1", LOOP_BRAKE_PURE_PYTHON="1")


def test_filter_under_the_key_ends_the_streak_and_says_nothing_of_the_prompt(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(RESET)
    done = run_cli(
        "filter", "-m", "3", "--policy", str(policy), "--summary", "--fail-on-deny", input=_events()
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    # the user line gives no verdict line; a bad one is an error and the run goes on
    assert [(line.get("line"), line["verdict"], line.get("count")) for line in lines] == [
        (1, "pass", 1),
        (2, "pass", 2),
        (4, "pass", 1),
        (5, "error", None),
        (6, "pass", 2),
    ]
    assert lines[3]["error"] == "sessionId is not a string"
    assert b"user turns: 1 (each ended its session's streaks)" in done.stderr
    assert CANARY.encode() not in done.stdout + done.stderr


def test_the_documented_sample() -> None:
    """docs/policies.md: the seed denies the re-runs after the user spoke; the key does not."""
    sample = str(ROOT / "tests" / "fixtures" / "events" / "synthetic--user-turn.jsonl")
    seed = [json.loads(line) for line in run_cli("filter", sample).stdout.splitlines()]
    assert [(v["line"], v["verdict"], v.get("count")) for v in seed] == [
        (1, "pass", 1), (2, "pass", 2), (3, "error", None), (4, "deny", 3), (5, "deny", 4),
    ]  # fmt: skip
    policy = str(ROOT / "samples" / "policies" / "user-turn.toml")
    reset = run_cli("filter", "--policy", policy, sample).stdout.splitlines()
    assert [(v["line"], v["verdict"], v["count"]) for v in map(json.loads, reset)] == [
        (1, "pass", 1), (2, "pass", 2), (4, "pass", 1), (5, "pass", 2),
    ]  # fmt: skip
