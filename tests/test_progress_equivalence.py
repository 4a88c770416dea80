"""One engine with results: under a progress policy every front-end agrees call by call.

The same traffic (calls, and the results some of them return) is judged by

* ``filter --policy`` on event lines with ``{"type": "result"}`` lines (the
  reference),
* ``loop-brake hook --policy`` in each of the four agent dialects, fed the
  pre-tool event of each call and the post-tool event of each result (Claude
  Code and Codex ``PostToolUse``, Gemini CLI ``AfterTool``, Cursor
  ``postToolUse`` and ``afterMCPExecution``), one decision per input, and
* ``replay --verdicts --policy`` of those hook inputs logged one per line;
* ``loop-brake mcp-proxy --policy`` in front of a real MCP server (the SDK's)
  whose results change, then stop changing (its ``--log``),
* ``replay --verdicts --policy --format mcp`` of the same traffic recorded as
  ``STDIN:``/``STDOUT:`` lines in the order the client saw it, and ``filter``
  of the same calls and responses as event lines.

Results change (the streak restarts), stop changing (the streak is denied at
the limit), carry noise the default ignore patterns strip, pair by call id or,
without one, with the session's latest call, or pair with nothing. A secret in
every result never appears in any output, log, stderr or state file. The
existing tests/test_engine_equivalence.py keeps checking that without a policy
everything is as before.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_batch import CliBatch
from conftest import ROOT, cli_env, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_equivalence import logged_verdicts, verdict_lines

from loop_brake_cli.hook.runner import main as hook_main

SECRET = "canary-5b1e-result-secret"
AGENTS = ("claude-code", "codex", "gemini", "cursor")
COMPARED = ("verdict", "toolName", "sessionId", "callId", "count", "maxRepeats", "hashPrefix")
POLICY = "progress = true\n"
SERVER = str(ROOT / "tests" / "mcp_progress_server.py")

# Results: distinct outputs, one that repeats, and outputs that differ only by the
# noise the default patterns strip (so they count as the same output).
RESULTS = [
    {"stdout": "line 1 " + SECRET},
    {"stdout": "line 2 " + SECRET},
    {"stdout": "same " + SECRET},
    "Chunk ID: 9f1c\nWall time: 0.51 seconds\nbuilding " + SECRET,
    "Chunk ID: 77aa\nWall time: 2.02 seconds\nbuilding " + SECRET,
    [1, 2, SECRET],
]


@st.composite
def steps(draw: st.DrawFn) -> list[dict]:
    """Calls, most of them followed by a result; identical calls are likely."""
    out: list[dict] = []
    for number in range(draw(st.integers(2, 12))):
        if out and draw(st.integers(0, 3)) > 0:
            call = {k: out[-1][k] for k in ("tool", "args", "session")}
        else:
            call = {
                "tool": draw(st.sampled_from(["poll", "read"])),
                "args": draw(st.sampled_from(['{"job":"j"}', '{"job":"k"}'])),
                "session": draw(st.sampled_from(["s1", "s1", "s2"])),
            }
        call["id"] = f"c{number}"
        out.append({"kind": "call", **call})
        if draw(st.integers(0, 4)) > 0:
            which = draw(st.sampled_from(["own", "own", "none", "other"]))
            result_id = {"own": call["id"], "none": None, "other": "elsewhere"}[which]
            out.append(
                {
                    "kind": "result",
                    "session": call["session"],
                    "id": result_id,
                    "tool": call["tool"],
                    "args": call["args"],
                    "result": draw(st.sampled_from(RESULTS)),
                }
            )
    return out


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def event_lines(sequence: list[dict], ids: bool = True) -> list[str]:
    """The reference's input: call lines and result lines (ids dropped for Gemini)."""
    lines = []
    for step in sequence:
        fields = {"sessionId": step["session"]}
        if ids and step["id"] is not None:
            fields["callId"] = step["id"]
        if step["kind"] == "call":
            text = f'{{"tool":{_json(step["tool"])},"args":{step["args"]}'
            lines.append(text + "," + _json(fields)[1:])
        else:
            lines.append(_json({"type": "result", **fields, "result": step["result"]}))
    return lines


