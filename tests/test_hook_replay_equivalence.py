"""The live hook decides exactly as ``replay`` of the same hook inputs logged.

For each agent, one sequence of hook inputs with the edges where the two used to
drift (a numeric and an empty session id, null and JSON-string ``tool_input``,
a repeated ``tool_use_id``, integer and string ids, a non-string tool name, a
subagent, a post-tool event) goes through ``loop-brake hook --state S -m 3``,
one real process per input as an agent runs it, and the same inputs, one per
line, through ``loop-brake replay --verdicts --format claude-hooks -m 3``:

* the hook denies exactly where replay's verdict is deny, with the agent's deny
  JSON around replay's message, and is silent where it is pass;
* where replay's verdict is error, the hook allows the call with one stderr
  line (it fails open), and the first time in a session with the agent's
  fail-open notice (``hook/notice.py``);
* an input replay gives no verdict for (not a pre-tool event) is allowed silently;
* ``--log`` (enforcing, and with ``--shadow``) holds replay's deny lines, and
  one error line per call it failed open on.

A canary secret in the arguments appears in no output, log or store file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from loop_brake_cli import agents

CANARY = "CANARY-3b9e-hook-replay-secret"
COMPARED = ("verdict", "toolName", "sessionId", "callId", "count", "maxRepeats", "hashPrefix")
POST_EVENT = {
    "claude-code": "PostToolUse",
    "codex": "PostToolUse",
    "gemini": "AfterTool",
    "cursor": "postToolUse",
}
PRE_EVENT = {
    "claude-code": "PreToolUse",
    "codex": "PreToolUse",
    "gemini": "BeforeTool",
    "cursor": "preToolUse",
}
ABSENT = object()


def hook_input(
    agent: str,
    tool: object = "search",
    args: object = ABSENT,
    call_id: object = ABSENT,
    session: object = "s-1",
    event: str | None = None,
    **extra: object,
) -> bytes:
    """One input as the agent sends it (its own fields around the call)."""
    payload: dict[str, object] = {"hook_event_name": event or PRE_EVENT[agent]}
    session_field = "conversation_id" if agent == "cursor" else "session_id"
    if session is not ABSENT:
        payload[session_field] = session
    if agent == "cursor":
        payload.update(generation_id="gen-1", workspace_roots=["/w"])
    else:
        payload.update(cwd="/w", transcript_path="/t.jsonl")
    if agent == "codex":
        payload["turn_id"] = "turn-1"
    if agent == "gemini":
        payload["timestamp"] = "2026-01-05T10:00:00Z"
    payload["tool_name"] = tool
    if args is not ABSENT:
        payload["tool_input"] = args
    if call_id is not ABSENT:
        payload["tool_use_id"] = call_id
    payload.update(extra)
    return json.dumps(payload).encode()


SECRET = {"q": "x", "n": 1, "secret": CANARY}
# One step per input: hook_input's keywords, and what replay decides at -m 3.
STEPS: list[dict] = [
    {"args": '{"q": "x", "n": 1.0, "secret": "' + CANARY + '"}', "call_id": "c1"},  # parsed
    {"args": SECRET, "call_id": "c2"},  # equal to the parsed string: count 2
    {"args": SECRET, "call_id": "c2"},  # the same call seen twice: a duplicate
    {"args": SECRET, "call_id": "c2", "event": "post"},  # not a pre-tool event
    {"args": SECRET, "call_id": "c3"},  # count 3: denied
    {"args": SECRET, "call_id": "c4"},  # count 4: denied
    {"args": SECRET, "call_id": "c5", "agent_id": "sub-1"},  # a subagent's own streak
    {"args": SECRET, "call_id": "c6", "session": 42},  # error: session not a string
    {"tool": 7, "args": SECRET, "call_id": "c7"},  # error: tool_name not a string
    {"tool": "read", "args": None, "call_id": "c8", "session": ""},  # "" is a session
    {"tool": "read", "call_id": "c9", "session": ""},  # missing tool_input, as null: {}
    {"tool": "read", "args": {}, "call_id": 10, "session": ""},  # an integer id: denied
    {"tool": "read", "args": "", "call_id": 10.0, "session": ""},  # 10.0 is 10: a duplicate
    {"tool": "read", "args": {}, "call_id": "10", "session": ""},  # "10" is not 10: count 4
    {"tool": "", "args": [CANARY], "session": ABSENT},  # the empty tool name, "default"
    {"tool": "read", "args": {}, "call_id": True, "session": ""},  # error: bad call id
]


def sequence(agent: str, tag: str | None = None) -> list[bytes]:
    """The steps as this agent's inputs. With ``tag``, string and absent sessions
    are prefixed, so several agents' inputs can share a log without sharing streaks."""
    inputs = []
    for step in STEPS:
        step = dict(step)
        if step.get("event") == "post":
            step["event"] = POST_EVENT[agent]
        session = step.get("session", "s-1")
        if tag is not None and (session is ABSENT or isinstance(session, str)):
            step["session"] = f"{tag}/{'' if session is ABSENT else session}"
        inputs.append(hook_input(agent, **step))
    return inputs


def verdicts(stdout: bytes) -> list[dict]:
    return [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]


