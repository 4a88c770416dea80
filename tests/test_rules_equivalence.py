"""One engine for ``[window]`` and ``[same_error]`` (issue 29): every front-end agrees.

``[window]`` needs calls only: drawn sequences (cycles of two and three, streaks,
exempt calls, repeated call ids) under a policy that also has a per-tool limit, an
exemption, cycles and a stop are judged by ``filter`` (the reference), the hook in
each of the four dialects and its log replayed, ``mcp-proxy``'s ``--log`` and its
traffic replayed, and ``filter`` and the hook counting in a real Redis.

``[same_error]`` needs results: drawn calls with changing arguments, most followed
by a result that is the same error, another error or a success, are judged by
``filter`` on event lines with result lines, the hook (pre-tool and post-tool
events of each dialect) and its log replayed; the MCP proxy runs in front of the
SDK server whose tool fails (``isError``), with its traffic replayed and filtered.
Every result and argument holds a canary that no output, log or state file holds.
"""

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
from test_policy_engine import CANARY
from test_policy_engine import POLICY as FEATURES
from test_policy_engine import calls as policy_calls
from test_progress_equivalence import SECRET, event_lines, proxy_session, traffic_events
from test_progress_equivalence import hook_input as result_hook_input
from test_progress_equivalence import replay_verdicts as result_replay
from test_progress_equivalence import run_hook as result_run_hook

from loop_brake_cli.hook.runner import main as hook_main

WINDOW = FEATURES.replace("warn_at = {warn_at}\n", "").replace(
    "[stop]", "[window]\ncalls = 6\nmax_repeats = 3\n[stop]"
)
SAME_ERROR = "[same_error]\nafter = 2\n"
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
    "window",
    "seen",
    "errors",
    "denials",
    "duplicate",
    "message",
)
SETTINGS = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def compared(verdict: dict) -> tuple:
    return tuple(verdict.get(key) for key in COMPARED)


def write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args: str) -> list[dict]:
    done = run_cli(*args, env=cli_env(LOOP_BRAKE_POLICY=""))
    assert done.returncode == 0, done.stderr
    for secret in (CANARY, SECRET):
        assert secret.encode() not in done.stdout + done.stderr
    return verdict_lines(done.stdout)


def hook_decisions(agent: str, inputs: list[str], tmp: Path, policy: str, store: str) -> list:
    """Each input through the hook's real entry point; None for a post-tool event."""
    log = tmp / f"{agent}-hook.log"
    out_list: list[str | None] = []
    for text in inputs:
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", agent, "--policy", policy, "--log", str(log)]
        argv += ["--store" if "://" in store else "--state", store]
        assert hook_main(argv, io.BytesIO(text.encode()), out, err) == 0, err.getvalue()
        said = out.getvalue().decode() + err.getvalue()
        assert CANARY not in said and SECRET not in said
        post = any(f'"{e}"' in text for e in ("PostToolUse", "AfterTool", "postToolUse"))
        if post or "afterMCPExecution" in text or "PostToolUseFailure" in text:
            assert said == ""
            out_list.append(None)
        else:
            out_list.append("deny" if said else "pass")
    return out_list


# -- [window] --------------------------------------------------------------------------


def _spaced() -> list[dict]:
    """A, B, A, C, A: no streak and no cycle, the window's third sighting."""
    return [
        {"tool": tool, "args": args, "session": "s1", "id": f"c{n}", "as_string": False}
        for n, (tool, args) in enumerate(
            [("search", '{"q":1}'), ("read", '{"q":2}'), ("search", '{"q":1}')]
            + [("read", "{}"), ("search", '{"q":1}')]
        )
    ]