def hook_input(agent: str, step: dict, variant: int = 0) -> str:
    """The event each agent sends before a call, or after it with its result."""
    post = step["kind"] == "result"
    out: dict[str, object] = {}
    if agent == "cursor":
        event = ("postToolUse", "afterMCPExecution")[variant % 2] if post else "preToolUse"
        out.update(hook_event_name=event, conversation_id=step["session"], generation_id="g1")
    else:
        pre, after = ("BeforeTool", "AfterTool") if agent == "gemini" else ("PreToolUse",) * 2
        if agent != "gemini":
            after = "PostToolUse"
        out.update(hook_event_name=after if post else pre, session_id=step["session"])
        out.update(cwd="/work", transcript_path="/t")
        if agent == "codex":
            out["turn_id"] = "t1"
    out["tool_name"] = step["tool"]
    out["tool_input"] = json.loads(step["args"])
    if agent != "gemini" and step["id"] is not None:
        out["tool_use_id"] = step["id"]
    if post:
        if agent == "cursor" and out["hook_event_name"] == "afterMCPExecution":
            out["result_json"] = _json(step["result"])
        elif agent == "cursor":
            out["tool_output"] = step["result"]
        else:
            out["tool_response"] = step["result"]
    return _json(out)


def compared(verdict: dict) -> tuple:
    if verdict["verdict"] == "error":
        return ("error",)
    fields = tuple(verdict.get(key) for key in COMPARED)
    return fields + (verdict.get("duplicate", False), verdict.get("progress", False))


def assert_secret_absent(*blobs: bytes | str) -> None:
    for blob in blobs:
        text = blob if isinstance(blob, str) else blob.decode("utf-8", "replace")
        assert SECRET not in text


def write_policy(tmp: Path) -> str:
    path = tmp / "progress.toml"
    path.write_text(POLICY, encoding="utf-8")
    return str(path)


def filter_verdicts(tmp: Path, lines: list[str], max_repeats: int, policy: str) -> list[dict]:
    path = tmp / "events.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = run_cli("filter", "--policy", policy, "-m", str(max_repeats), str(path))
    assert result.returncode in (0, 3), result.stderr
    assert_secret_absent(result.stdout, result.stderr)
    return verdict_lines(result.stdout)


def replay_verdicts(path: Path, fmt: str, max_repeats: int, policy: str) -> list[dict]:
    args = ("replay", "--verdicts", "--format", fmt, "--policy", policy, "-m", str(max_repeats))
    result = run_cli(*args, str(path))
    assert result.returncode in (0, 3), result.stderr
    assert_secret_absent(result.stdout, result.stderr)
    summary = run_cli(*[a for a in args if a != "--verdicts"], str(path))
    assert summary.returncode in (0, 3), summary.stderr
    assert_secret_absent(summary.stdout, summary.stderr)
    return verdict_lines(result.stdout)


def run_hook(
    agent: str, inputs: list[str], tmp: Path, max_repeats: int, policy: str | None
) -> list:
    """Each input through the hook's real entry point: 'deny'/'allow' for a call,
    None for a result (which must print nothing and exit 0)."""
    state, log = tmp / f"{agent}.db", tmp / f"{agent}.log"
    decisions: list[str | None] = []
    for text in inputs:
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", agent, "-m", str(max_repeats), "--state", str(state)]
        argv += ["--log", str(log)] + (["--policy", policy] if policy else [])
        status = hook_main(argv, io.BytesIO(text.encode()), out, err)
        assert status == 0
        assert err.getvalue() == "", err.getvalue()
        assert_secret_absent(out.getvalue())
        if '"PostToolUse"' in text or "AfterTool" in text or '"postToolUse"' in text:
            assert out.getvalue() == b""
            decisions.append(None)
        elif "afterMCPExecution" in text:
            assert out.getvalue() == b""
            decisions.append(None)
        else:
            decisions.append("deny" if out.getvalue() else "allow")
    for path in tmp.glob(f"{agent}.*"):
        assert_secret_absent(path.read_bytes())
    return decisions


SETTINGS = settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_hook_post_tool_events_and_their_replay_equal_filter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("progress-runs"), env=cli_env(), ok=(0, 3), secrets=(SECRET,)
    )
    policy = batch.file(POLICY, ".toml")
    cases = []

    @SETTINGS
    @given(sequence=steps(), max_repeats=st.sampled_from([2, 3]))
    def draw(sequence: list[dict], max_repeats: int) -> None:
        tmp = tmp_path_factory.mktemp("progress-hooks")
        limit = ("-m", str(max_repeats))
        runs = []
        for agent in AGENTS:
            events = batch.file(
                "".join(line + "\n" for line in event_lines(sequence, ids=agent != "gemini"))
            )
            reference = batch.add(("filter", "--policy", policy, *limit), events)
            inputs = [hook_input(agent, step, number) for number, step in enumerate(sequence)]
            log = batch.file("".join(line + "\n" for line in inputs))
            replay = ("replay", "--format", "claude-hooks", "--policy", policy, *limit)
            replayed = batch.add((replay[0], "--verdicts", *replay[1:]), log)
            batch.add(replay, log)  # the summary
            decisions = [d for d in run_hook(agent, inputs, tmp, max_repeats, policy) if d]
            denied_log = logged_verdicts(tmp / f"{agent}.log")
            runs.append((agent, reference, replayed, decisions, denied_log))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        for agent, reference_run, replayed, decisions, denied_log in runs:
            reference = batch.verdicts(reference_run)
            assert all(v["verdict"] != "error" for v in reference), (agent, sequence)
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            assert decisions == [
                {"deny": "deny", "pass": "allow"}[v["verdict"]] for v in reference
            ], (agent, sequence)
            assert [compared(v) for v in denied_log] == [
                compared(v) for v in reference if v["verdict"] == "deny"
            ], (agent, sequence)