def compared(verdict: dict) -> tuple:
    return tuple(verdict.get(key) for key in COMPARED) + (verdict.get("duplicate", False),)


def replay(tmp: Path, inputs: list[bytes]) -> dict[int, dict]:
    """replay's verdict per log line (1-based)."""
    log = tmp / "hook-inputs.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in inputs))
    result = run_cli("replay", "--verdicts", "--format", "claude-hooks", "-m", "3", str(log))
    assert result.returncode in (0, 1, 3), result.stderr
    assert CANARY.encode() not in result.stdout + result.stderr
    return {verdict["line"]: verdict for verdict in verdicts(result.stdout)}


def run_hook(tmp: Path, inputs: list[bytes], *options: str) -> tuple[list, Path]:
    """Each input through its own hook process: [(stdout, stderr)], and the --log file."""
    state, log = tmp / "state" / "state.db", tmp / "hook.log"
    results = []
    for payload in inputs:
        argv = ["--state", str(state), "-m", "3", "--log", str(log), *options]
        result = run_cli("hook", *argv, input=payload)
        assert result.returncode == 0, result.stderr
        results.append((result.stdout, result.stderr.decode()))
    for path in [log, *state.parent.iterdir()]:
        assert CANARY.encode() not in path.read_bytes(), path.name
    return results, log


@pytest.mark.parametrize("agent", sorted(PRE_EVENT))
def test_the_hook_decides_as_replay_of_its_inputs(agent: str, tmp_path: Path) -> None:
    inputs = sequence(agent)
    expected = replay(tmp_path, inputs)
    kinds = [expected[n]["verdict"] if n in expected else None for n in range(1, len(inputs) + 1)]
    # the sequence reaches every outcome, so the comparison below means something
    assert {"pass", "deny", "error", None} <= set(kinds)
    assert any(v.get("duplicate") for v in expected.values())

    enforced, log = run_hook(tmp_path / "enforce", inputs)
    deny_output = agents.get(agent).deny_output
    told: set[str] = set()
    for number, (kind, (stdout, stderr)) in enumerate(zip(kinds, enforced, strict=True), 1):
        assert CANARY not in stdout.decode() + stderr
        assert "Traceback" not in stderr
        if kind == "deny":
            assert json.loads(stdout) == deny_output(expected[number]["message"]), number
            assert stderr == ""
        elif kind == "error":
            assert stderr.count("\n") == 1 and "the call was allowed" in stderr, number
            assert stdout == fail_open_answer(agent, inputs[number - 1], stderr, told), number
        else:  # pass, or not a pre-tool event
            assert (stdout, stderr) == (b"", ""), number
    denials = [compared(v) for v in expected.values() if v["verdict"] == "deny"]
    logged = verdicts(log.read_bytes())
    assert [compared(v) for v in logged if v["verdict"] != "error"] == denials
    # one error line per call it failed open on, where replay's verdict is error
    assert sum(v["verdict"] == "error" for v in logged) == kinds.count("error")

    # the same user: each session was told once already, in the run above
    shadowed, shadow_log = run_hook(tmp_path / "shadow", inputs, "--shadow")
    for payload, (stdout, stderr) in zip(inputs, shadowed, strict=True):
        if "the call was allowed" in stderr:
            assert stdout == fail_open_answer(agent, payload, stderr, told)
        else:
            assert stdout == b""
    shadow_logged = verdicts(shadow_log.read_bytes())
    assert [compared(v) for v in shadow_logged if v["verdict"] != "error"] == denials
    assert sum(v["verdict"] == "error" for v in shadow_logged) == kinds.count("error")


def fail_open_answer(agent: str, payload: bytes, stderr: str, told: set[str]) -> bytes:
    """What a call the hook failed open on prints: the agent's fail-open notice for the
    first of its session (every time without a string session id; hook/notice.py),
    else nothing; ``told`` holds the sessions told so far."""
    notice = agents.get(agent).notice_output
    session = json.loads(payload).get("conversation_id" if agent == "cursor" else "session_id")
    if notice("") is None or session in told:
        return b""
    if isinstance(session, str):
        told.add(session)
    reason = stderr.removeprefix("loop-brake hook: ").removesuffix(
        "; the call was allowed (the brake fails open)\n"
    )
    answer = notice(f"loop brake is off for this session: {reason}")
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def test_a_log_of_all_four_agents_replays_as_each_alone(tmp_path: Path) -> None:
    """One log holding every agent's inputs, interleaved: each line is read by its
    own agent's decoder, so each agent's verdicts equal those of its own log."""
    names = sorted(PRE_EVENT)
    per_agent = {agent: sequence(agent, tag=agent) for agent in names}
    mixed = [line for lines in zip(*per_agent.values(), strict=True) for line in lines]
    together = replay(tmp_path, mixed)
    for index, agent in enumerate(names):
        (tmp_path / agent).mkdir()
        alone = replay(tmp_path / agent, per_agent[agent])
        mine = {
            (number - 1) // len(names) + 1: verdict
            for number, verdict in together.items()
            if (number - 1) % len(names) == index
        }
        assert sorted(mine) == sorted(alone), agent
        assert [compared(mine[n]) for n in sorted(mine)] == [
            compared(alone[n]) for n in sorted(alone)
        ], agent