def test_window_hook_dialects_and_their_logs_equal_filter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("window-runs"),
        env=cli_env(LOOP_BRAKE_POLICY=""),
        secrets=(CANARY, SECRET),
    )
    policy = batch.file(WINDOW, ".toml")
    cases = []

    @SETTINGS
    @given(sequence=policy_calls())
    @example(sequence=_spaced())
    def draw(sequence: list[dict]) -> None:
        tmp = tmp_path_factory.mktemp("window-hooks")
        runs = []
        for agent in AGENTS:
            plain = [call if agent != "gemini" else {**call, "id": None} for call in sequence]
            events = batch.file("".join(event_line(c, c["session"]) + "\n" for c in plain))
            reference = batch.add(("filter", "--policy", policy), events)
            inputs = [hook_input(agent, call) for call in sequence]
            logged = batch.file("".join(line + "\n" for line in inputs))
            hooks = ("replay", "--verdicts", "--format", "claude-hooks", "--policy", policy)
            replayed = batch.add(hooks, logged)
            state = str(tmp / f"{agent}.db")
            decisions = hook_decisions(agent, inputs, tmp, policy, state)
            assert CANARY.encode() not in Path(state).read_bytes()
            hook_log = tmp / f"{agent}-hook.log"
            denied = logged_verdicts(hook_log)
            hook_log.unlink(missing_ok=True)
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
            expected = ["pass" if v["verdict"] == "pass" else "deny" for v in reference]
            assert decisions == expected, (agent, sequence)
            assert [compared(v) for v in denied] == [
                compared(v) for v in reference if v["verdict"] != "pass"
            ], (agent, sequence)
        if sequence == _spaced():
            assert [(v["verdict"], v["rule"]) for v in reference] == [("pass", "streak")] * 4 + [
                ("deny", "window")
            ]
            window = (reference[4]["window"], reference[4]["seen"], reference[4]["limit"])
            assert window == (6, 3, 3)


@SETTINGS
@given(sequence=policy_calls())
@example(sequence=_spaced())
def test_window_proxy_log_and_traffic_replay_equal_filter(
    tmp_path_factory: pytest.TempPathFactory, sequence: list[dict]
) -> None:
    tmp = tmp_path_factory.mktemp("window-mcp")
    policy = write(tmp, "policy.toml", WINDOW)
    requests = [mcp_request(call, number) for number, call in enumerate(sequence, 1)]
    for number, call in enumerate(sequence, 1):
        if call["id"] is None:
            call["id"] = f"r{number}"
    events = write(tmp, "events.jsonl", "".join(event_line(c, "mcp#1") + "\n" for c in sequence))
    reference = run("filter", "--policy", policy, events)
    recorded = write(tmp, "traffic.log", "".join(f"STDIN: {line}\n" for line in requests))
    replayed = run_cli("replay", "--verdicts", "--format", "mcp", "--policy", policy, recorded)
    assert [compared(v) for v in verdict_lines(replayed.stdout)] == [compared(v) for v in reference]
    log = tmp / "proxy.log"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--log", str(log)]
    command += ["--policy", policy, "--", sys.executable, str(ROOT / "tests/echo_server.py")]
    payload = "".join(line + "\n" for line in requests).encode()
    done = subprocess.run(command, input=payload, capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert CANARY.encode() not in done.stderr + log.read_bytes()
    expected, diverges = proxy_log(requests, None, policy)
    assert log.read_bytes() == expected  # but a reused id of a denied call counts (36.3)
    assert equal_until(expected, replayed.stdout, diverges)


@settings(SETTINGS, max_examples=4)
@given(sequence=policy_calls())
@example(sequence=_spaced())
def test_window_in_redis_equals_filter(
    tmp_path_factory: pytest.TempPathFactory, redis_server, sequence: list[dict]
) -> None:
    """filter and the hook counting in one Redis give in-memory filter's verdicts."""
    tmp = tmp_path_factory.mktemp("window-redis")
    url = redis_server.url + "?socket_timeout=5&socket_connect_timeout=5"
    policy = write(tmp, "policy.toml", WINDOW)
    events = write(
        tmp, "events.jsonl", "".join(event_line(c, c["session"]) + "\n" for c in sequence)
    )
    reference = run("filter", "--policy", policy, events)
    redis_server.command("FLUSHALL")
    shared = run("filter", "--policy", policy, "--store", url, events)
    assert [compared(v) for v in shared] == [compared(v) for v in reference]
    redis_server.command("FLUSHALL")
    inputs = [hook_input("claude-code", call) for call in sequence]
    decisions = hook_decisions("claude-code", inputs, tmp, policy, url)
    assert decisions == ["pass" if v["verdict"] == "pass" else "deny" for v in reference]


# -- [same_error] ----------------------------------------------------------------------

ERROR = {"content": [{"type": "text", "text": "Error: no such file " + SECRET}], "isError": True}
OTHER = {"content": [{"type": "text", "text": "Error: denied " + SECRET}], "isError": True}
FINE = {"content": [{"type": "text", "text": "ok " + SECRET}], "isError": False}


@st.composite
def failing(draw: st.DrawFn) -> list[dict]:
    """Calls of few tools with changing arguments, most followed by their result:
    mostly the same error, sometimes another error or a success."""
    out: list[dict] = []
    for number in range(draw(st.integers(2, 14))):
        tool = draw(st.sampled_from(["edit", "edit", "edit", "read"]))
        args = json.dumps({"path": f"f{draw(st.integers(0, 9))}", "secret": SECRET})
        session = draw(st.sampled_from(["s1", "s1", "s1", "s2"]))
        call = {"tool": tool, "args": args, "session": session, "id": f"c{number}"}
        out.append({"kind": "call", **call})
        if draw(st.integers(0, 5)) > 0:
            result = draw(st.sampled_from([ERROR, ERROR, ERROR, OTHER, FINE]))
            out.append({"kind": "result", **call, "result": result})
    return out


def _three_failures() -> list[dict]:
    out = []
    for number in range(4):
        call = {
            "tool": "edit",
            "args": json.dumps({"n": number}),
            "session": "s1",
            "id": f"c{number}",
        }
        out += [{"kind": "call", **call}, {"kind": "result", **call, "result": ERROR}]
    return out


def test_same_error_hook_dialects_and_their_logs_equal_filter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("same-error-runs"),
        env=cli_env(LOOP_BRAKE_POLICY=""),
        secrets=(CANARY, SECRET),
    )
    policy = batch.file(SAME_ERROR, ".toml")
    cases = []

    @SETTINGS
    @given(sequence=failing())
    @example(sequence=_three_failures())
    def draw(sequence: list[dict]) -> None:
        tmp = tmp_path_factory.mktemp("same-error-hooks")
        runs = []
        for agent in AGENTS:
            events = batch.file("".join(e + "\n" for e in event_lines(sequence, agent != "gemini")))
            reference = batch.add(("filter", "--policy", policy), events)
            inputs = [result_hook_input(agent, step, n) for n, step in enumerate(sequence)]
            logged = batch.file("".join(line + "\n" for line in inputs))
            hooks = ("replay", "--verdicts", "--format", "claude-hooks", "--policy", policy)
            replayed = batch.add((*hooks, "-m", "3"), logged, ok=(0, 3))
            batch.add((*hooks[:1], *hooks[2:], "-m", "3"), logged, ok=(0, 3))  # the summary
            decisions = [d for d in result_run_hook(agent, inputs, tmp, 3, policy) if d]
            runs.append((agent, reference, replayed, decisions))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        for agent, reference_run, replayed, decisions in runs:
            reference = batch.verdicts(reference_run)
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            assert decisions == [
                {"deny": "deny", "pass": "allow"}[v["verdict"]] for v in reference
            ], (agent, sequence)
        if sequence == _three_failures():
            assert [(v["verdict"], v["rule"]) for v in reference] == [("pass", "streak")] * 2 + [
                ("deny", "same_error")
            ] * 2
            assert reference[2]["errors"] == 2 and reference[2]["limit"] == 2


