"""One engine under a policy: filter, replay --verdicts, the hook (each dialect, its real
entry point and SQLite store), its log replayed, the MCP proxy's --log and the recorded
traffic replayed give the same verdict, rule, limit, count and hash prefix, call by call,
with a policy that uses every feature (a per-tool limit, an exemption, cycles, stop,
warn_at: the hook's warning answer in each dialect, the warn marker on every line)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_batch import CliBatch
from conftest import ROOT, cli_env, run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp_reference import equal_until, proxy_log
from test_engine_equivalence import (
    AGENTS,
    event_line,
    hook_input,
    logged_verdicts,
    mcp_request,
    verdict_lines,
)

from loop_brake_cli.hook.runner import main as hook_main

CANARY = "canary-policy-engine-91c2"
TEMPLATE = """\
warn_at = {warn_at}
[[tools]]
match = "poll*"
max_repeats = 4
[[tools]]
match = ["browser_scroll*", "BashOutput"]
exempt = true
[cycles]
max_period = 3
max_repeats = 2
[stop]
after_denials = 3
"""
POLICY = TEMPLATE.split("\n", 1)[1]
"""Every feature but warn_at, as other test files import it (their answers are no warnings)."""
TOOLS = ["search", "read", "poll_status", "search", "read", "browser_scroll_down", "BashOutput"]
ARGS = ['{"q":1}', '{"q":2}', "{}", '{"secret":"' + CANARY + '"}']
SESSIONS = ["s1", "s1", "s2"]
COMPARED = (
    "verdict",
    "toolName",
    "sessionId",
    "callId",
    "count",
    "maxRepeats",
    "hashPrefix",
    "rule",
    "limit",
    "exempt",
    "match",
    "cycleRepeats",
    "denials",
    "duplicate",
    "message",
    "warnAt",
    "warning",
)


@st.composite
def calls(draw: st.DrawFn) -> list[dict]:
    """Sequences rich in streaks, cycles of 2 and 3, exempt calls and long denial runs."""
    pool = [
        {"tool": draw(st.sampled_from(TOOLS)), "args": draw(st.sampled_from(ARGS))}
        for _ in range(3)
    ]
    out: list[dict] = []
    for _ in range(draw(st.integers(4, 24))):
        choice = draw(st.integers(0, 5))
        if len(out) >= 2 and choice < 2:
            call = dict(out[-2])  # a cycle of two
        elif len(out) >= 3 and choice < 3:
            call = dict(out[-3])  # a cycle of three
        elif out and choice < 4:
            call = dict(out[-1])  # a streak
        else:
            call = dict(draw(st.sampled_from(pool)))
            call["session"] = draw(st.sampled_from(SESSIONS))
        call.setdefault("session", "s1")
        id_kind = draw(st.integers(0, 9))  # mostly fresh ids; sometimes none, or the last one
        if id_kind == 9 and out:
            call["id"] = out[-1]["id"]
        else:
            call["id"] = None if id_kind == 8 else (len(out) if id_kind == 7 else f"c{len(out)}")
        call["as_string"] = False
        out.append(call)
    return out


def _fixed() -> list[dict]:
    """Every feature once, in order: a per-tool limit, an exemption, a cycle, a stop, a
    pass that resets the denials, a duplicate of a stop."""
    names = [
        ("poll_status", "{}"),
    ] * 5 + [("browser_scroll_down", '{"q":1}')] * 4
    names += [("search", '{"q":1}'), ("read", '{"q":2}')] * 3
    names += [("search", "{}")] * 6 + [("read", "{}")] + [("search", "{}")] * 4
    out = [
        {"tool": tool, "args": args, "session": "s1", "id": f"c{i}", "as_string": False}
        for i, (tool, args) in enumerate(names)
    ]
    out.append(dict(out[-1]))  # the same call id: a duplicate
    return out


FIXED = _fixed()


def compared(verdict: dict) -> tuple:
    return tuple(verdict.get(key) for key in COMPARED)


def filter_verdicts(tmp: Path, lines: list[str], policy: str) -> list[dict]:
    path = tmp / "events.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    done = run_cli("filter", "--policy", policy, str(path), env=cli_env(LOOP_BRAKE_POLICY=""))
    assert done.returncode == 0, done.stderr
    assert CANARY.encode() not in done.stdout + done.stderr
    return verdict_lines(done.stdout)


def replay_verdicts(path: Path, fmt: str, policy: str) -> bytes:
    done = run_cli("replay", "--verdicts", "--format", fmt, "--policy", policy, str(path))
    assert done.returncode == 0, done.stderr
    assert CANARY.encode() not in done.stdout + done.stderr
    return done.stdout


WARN_AT = st.sampled_from([2, 1, 3, None])  # drawn: a warning before, at and past the limit


def policy_text(warn_at: int | None = 2) -> str:
    """TEMPLATE with this ``warn_at`` (None: without the key)."""
    text = TEMPLATE.format(warn_at=warn_at)
    return text if warn_at is not None else text.split("\n", 1)[1]


def write_policy(folder: Path, warn_at: int | None = 2) -> Path:
    """The policy as ``folder/policy.toml``."""
    policy = folder / "policy.toml"
    policy.write_text(policy_text(warn_at))
    return policy


def run_hook(agent: str, inputs: list[str], tmp: Path, policy: str) -> list[str]:
    state, log = tmp / f"{agent}.db", tmp / f"{agent}.log"
    decisions = []
    for text in inputs:
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", agent, "--policy", policy, "--state", str(state), "--log", str(log)]
        assert hook_main(argv, io.BytesIO(text.encode()), out, err) == 0, err.getvalue()
        assert CANARY not in out.getvalue().decode() + err.getvalue()
        answer = json.loads(out.getvalue()) if out.getvalue() else None
        if answer is None:
            decisions.append("pass")
        elif set(answer) == {"systemMessage"} or "additionalContext" in answer.get(
            "hookSpecificOutput", {}
        ):
            decisions.append("warn")  # policy warn_at: the call runs, the agent is told
        elif answer.get("continue") is False:
            decisions.append("stop")
        else:
            decisions.append("deny")
    assert CANARY.encode() not in state.read_bytes()
    return decisions


SETTINGS = settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_hook_dialects_and_their_logs_equal_filter_under_a_policy(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("policy-runs"),
        env=cli_env(LOOP_BRAKE_POLICY=""),
        secrets=(CANARY,),
    )
    cases = []

    @SETTINGS
    @given(sequence=calls(), warn_at=WARN_AT)
    @example(sequence=FIXED, warn_at=2)
    def draw(sequence: list[dict], warn_at: int | None) -> None:
        tmp = tmp_path_factory.mktemp("policy-hooks")
        policy = batch.file(policy_text(warn_at), ".toml")
        runs = []
        for agent in AGENTS:
            plain = [call if agent != "gemini" else {**call, "id": None} for call in sequence]
            lines = [event_line(call, call["session"]) for call in plain]
            events = batch.file("".join(line + "\n" for line in lines))
            reference = batch.add(("filter", "--policy", policy), events)
            inputs = [hook_input(agent, call) for call in sequence]
            log = batch.file("".join(line + "\n" for line in inputs))
            replayed = batch.add(
                ("replay", "--verdicts", "--format", "claude-hooks", "--policy", policy), log
            )
            decisions = run_hook(agent, inputs, tmp, policy)
            denied = logged_verdicts(tmp / f"{agent}.log")
            runs.append((agent, reference, replayed, decisions, denied))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        for agent, reference_run, replayed, decisions, denied in runs:
            reference = batch.verdicts(reference_run)
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            expected = [v["verdict"] for v in reference]
            if agent == "cursor":  # no stop form (a stop is a denial), no warning form (silent)
                expected = ["deny" if kind == "stop" else kind for kind in expected]
            else:  # the others answer a warned call with their warning field
                marks = [v.get("warn") for v in reference]
                expected = ["warn" if w else k for w, k in zip(marks, expected, strict=True)]
            assert decisions == expected, (agent, sequence)
            assert [compared(v) for v in denied] == [
                compared(v) for v in reference if v["verdict"] != "pass" or v.get("warn")
            ], (agent, sequence)


@SETTINGS
@given(sequence=calls(), warn_at=WARN_AT)
@example(sequence=FIXED, warn_at=2)
def test_proxy_log_and_traffic_replay_equal_filter_under_a_policy(
    tmp_path_factory: pytest.TempPathFactory, sequence: list[dict], warn_at: int | None
) -> None:
    tmp = tmp_path_factory.mktemp("policy-mcp")
    policy = write_policy(tmp, warn_at)
    requests = [mcp_request(call, number) for number, call in enumerate(sequence, 1)]
    for number, call in enumerate(sequence, 1):
        if call["id"] is None:
            call["id"] = f"r{number}"
    reference = filter_verdicts(tmp, [event_line(call, "mcp#1") for call in sequence], str(policy))
    recorded = tmp / "traffic.log"
    recorded.write_text("".join(f"STDIN: {line}\n" for line in requests), encoding="utf-8")
    replay_bytes = replay_verdicts(recorded, "mcp", str(policy))
    assert [compared(v) for v in verdict_lines(replay_bytes)] == [compared(v) for v in reference]
    log = tmp / "proxy.log"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--log", str(log)]
    command += ["--policy", str(policy), "--", sys.executable, str(ROOT / "tests/echo_server.py")]
    payload = "".join(line + "\n" for line in requests).encode()
    done = subprocess.run(command, input=payload, capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert CANARY.encode() not in done.stderr + log.read_bytes()  # stdout: the server echoes
    expected, diverges = proxy_log(requests, None, str(policy))
    assert log.read_bytes() == expected  # but a reused id of a denied call counts (36.3)
    assert equal_until(expected, replay_bytes, diverges)
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    denied = [a for a in answers if a.get("result", {}).get("isError")]
    assert len(denied) == sum(v["verdict"] != "pass" for v in reference)


def test_the_fixed_sequence_gives_the_documented_verdicts(tmp_path: Path) -> None:
    policy = write_policy(tmp_path)
    lines = [event_line(call, call["session"]) for call in FIXED]
    got = filter_verdicts(tmp_path, lines, str(policy))
    kinds = [(v["verdict"], v["rule"]) for v in got]
    assert kinds[:5] == [("pass", "streak")] * 3 + [("deny", "streak")] * 2
    assert [v.get("warnAt") for v in got[:5]] == [None, 2, 2, None, None]  # warn before deny
    assert got[3]["limit"] == 4 and got[3]["match"] == "poll*"
    assert all(v["exempt"] and v["verdict"] == "pass" for v in got[5:9])
    assert kinds[9:15] == [("pass", "streak")] * 3 + [("deny", "cycle")] * 2 + [("stop", "stop")]
    assert got[12]["cycleRepeats"] == 2 and got[12]["limit"] == 2
    # a pass resets the denials: the next streak's 3rd denial is the stop again
    assert (
        kinds[15:21] == [("pass", "streak")] * 2 + [("deny", "streak")] * 2 + [("stop", "stop")] * 2
    )
    assert kinds[21] == ("pass", "streak")
    assert kinds[22:] == [("pass", "streak")] * 2 + [("deny", "streak")] * 2 + [("deny", "streak")]
    assert got[-1]["duplicate"] and got[-1]["denials"] == 2


def test_proxy_bad_policy_is_exit_2_before_the_server_starts(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("[cycles]\nmax_period = 1\n")
    marker = tmp_path / "started"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--policy", str(bad), "--"]
    command += ["touch", str(marker)]
    done = subprocess.run(command, input=b"", capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 2
    assert f"{bad}:2:1: max_period must be an integer of at least 2".encode() in done.stderr
    assert not marker.exists()
