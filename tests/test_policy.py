"""Policies (issue 13): the file, its discovery, and the decisions of ``streak.policy_step``
as filter, replay and the library give them. The hook and the proxy: test_policy_engine.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, run_cli

from loop_brake_cli.core.brake import DISCOVER, LoopBrake, LoopBrakeError, LoopBrakeStop
from loop_brake_cli.core.policy import (
    PolicyError,
    check_policy,
    find_policy_file,
    load_policy,
)

CANARY = "canary-policy-5e1f-secret"
FULL = """\
[[tools]]
match = "write_stdin"
max_repeats = 20
[[tools]]
match = ["BashOutput", "browser_scroll*"]
exempt = true
[cycles]
max_period = 4
max_repeats = 3
[stop]
after_denials = 5
"""


def write(tmp: Path, text: str, name: str = "policy.toml") -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def verdicts(policy, calls, max_repeats=3):
    brake = LoopBrake(max_repeats, policy=policy)
    return [brake.check(tool, args, session_id="s", call_id=cid) for tool, args, cid in calls]


def kinds(vs) -> list[str]:
    return ["stop" if v.stop else "deny" if v.denied else "pass" for v in vs]


# -- the file ------------------------------------------------------------------


def test_errors_are_located_with_did_you_mean(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[[tools]]\nmatch = "a*"\nmax_repeat = 3\n\n[[tools]]\nmatch = "b"\nmax_repeats = 0\n'
        "[cycle]\nmax_period = 2\n[stop]\nafter_denials = -1\n",
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    text = str(caught.value)
    assert f'{path}:3:1: unknown key "max_repeat" in [[tools]] (did you mean max_repeats?)' in text
    assert f"{path}:7:1: max_repeats must be an integer of at least 1, not 0" in text
    assert f'{path}:8:1: unknown key "cycle" (did you mean cycles?)' in text
    assert f"{path}:11:1: after_denials must be an integer of at least 1, not -1" in text


def test_toml_syntax_error_is_located(tmp_path: Path) -> None:
    path = write(tmp_path, "[[tools]]\nmatch = \n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}:2:")
    assert "not valid TOML" in str(caught.value)


def test_shadowed_rule_is_a_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[[tools]]\nmatch = "browser_*"\nmax_repeats = 5\n'
        '[[tools]]\nmatch = ["browser_scroll", "browser_s*"]\nexempt = true\n'
        '[[tools]]\nmatch = "browser_?"\nmax_repeats = 9\n',
    )
    policy, warnings = check_policy(path)
    assert len(policy.tools) == 3
    assert [str(w) for w in warnings] == [
        f"{path}:5:1: warning: this rule can never match: the earlier rule at line 1 "
        "(browser_*) matches every tool it names",
        f"{path}:8:1: warning: this rule can never match: the earlier rule at line 1 "
        "(browser_*) matches every tool it names",
    ]


def test_rule_needs_a_limit_or_exempt_and_not_both(tmp_path: Path) -> None:
    path = write(
        tmp_path, '[[tools]]\nmatch = "a"\n[[tools]]\nmatch="b"\nexempt=true\nmax_repeats=2\n'
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert "1:1: a [[tools]] rule needs max_repeats or exempt = true" in str(caught.value)
    assert "6:1: an exempt rule is never denied: drop max_repeats" in str(caught.value)


def test_pyproject_table(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[project]\nname = "x"\n[[tool.loop-brake.tools]]\nmatch = "poll"\nmax_repeats = 9\n'
        "[tool.loop-brake.stop]\nafter_denials = 2\n[tool.other]\nmax_repeat = 1\n",
        "pyproject.toml",
    )
    policy = load_policy(path)
    assert policy.tools[0].max_repeats == 9 and policy.stop.after_denials == 2
    bad = write(tmp_path, "[tool.loop-brake.stop]\nafter_denial = 2\n", "pyproject.toml")
    with pytest.raises(PolicyError, match=r"pyproject.toml:2:1: unknown key \"after_denial\""):
        load_policy(bad)


def test_discovery_order(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    config = tmp_path / "config"
    (config / "loop-brake").mkdir(parents=True)
    user = write(config / "loop-brake", FULL)
    env = {"XDG_CONFIG_HOME": str(config)}
    assert find_policy_file(None, env, str(deep)) == user
    (tmp_path / ".loop-brake.toml").write_text(FULL)  # above the repository root: not seen
    assert find_policy_file(None, env, str(deep)) == user
    (repo / "pyproject.toml").write_text('[project]\nname="x"\n')  # no table: passed over
    assert find_policy_file(None, env, str(deep)) == user
    (repo / "pyproject.toml").write_text("[tool.loop-brake.stop]\nafter_denials = 3\n")
    assert find_policy_file(None, env, str(deep)) == str(repo / "pyproject.toml")
    (repo / "a" / ".loop-brake.toml").write_text(FULL)
    assert find_policy_file(None, env, str(deep)) == str(repo / "a" / ".loop-brake.toml")
    assert find_policy_file(None, {**env, "LOOP_BRAKE_POLICY": "/x.toml"}, str(deep)) == "/x.toml"
    assert find_policy_file(None, {**env, "LOOP_BRAKE_POLICY": ""}, str(deep)) is None
    assert find_policy_file("/given.toml", {**env, "LOOP_BRAKE_POLICY": "/x"}, str(deep)) == (
        "/given.toml"
    )


# -- the decisions ---------------------------------------------------------------


def test_per_tool_limit_and_global_limit(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))
    vs = verdicts(policy, [("write_stdin", {"s": 1}, None)] * 21)
    assert kinds(vs) == ["pass"] * 19 + ["deny"] * 2
    assert vs[19].max_repeats == 20 and vs[19].rule == "streak" and vs[19].limit == 20
    assert vs[19].match == "write_stdin" and "limit 20" in vs[19].message
    vs = verdicts(policy, [("grep", {}, None)] * 3)
    assert kinds(vs) == ["pass", "pass", "deny"] and vs[2].limit == 3


def test_exempt_never_denied_and_ends_other_streaks(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))
    calls = [("a", {}, None)] * 2 + [("browser_scroll_down", {}, None)] * 5 + [("a", {}, None)]
    vs = verdicts(policy, calls)
    assert kinds(vs) == ["pass"] * 8
    assert all(v.exempt and v.limit is None for v in vs[2:7]) and vs[6].count == 5
    assert vs[7].count == 1


def test_cycles_of_period_two_three_four(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))
    a, b, c, d = (
        ("grep", {"q": 1}, None),
        ("grep", {"q": 2}, None),
        ("read", {}, None),
        (
            "ls",
            {},
            None,
        ),
    )
    vs = verdicts(policy, [a, b] * 4)
    assert kinds(vs) == ["pass"] * 5 + ["deny"] * 3
    assert vs[5].rule == "cycle" and vs[5].limit == 3 and vs[5].cycle_repeats == 3
    assert vs[5].message.startswith('loop brake: calls "grep", "grep" repeated 3 times in a row')
    vs = verdicts(policy, [a, b, c] * 3)
    assert kinds(vs) == ["pass"] * 8 + ["deny"]
    assert [tool for tool, _ in vs[8].cycle] == ["grep", "grep", "read"]
    vs = verdicts(policy, [a, b, c, d] * 3)
    assert kinds(vs) == ["pass"] * 11 + ["deny"]
    vs = verdicts(policy, [a, b, c, d, ("x", {}, None)] * 3)  # period 5 > max_period
    assert kinds(vs) == ["pass"] * 15
    vs = verdicts(policy, [a, a, b] * 3)  # a cycle may repeat a call inside it
    assert kinds(vs)[-1] == "deny"


def test_streak_is_never_a_cycle_and_an_exempt_call_breaks_none(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL.replace("max_repeats = 20", "max_repeats = 50")))
    vs = verdicts(policy, [("write_stdin", {}, None)] * 30)
    assert kinds(vs) == ["pass"] * 30
    poll = ("BashOutput", {}, None)
    vs = verdicts(policy, [("grep", {}, None), poll] * 5)
    assert kinds(vs) == ["pass"] * 10  # a cycle through an exempt call is not denied


def test_stop_after_consecutive_denials_and_reset(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))
    x = ("x", {}, None)
    vs = verdicts(policy, [x] * 8)
    assert kinds(vs) == ["pass", "pass", "deny", "deny", "deny", "deny", "stop", "stop"]
    assert vs[6].rule == "stop" and vs[6].limit == 5 and vs[6].denials == 5 and vs[6].denied
    assert vs[6].message.startswith("loop brake: 5 calls in a row were denied in this session")
    vs = verdicts(policy, [x] * 6 + [("y", {}, None)] + [x] * 4)
    assert kinds(vs)[6] == "pass" and vs[-1].denials == 2 and not vs[-1].stop


def test_duplicate_call_id_gets_the_counted_calls_decision(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))
    a, b = ("grep", {"q": 1}), ("grep", {"q": 2})
    calls = [(*a, "1"), (*b, "2"), (*a, "3"), (*b, "4"), (*a, "5"), (*b, "6"), (*b, "6")]
    vs = verdicts(policy, calls)
    assert kinds(vs) == ["pass"] * 5 + ["deny", "deny"]
    assert vs[6].duplicate and vs[6].rule == "cycle" and vs[6].denials == 1


def test_library_enforce_and_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_BRAKE_POLICY", write(tmp_path, FULL))
    assert LoopBrake(3).policy is None  # discovery is an explicit opt-in (issue 23)
    brake = LoopBrake(3, policy=DISCOVER)
    assert brake.policy is not None and brake.policy_path.endswith("policy.toml")
    for _ in range(19):
        brake.enforce("write_stdin", {"x": 1}, session_id="s")
    with pytest.raises(LoopBrakeError):
        brake.enforce("write_stdin", {"x": 1}, session_id="s")
    monkeypatch.setenv("LOOP_BRAKE_POLICY", "")
    assert LoopBrake(3, policy=DISCOVER).policy is None
    assert LoopBrake(3, policy=None).policy is None


def test_enforce_raises_loop_brake_stop_at_a_stop(tmp_path: Path) -> None:
    """A stop is a ``LoopBrakeStop`` (a ``LoopBrakeError``): a host tells it from a denial."""
    brake = LoopBrake(2, policy=write(tmp_path, "[stop]\nafter_denials = 2\n"))
    brake.enforce("a", {}, session_id="s")
    with pytest.raises(LoopBrakeError) as denied:
        brake.enforce("a", {}, session_id="s")
    assert not isinstance(denied.value, LoopBrakeStop)
    with pytest.raises(LoopBrakeStop) as stopped:
        brake.enforce("a", {}, session_id="s")
    assert stopped.value.verdict.stop and stopped.value.count == 3


def test_empty_policy_is_no_policy(tmp_path: Path) -> None:
    brake = LoopBrake(3, policy=write(tmp_path, "# nothing yet\n"))
    assert brake.policy is None and brake.policy_path is not None
    assert brake.check("a", {}).rule is None


# -- filter and replay -------------------------------------------------------------

SAMPLES = sorted((ROOT / "samples").glob("*.jsonl"))


def _filter(*args: str, input: bytes | None = None, **env: str):
    return run_cli("filter", *args, input=input, env=cli_env(LOOP_BRAKE_POLICY="", **env))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_without_or_with_an_empty_policy_filter_is_byte_identical(
    tmp_path: Path, sample: Path
) -> None:
    empty = write(tmp_path, "")
    plain = _filter("-m", "2", str(sample))
    for extra in (("--policy", empty), ()):
        other = run_cli("filter", "-m", "2", *extra, str(sample), env=cli_env(LOOP_BRAKE_POLICY=""))
        assert other.stdout == plain.stdout and other.returncode == plain.returncode
    exact = run_cli(
        "filter",
        "-m",
        "2",
        "--policy",
        empty,
        str(sample),
        env=cli_env(LOOP_BRAKE_POLICY="", LOOP_BRAKE_EXACT="1"),
    )
    assert exact.stdout == plain.stdout
    replayed = run_cli(
        "replay",
        "--verdicts",
        "--format",
        "events",
        "-m",
        "2",
        "--policy",
        empty,
        str(sample),
        env=cli_env(LOOP_BRAKE_POLICY=""),
    )
    assert replayed.stdout == plain.stdout


def test_filter_under_a_policy_says_the_rule_on_both_paths(tmp_path: Path) -> None:
    policy = write(tmp_path, FULL)
    line = '{"tool":"grep","args":{"secret":"%s","q":%d},"sessionId":"s"}\n'
    data = "".join(line % (CANARY, i % 2) for i in range(12)).encode()
    fast = _filter("--policy", policy, "--summary", input=data)
    exact = _filter("--policy", policy, "--summary", input=data, LOOP_BRAKE_EXACT="1")
    assert fast.stdout == exact.stdout and fast.returncode == 0
    out = [json.loads(x) for x in fast.stdout.splitlines()]
    assert [v["verdict"] for v in out] == ["pass"] * 5 + ["deny"] * 4 + ["stop"] * 3
    assert out[5]["rule"] == "cycle" and out[5]["cycleRepeats"] == 3 and out[5]["limit"] == 3
    assert out[9]["rule"] == "stop" and out[9]["denials"] == 5 and out[9]["limit"] == 5
    assert CANARY.encode() not in fast.stdout + fast.stderr
    assert f"policy: {policy}".encode() in fast.stderr


def test_bad_policy_is_exit_2_before_any_input(tmp_path: Path) -> None:
    bad = write(tmp_path, "[stop]\nafter_denial = 1\n")
    for command in (("filter",), ("replay", str(ROOT / "samples")), ("replay", "--json", "-")):
        done = run_cli(*command, "--policy", bad, input=b'{"tool":"a"}\n')
        assert done.returncode == 2, command
        assert done.stdout in (b"",) or b'"status": 2' in done.stdout
        if b"--json" not in " ".join(command).encode():
            assert f'{bad}:2:1: unknown key "after_denial" in [stop]'.encode() in done.stderr
    done = run_cli("filter", input=b"", env=cli_env(LOOP_BRAKE_POLICY=bad))
    assert done.returncode == 2 and b"did you mean after_denials?" in done.stderr


def test_replay_policy_summary_and_json(tmp_path: Path) -> None:
    policy = write(tmp_path, FULL)
    sample = str(ROOT / "samples" / "stuck-agent.jsonl")
    done = run_cli(
        "replay", "--json", "--policy", policy, sample, env=cli_env(LOOP_BRAKE_POLICY="")
    )
    doc = json.loads(done.stdout)
    assert doc["policy"] == policy
    plain = json.loads(
        run_cli("replay", "--json", sample, env=cli_env(LOOP_BRAKE_POLICY="")).stdout
    )
    assert "policy" not in plain
    text = run_cli("replay", "--policy", policy, sample, env=cli_env(LOOP_BRAKE_POLICY=""))
    assert f"policy: {policy}".encode() in text.stdout


CODEX_POLLS = (
    ROOT / "tests/fixtures/codex/real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
)


def test_compare_policy_on_the_codex_write_stdin_polls(tmp_path: Path) -> None:
    policy = write(tmp_path, '[[tools]]\nmatch = "write_stdin"\nmax_repeats = 20\n')
    done = run_cli("replay", "--compare-policy", policy, "--json", str(CODEX_POLLS))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    (session,) = doc["sessions"]
    assert session["seedDeniedTools"] == {"write_stdin": session["seedDenied"]}
    assert session["seedDenied"] > 0 and session["policyDenied"] == 0
    text = run_cli("replay", "--compare-policy", policy, str(CODEX_POLLS)).stdout.decode()
    assert 'tool "write_stdin": seed denies' in text or "'write_stdin'" in text


def test_check_config_policy(tmp_path: Path) -> None:
    good = write(tmp_path, FULL)
    done = run_cli("check-config", "--policy", good)
    assert done.returncode == 0
    assert b"tools (line 1): write_stdin -> max_repeats 20" in done.stdout
    doc = json.loads(run_cli("check-config", "--policy", good, "--json").stdout)
    assert doc["status"] == 0 and doc["cycles"] == {"maxPeriod": 4, "maxRepeats": 3}
    shadow = write(
        tmp_path, '[[tools]]\nmatch="*"\nmax_repeats=5\n[[tools]]\nmatch="x"\nexempt=true\n'
    )
    done = run_cli("check-config", "--policy", shadow, "--strict")
    assert (
        done.returncode == 1
        and f"{shadow}:5:1: warning: this rule can never match".encode() in (done.stderr)
    )
    bad = write(tmp_path, "[[tools]]\nmatch = 'a'\nmax_repeat = 3\n")
    done = run_cli("check-config", "--policy", bad, "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 2 and doc["errors"][0]["line"] == 3
    assert "did you mean max_repeats?" in doc["errors"][0]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "--policy"],
        ["replay", "--json", "--policy"],
        ["replay", "--verdicts", "--policy"],
        ["replay", "--compare-policy"],
        ["replay", "--json", "--compare-policy"],
    ],
    ids=lambda a: " ".join(a),
)
def test_policy_replays_never_print_an_argument(tmp_path: Path, args: list[str]) -> None:
    """Cycle, stop and compare summaries name tools and hash prefixes, never arguments."""
    policy = write(tmp_path, FULL)
    line = '{"tool":"grep","args":{"secret":"%s","q":%d},"sessionId":"s"}\n'
    log = tmp_path / "events.jsonl"
    log.write_text("".join(line % (CANARY, i % 2) for i in range(12)))
    result = run_cli(*args, policy, str(log), env=cli_env(LOOP_BRAKE_POLICY=""))
    assert result.returncode in (0, 1), result.stderr
    assert b"grep" in result.stdout + result.stderr
    assert CANARY.encode() not in result.stdout + result.stderr


def test_compare_policy_says_what_each_rule_changes(tmp_path: Path) -> None:
    """Per session the policy's first denial against the seed's, and per call the
    denials of one side alone and the warnings (issue 29, item 6)."""
    events = tmp_path / "e.jsonl"
    lines = []
    # s1: A B A C A -- the window denies the third A, the seed never denies
    for i, tool in enumerate("ABACA"):
        lines.append(
            {"tool": tool, "args": {"secret": "CANARY-cmp-9"}, "sessionId": "s1", "callId": f"a{i}"}
        )
    # s2: x x x -- both deny the third; the warn policy warns at the second
    for i in range(3):
        lines.append({"tool": "x", "args": {}, "sessionId": "s2", "callId": f"b{i}"})
    # s3: y y y y -- the policy lets y run (exempt): seed only
    for i in range(4):
        lines.append({"tool": "y", "args": {}, "sessionId": "s3", "callId": f"c{i}"})
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    policy = write(
        tmp_path,
        'warn_at = 2\n[[tools]]\nmatch = "y"\nexempt = true\n'
        "[window]\ncalls = 5\nmax_repeats = 3\n",
    )
    done = run_cli("replay", "--compare-policy", policy, "--json", str(events))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [s["change"] for s in doc["sessions"]] == ["policy only", "same", "seed only"]
    assert doc["changes"] == {
        "earlier": 0,
        "later": 0,
        "same": 1,
        "policyOnly": 1,
        "seedOnly": 1,
        "none": 0,
    }
    totals = doc["totals"]
    assert (totals["policyOnlyDenied"], totals["seedOnlyDenied"]) == (1, 2)
    assert totals["policyWarned"] == 1  # s2's second x (A B A is no streak; y is exempt)
    text = run_cli("replay", "--compare-policy", policy, str(events)).stdout.decode()
    assert "by session: 1 same, 1 policy only, 1 seed only\n" in text
    calls = "calls: 1 denied by the policy alone (saved), 2 denied by the seed alone (let run)"
    assert calls + ", 1 warned\n" in text
    assert "CANARY-cmp-9" not in done.stdout.decode() + text