def test_claude_codes_failure_event_is_an_error(tmp_path: Path) -> None:
    """PostToolUseFailure carries the error as text in ``error``: the event says it failed."""
    policy = write(tmp_path, "policy.toml", SAME_ERROR)
    inputs = []
    for number in range(3):
        call = {"tool": "Bash", "args": json.dumps({"command": f"make {number} {SECRET}"})}
        call |= {"session": "s1", "id": f"t{number}"}
        inputs.append(result_hook_input("claude-code", {"kind": "call", **call}))
        failure = json.loads(
            result_hook_input("claude-code", {"kind": "result", **call, "result": 0})
        )
        del failure["tool_response"]
        failure.update(hook_event_name="PostToolUseFailure", error="exit status 2 " + SECRET)
        inputs.append(json.dumps(failure))
    state = str(tmp_path / "state.db")
    decisions = hook_decisions("claude-code", inputs, tmp_path, policy, state)
    assert [d for d in decisions if d] == ["pass", "pass", "deny"]
    assert SECRET.encode() not in Path(state).read_bytes()
    logged = verdict_lines((tmp_path / "claude-code-hook.log").read_bytes())
    assert [(v["rule"], v["errors"]) for v in logged] == [("same_error", 2)]
    replay = write(tmp_path, "inputs.jsonl", "".join(line + "\n" for line in inputs))
    replayed = run("replay", "--verdicts", "--format", "claude-hooks", "--policy", policy, replay)
    assert [v["verdict"] for v in replayed] == ["pass", "pass", "deny"]


