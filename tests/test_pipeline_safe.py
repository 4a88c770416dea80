"""Pipeline-safe (issue 29): in every front-end a denial refuses that one call, with a
reason a program can read (code ``LOOP_BRAKE``, count, limit, hash prefix, never the
arguments), and the run goes on: filter and replay read on, the hook answers the
agent and exits 0, the MCP proxy answers that request with a tool error and keeps
serving. docs/policies.md ("Pipeline-safe") is this file in prose."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env, run_cli

CANARY = "canary-6e0f-pipeline-secret"
ARGS = {"command": "make test", "token": CANARY}
PREFIX = re.compile(r"^[0-9a-f]{12}$")


def _events() -> bytes:
    """Three identical calls (the third is denied at -m 3), a bad line, another call."""
    calls = [{"tool": "run", "args": ARGS, "sessionId": "ci", "callId": f"c{n}"} for n in (1, 2, 3)]
    lines = [json.dumps(call) for call in calls] + ["{not json", json.dumps(
        {"tool": "read", "args": {"path": "log"}, "sessionId": "ci", "callId": "c5"})]  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


def _machine_readable(verdict: dict, count: int = 3) -> None:
    assert verdict["verdict"] == "deny" and verdict["code"] == "LOOP_BRAKE"
    assert verdict["count"] == count and verdict["maxRepeats"] == 3
    assert PREFIX.match(verdict["hashPrefix"])
    assert verdict["hashPrefix"] in verdict["message"] and "limit 3" in verdict["message"]


def test_filter_refuses_the_call_and_reads_on(tmp_path: Path) -> None:
    for flags, status in (((), 0), (("--fail-on-deny",), 1)):
        done = run_cli("filter", "-m", "3", *flags, input=_events())
        assert done.returncode == status  # --fail-on-deny: 1, after every line was read
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert [v["verdict"] for v in lines] == ["pass", "pass", "deny", "error", "pass"]
        _machine_readable(lines[2])
        assert CANARY.encode() not in done.stdout + done.stderr


def test_replay_refuses_the_call_and_reads_on(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_events())
    done = run_cli("replay", "--verdicts", "-m", "3", "--format", "events", str(path))
    assert done.returncode == 3  # the unreadable line, said by the status once all is read
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["verdict"] for v in lines] == ["pass", "pass", "deny", "error", "pass"]
    _machine_readable(lines[2])
    assert CANARY.encode() not in done.stdout + done.stderr


def test_the_hook_answers_the_agent_and_exits_zero(tmp_path: Path) -> None:
    """The deny in the agent's JSON (its schema allows the reason text only: count,
    limit and prefix are in it), exit 0; ``--log`` has the full verdict line; the next
    call (another tool) is allowed."""
    state, log = tmp_path / "state.db", tmp_path / "denials.jsonl"
    answers = []
    for number, tool in enumerate(["Bash", "Bash", "Bash", "Read"], 1):
        payload = {"session_id": "ci", "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": ARGS, "tool_use_id": f"t{number}"}  # fmt: skip
        done = run_cli(
            "hook", "-m", "3", "--state", str(state), "--log", str(log),
            input=json.dumps(payload).encode(),
        )  # fmt: skip
        assert done.returncode == 0 and done.stderr == b""
        assert CANARY.encode() not in done.stdout
        answers.append(json.loads(done.stdout) if done.stdout else None)
    assert answers[:2] == [None, None] and answers[3] is None
    reason = answers[2]["hookSpecificOutput"]
    assert reason["permissionDecision"] == "deny"
    assert "called 3 times" in reason["permissionDecisionReason"]
    (logged,) = [json.loads(line) for line in log.read_bytes().splitlines()]
    _machine_readable(logged)
    assert logged["hashPrefix"] in reason["permissionDecisionReason"]
    assert CANARY.encode() not in log.read_bytes() + state.read_bytes()


def test_the_mcp_proxy_answers_a_tool_error_and_keeps_serving(tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    requests = [
        {"jsonrpc": "2.0", "id": number, "method": "tools/call",
         "params": {"name": tool, "arguments": ARGS}}
        for number, tool in enumerate(["run", "run", "run", "read"], 1)
    ]  # fmt: skip
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "-m", "3", "--log", str(log)]
    command += ["--", sys.executable, str(ROOT / "tests" / "echo_server.py")]
    payload = "".join(json.dumps(request) + "\n" for request in requests).encode()
    done = subprocess.run(command, input=payload, capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4]  # the fourth request was served after the denial
    assert answers[4]["method"] == "tools/call"  # the echo server's copy: forwarded
    denial = answers[3]["result"]
    assert denial["isError"] is True and "method" not in answers[3]  # never reached the server
    text = denial["content"][0]["text"]
    logged = [json.loads(line) for line in log.read_bytes().splitlines()]
    assert [v["verdict"] for v in logged] == ["pass", "pass", "deny", "pass"]  # every call
    _machine_readable(logged[2])
    assert logged[2]["hashPrefix"] in text and "limit 3" in text
    assert CANARY.encode() not in done.stderr + log.read_bytes() + text.encode()