def poll_sequence(outputs: int, polls: int) -> list[dict]:
    """``polls`` identical calls whose results change ``outputs`` times, then stay."""
    out = []
    for number in range(polls):
        out.append(
            {"kind": "call", "tool": "poll", "args": '{"job":"j"}', "session": "s1"}
            | {"id": f"c{number}"}
        )
        text = f"line {min(number, outputs)} {SECRET}\nWall time: {number}.5 seconds"
        out.append(
            {"kind": "result", "tool": "poll", "args": '{"job":"j"}', "session": "s1"}
            | {"id": f"c{number}", "result": {"stdout": text}}
        )
    return out


@pytest.mark.parametrize("agent", AGENTS)
def test_a_poll_is_denied_only_once_its_output_stops_changing(agent: str, tmp_path: Path) -> None:
    """Eight identical polls, limit 3: the output changes over the first five, then
    stays (the wall times differ on every call and are ignored)."""
    policy = write_policy(tmp_path)
    sequence = poll_sequence(outputs=4, polls=8)
    inputs = [hook_input(agent, step, number) for number, step in enumerate(sequence)]
    decisions = [d for d in run_hook(agent, inputs, tmp_path, 3, policy) if d]
    assert decisions == ["allow"] * 6 + ["deny"] * 2
    seed = tmp_path / "seed"
    seed.mkdir()
    without = [d for d in run_hook(agent, inputs, seed, 3, None) if d]
    assert without == ["allow"] * 2 + ["deny"] * 6  # no policy: the seed's brake


def test_without_progress_post_tool_events_change_nothing(tmp_path: Path) -> None:
    """No policy, or a policy without progress: a post-tool event writes no state."""
    plain = tmp_path / "plain.toml"
    plain.write_text("[[tools]]\nmatch = 'read'\nmax_repeats = 5\n", encoding="utf-8")
    step = poll_sequence(outputs=1, polls=1)[1]
    for agent in AGENTS:
        for argv in ([], ["--policy", str(plain)]):
            state = tmp_path / f"{agent}-{len(argv)}.db"
            out, err = io.BytesIO(), io.StringIO()
            text = hook_input(agent, step).encode()
            args = ["--agent", agent, "--state", str(state), *argv]
            assert hook_main(args, io.BytesIO(text), out, err) == 0
            assert out.getvalue() == b"" and err.getvalue() == ""
            assert not state.exists()


# -- the MCP proxy ------------------------------------------------------------------


