"""A policy table whose keys are left out takes the documented defaults
(docs/policies.md: ``[cycles] max_period`` 2..16, default 4; ``max_repeats`` default 3).

A bare ``[cycles]`` once read the class attribute of a slotted dataclass (a member
descriptor, not 4): ``filter --policy`` died with a traceback and ``check-config``
printed ``periods 2..<member 'max_period' ...>`` (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, run_cli

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.policy import PolicyError, check_policy, load_policy


def _write(tmp: Path, text: str) -> str:
    path = tmp / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _events(calls: list[str]) -> bytes:
    return b"".join(
        json.dumps({"tool": tool, "args": {}, "sessionId": "s"}).encode() + b"\n" for tool in calls
    )


@pytest.mark.parametrize(
    ("text", "period", "repeats"),
    [
        ("[cycles]\n", 4, 3),
        ("[cycles]\nmax_repeats = 2\n", 4, 2),
        ("[cycles]\nmax_period = 2\n", 2, 3),
    ],
    ids=["bare", "no-max_period", "no-max_repeats"],
)
def test_cycles_keys_left_out_take_the_documented_defaults(
    tmp_path: Path, text: str, period: int, repeats: int
) -> None:
    policy = load_policy(_write(tmp_path, text))
    assert policy.cycles is not None
    assert (policy.cycles.max_period, policy.cycles.max_repeats) == (period, repeats)


def test_bare_cycles_denies_the_third_repetition_of_a_four_call_cycle(tmp_path: Path) -> None:
    policy = _write(tmp_path, "[cycles]\n")
    brake = LoopBrake(3, policy=policy)
    verdicts = [brake.check(tool, {}, session_id="s") for tool in "abcd" * 3]
    assert [v.denied for v in verdicts] == [False] * 11 + [True]
    assert verdicts[-1].rule == "cycle" and verdicts[-1].cycle_repeats == 3
    five = LoopBrake(3, policy=policy)  # period 5 is past the default max_period 4
    assert not any(five.check(tool, {}, session_id="s").denied for tool in "abcde" * 3)


def test_bare_cycles_through_filter_and_check_config(tmp_path: Path) -> None:
    policy = _write(tmp_path, "[cycles]\n")
    env = cli_env(LOOP_BRAKE_POLICY="")
    done = run_cli("filter", "--policy", policy, input=_events(list("abcd" * 3)), env=env)
    assert done.returncode == 0 and done.stderr == b""
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["verdict"] for line in lines] == ["pass"] * 11 + ["deny"]
    assert lines[-1]["rule"] == "cycle"
    done = run_cli("check-config", "--policy", policy, env=env)
    assert done.returncode == 0, done.stderr
    assert b"cycles: periods 2..4, denied at 3 repetitions in a row" in done.stdout
    doc = json.loads(run_cli("check-config", "--policy", policy, "--json", env=env).stdout)
    assert doc["cycles"] == {"maxPeriod": 4, "maxRepeats": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[cycles]\nmax_period = 1\n",
            "max_period must be an integer of at least 2 and at most 16",
        ),
        (
            "[cycles]\nmax_period = 17\n",
            "max_period must be an integer of at least 2 and at most 16",
        ),
        ("[cycles]\nmax_repeats = 1\n", "max_repeats must be an integer of at least 2, not 1"),
        (
            '[[tools]]\nmatch = "a"\nmax_repeats = 0\n',
            "max_repeats must be an integer of at least 1",
        ),
        ("[stop]\nafter_denials = 0\n", "after_denials must be an integer of at least 1"),
    ],
    ids=["period-1", "period-17", "cycle-repeats-1", "tool-repeats-0", "stop-0"],
)
def test_the_documented_bounds_are_refused_past_their_ends(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(_write(tmp_path, text))
    assert message in str(caught.value)


def test_the_documented_bounds_are_accepted_at_their_ends(tmp_path: Path) -> None:
    text = "[cycles]\nmax_period = 16\nmax_repeats = 2\n[stop]\nafter_denials = 1\n"
    text += '[[tools]]\nmatch = "a"\nmax_repeats = 1\n'
    policy = load_policy(_write(tmp_path, text))
    assert policy.cycles is not None and policy.stop is not None
    assert (policy.cycles.max_period, policy.cycles.max_repeats) == (16, 2)
    assert policy.stop.after_denials == 1 and policy.tools[0].max_repeats == 1
    low = load_policy(_write(tmp_path, "[cycles]\nmax_period = 2\n"))
    assert low.cycles is not None and low.cycles.max_period == 2


def test_a_later_rule_is_shadowed_only_when_provably_covered(tmp_path: Path) -> None:
    shadowed = (
        '[[tools]]\nmatch = "a*"\nmax_repeats = 2\n[[tools]]\nmatch = "ab"\nmax_repeats = 3\n'
    )
    _, warnings = check_policy(_write(tmp_path, shadowed))
    assert [w.line for w in warnings] == [5]  # the later rule's match
    # "?" matches one character, not the "*" of a later glob: a? does not cover a*
    for earlier, later in (("a?", "a*"), ("a[bc]", "ab"), ("ab", "a[bc]")):
        text = f'[[tools]]\nmatch = "{earlier}"\nmax_repeats = 2\n'
        text += f'[[tools]]\nmatch = "{later}"\nmax_repeats = 3\n'
        _, warnings = check_policy(_write(tmp_path, text))
        assert warnings == [], (earlier, later)