@pytest.mark.parametrize(
    ("script", "jobs", "verdicts"),
    [
        ("!,!,!,!", ["a", "b", "c", "d"], ["pass", "pass", "deny", "deny"]),
        ("!,ok,!,!,!", ["a", "b", "c", "d", "e"], ["pass", "pass", "pass", "pass", "deny"]),
    ],
)
def test_same_error_mcp_proxy_log_traffic_replay_and_filter_agree(
    tmp_path: Path, script: str, jobs: list[str], verdicts: list[str]
) -> None:
    """The SDK server's tool fails with the same error for different arguments."""
    policy = write(tmp_path, "policy.toml", SAME_ERROR)
    calls = [{"tool": "poll", "arguments": {"job": f"{job} {SECRET}"}} for job in jobs]
    proxied, recorded, _ = proxy_session(tmp_path, calls, script, 9, policy)
    assert [v["verdict"] for v in proxied] == verdicts
    assert all(v["rule"] == "same_error" for v in proxied if v["verdict"] == "deny")
    traffic = tmp_path / "traffic.log"
    traffic.write_text("".join(line + "\n" for line in recorded), encoding="utf-8")
    replayed = result_replay(traffic, "mcp", 9, policy)
    assert [compared(v) for v in replayed] == [compared(v) for v in proxied]
    events = write(tmp_path, "events.jsonl", "".join(e + "\n" for e in traffic_events(recorded)))
    reference = run("filter", "--policy", policy, "-m", "9", events)
    assert [compared(v) for v in reference] == [compared(v) for v in proxied]


def test_a_host_digest_with_is_error_feeds_the_rule(tmp_path: Path) -> None:
    """An event line may carry the host's own digest and ``isError`` instead of the result."""
    policy = write(tmp_path, "policy.toml", SAME_ERROR)
    lines = []
    for number in range(3):
        lines.append(
            json.dumps(
                {"tool": "t", "args": {"n": number}, "sessionId": "s", "callId": f"c{number}"}
            )
        )
        lines.append(json.dumps({"type": "result", "sessionId": "s", "callId": f"c{number}",
                                 "resultDigest": "ab" * 32, "isError": True}))  # fmt: skip
    events = write(tmp_path, "events.jsonl", "".join(line + "\n" for line in lines))
    assert [v["verdict"] for v in run("filter", "--policy", policy, events)] == [
        "pass",
        "pass",
        "deny",
    ]
    plain = write(
        tmp_path,
        "plain.jsonl",
        "".join(line.replace(', "isError": true', "") + "\n" for line in lines),
    )
    assert [v["verdict"] for v in run("filter", "--policy", policy, plain)] == ["pass"] * 3


def test_same_error_in_a_claude_code_transcript(tmp_path: Path) -> None:
    """replay of a Claude Code transcript: tool_result blocks with is_error true and the
    same text, for Edit calls whose arguments differ, make the fourth Edit a denial."""

    def line(kind: str, uuid: str, content: list) -> str:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": f"msg_{uuid}", "model": "claude-sonnet-4-5"}
        record = {"parentUuid": None, "isSidechain": False, "sessionId": "sess-E"}
        return json.dumps(record | {"type": kind, "uuid": uuid, "message": message})

    lines = [line("user", "u0", [{"type": "text", "text": "Fix the typo."}])]
    for number in range(5):
        args = {"file_path": f"/repo/a{number}.py", "old_string": SECRET, "new_string": "x"}
        use = {"type": "tool_use", "id": f"toolu_{number}", "name": "Edit", "input": args}
        lines.append(line("assistant", f"a{number}", [use]))
        error = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "is_error": True}
        error["content"] = f"<tool_use_error>String to replace not found: {SECRET}</tool_use_error>"
        lines.append(line("user", f"r{number}", [error]))
    transcript = write(tmp_path, "session.jsonl", "".join(text + "\n" for text in lines))
    policy = write(tmp_path, "policy.toml", "[same_error]\nafter = 3\n")
    verdicts = run(
        "replay", "--verdicts", "--format", "claude-code", "--policy", policy, transcript
    )
    assert [(v["verdict"], v["rule"]) for v in verdicts] == [("pass", "streak")] * 3 + [
        ("deny", "same_error")
    ] * 2
    summary = run_cli("replay", "--policy", policy, transcript)
    assert summary.returncode == 0 and SECRET.encode() not in summary.stdout + summary.stderr
    assert b"2 calls would be denied" in summary.stdout + summary.stderr
    seed = run("replay", "--verdicts", "--format", "claude-code", transcript)
    assert all(v["verdict"] == "pass" for v in seed)