class Client:
    """A JSON-RPC client on the proxy's pipes that records the traffic as a goose log:
    each request waits for its response, so the order is the one the proxy saw."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        self.recorded: list[str] = []

    def send(self, message: dict) -> None:
        line = json.dumps(message, separators=(",", ":"))
        self.recorded.append(f"STDIN: {line}")
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, message: dict) -> dict:
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the proxy closed its stdout"
            text = line.decode().rstrip("\n")
            self.recorded.append(f"STDOUT: {text}")
            answer = json.loads(text)
            if answer.get("id") == message["id"] and "method" not in answer:
                return answer

    def close(self) -> tuple[int, bytes]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.stderr is not None and self.proc.stdout is not None
        rest = self.proc.stdout.read()
        stderr = self.proc.stderr.read()
        status = self.proc.wait(timeout=120)
        for line in rest.decode().splitlines():
            self.recorded.append(f"STDOUT: {line}")
        return status, stderr


def proxy_session(
    tmp: Path, calls: list[dict], script: str, max_repeats: int, policy: str
) -> tuple[list[dict], list[str], bytes]:
    """Run the calls through the proxy in front of the progress server: its verdict
    log, the recorded traffic, and its stderr."""
    log = tmp / "proxy.log"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--log", str(log)]
    # the server exits on EOF by itself: the proxy's 2 s before SIGTERM (exit 143) is no
    # time to wait on a loaded machine, 120 s only turns a hang into a failure
    command += ["--shutdown-timeout", "120"]
    command += ["--policy", policy, "-m", str(max_repeats), "--", sys.executable, SERVER]
    env = cli_env(MCP_POLL_SCRIPT=script, MCP_POLL_SECRET=SECRET)
    client = Client(command, env)
    client.request(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "progress-test", "version": "1"},
            },
        }
    )
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for number, call in enumerate(calls, 1):
        params = {"name": call["tool"], "arguments": call["arguments"]}
        client.request({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
    status, stderr = client.close()
    assert status == 0, stderr
    body = log.read_bytes()
    assert_secret_absent(body, stderr)
    return verdict_lines(body), client.recorded, stderr


def traffic_events(recorded: list[str]) -> list[str]:
    """The recorded calls and their responses as event lines, for ``filter``."""
    lines, calls = [], {}
    for entry in recorded:
        direction, _, text = entry.partition(": ")
        message = json.loads(text)
        if direction == "STDIN" and message.get("method") == "tools/call":
            calls[message["id"]] = message
            params = message["params"]
            lines.append(
                _json(
                    {
                        "tool": params["name"],
                        "args": params["arguments"],
                        "sessionId": "mcp#1",
                        "callId": message["id"],
                    }
                )
            )
        elif direction == "STDOUT" and calls.pop(message.get("id"), None) is not None:
            value = message["result"] if "result" in message else {"error": message["error"]}
            event = {"type": "result", "sessionId": "mcp#1", "callId": message["id"]}
            lines.append(_json({**event, "result": value}))
    return lines


MCP_CASES = [
    # (script of the server's outputs, the calls' arguments, maxRepeats)
    ("1,2,3,4,5,6,7,8", ["j"] * 8, 3),  # always changing: never denied
    ("1,2,3,3,3,3,3,3", ["j"] * 8, 3),  # stops changing: denied at the limit
    ("1,2,!,!,!,4,4,4,4", ["j"] * 9, 2),  # tool errors that repeat, then output
    ("a,a,b,c", ["j", "j", "k", "k", "j", "j", "j"], 2),  # other calls between
]


@pytest.mark.parametrize(("script", "jobs", "max_repeats"), MCP_CASES)
def test_mcp_proxy_log_traffic_replay_and_filter_agree(
    tmp_path: Path, script: str, jobs: list[str], max_repeats: int
) -> None:
    policy = write_policy(tmp_path)
    calls = [{"tool": "poll", "arguments": {"job": job}} for job in jobs]
    proxied, recorded, _ = proxy_session(tmp_path, calls, script, max_repeats, policy)
    assert len(proxied) == len(calls)
    traffic = tmp_path / "traffic.log"
    traffic.write_text("".join(line + "\n" for line in recorded), encoding="utf-8")
    replayed = replay_verdicts(traffic, "mcp", max_repeats, policy)
    assert [compared(v) for v in replayed] == [compared(v) for v in proxied]
    reference = filter_verdicts(tmp_path, traffic_events(recorded), max_repeats, policy)
    assert [compared(v) for v in reference] == [compared(v) for v in proxied]
    if script.startswith("1,2,3,4"):
        assert all(v["verdict"] == "pass" for v in proxied)
    if script.startswith("1,2,3,3"):
        assert [v["verdict"] for v in proxied] == ["pass"] * 4 + ["deny"] * 4


def test_mcp_proxy_without_progress_ignores_results(tmp_path: Path) -> None:
    """A policy without progress: the proxy denies as the seed does, results or not."""
    plain = tmp_path / "plain.toml"
    plain.write_text("[[tools]]\nmatch = 'other'\nmax_repeats = 9\n", encoding="utf-8")
    calls = [{"tool": "poll", "arguments": {"job": "j"}}] * 4
    proxied, _, _ = proxy_session(tmp_path, calls, "1,2,3,4", 3, str(plain))
    assert [v["verdict"] for v in proxied] == ["pass", "pass", "deny", "deny"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX pipes")
def test_mcp_proxy_results_never_hold_a_response(tmp_path: Path) -> None:
    """Every response reaches the client, in the server's order, under progress."""
    policy = write_policy(tmp_path)
    calls = [{"tool": "poll", "arguments": {"job": "j"}}] * 5
    _, recorded, _ = proxy_session(tmp_path, calls, "1,2,3,4,5", 3, policy)
    answered = [json.loads(e[8:])["id"] for e in recorded if e.startswith("STDOUT: ")]
    assert answered == [0, 1, 2, 3, 4, 5]
