"""``loop-brake run -- AGENT``, end to end with stand-in agents (tests/standin_agent.py).

The stand-ins are executables named ``claude``, ``codex`` and ``gemini`` on a
temporary PATH. Each replays a real recorded headless stream (the fixtures of
tests/fixtures/SOURCES.md: Claude Code's from link-assistant/hive-mind, Codex's
from jnarowski/agentcmd and hive-mind; Gemini CLI's is our sample, no real
recording having a source) and calls the hook it was given, the way the real
agent finds it: Claude Code the ``--settings`` JSON, Codex the ``-c`` TOML
overrides (only under ``--dangerously-bypass-hook-trust``, as an untrusted hook),
Gemini CLI the settings file ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH`` names. HOME
is a fake one holding the user's own settings, which must come out
byte-identical. Nothing waits on time: the tests read the run's streams and
files, and the run itself waits for its agent's processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
STANDIN = ROOT / "tests" / "standin_agent.py"
CANARY = "CANARY-7f3a-do-not-print"

CLAUDE_STREAM = FIXTURES / "claude-stream" / "DERIVED--hive-mind-issue-667-pr49-run1.jsonl.gz"
CODEX_STREAM = FIXTURES / "codex-exec" / "DERIVED--hive-mind-issue-642-run2.jsonl"
CODEX_SMALL = FIXTURES / "codex-exec" / "real--agentcmd-stream-output-2.jsonl"
GEMINI_STREAM = ROOT / "samples" / "formats" / "gemini-stream.jsonl"

AGENTS = {
    "claude": (
        CLAUDE_STREAM,
        ["claude", "-p", "fix the tests", "--output-format", "stream-json", "--verbose"],
    ),
    "codex": (
        CODEX_STREAM,
        ["codex", "exec", "--json", "--dangerously-bypass-hook-trust", "fix the tests"],
    ),
    "gemini": (GEMINI_STREAM, ["gemini", "-p", "fix the tests", "--output-format", "stream-json"]),
}

USER_SETTINGS = {
    ".claude/settings.json": '{\n  "theme": "dark",\n  "hooks": {"PreToolUse": [{"matcher": "*",'
    ' "hooks": [{"type": "command", "command": "true"}]}]}\n}\n',
    ".gemini/settings.json": '{"hooks": {"BeforeTool": []}, "ui": {"theme": "GitHub"}}',
    ".codex/config.toml": 'model = "gpt-5"\n',
    ".codex/hooks.json": '{"hooks": {}}\n',
}


class Env:
    """A temporary PATH with the stand-ins, a fake HOME, and the run's files."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.home = tmp / "home"
        self.bin.mkdir()
        source = STANDIN.read_text(encoding="utf-8")
        for name in ("claude", "codex", "gemini"):
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
            path.chmod(0o755)
        for rel, text in USER_SETTINGS.items():
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        self.before = self.snapshot()
        self.pids = tmp / "pids"
        self.summary = tmp / "step-summary.md"

    def snapshot(self) -> dict[str, bytes]:
        return {
            str(path.relative_to(self.home)): path.read_bytes()
            for path in sorted(self.home.rglob("*"))
            if path.is_file()
        }

    def env(self, stream: Path, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("LOOP_BRAKE_", "DSH_LOOP_BRAKE_", "GEMINI_CLI_", "STANDIN_"))
            and key not in ("GITHUB_STEP_SUMMARY", "XDG_STATE_HOME")
        }
        env.update(
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(self.home),
            XDG_STATE_HOME=str(self.tmp / "state"),
            STANDIN_STREAM=str(stream),
            STANDIN_PIDS=str(self.pids),
            GITHUB_STEP_SUMMARY=str(self.summary),
            PYTHONIOENCODING="utf-8",
        )
        env.update(extra)
        return env

    def run(
        self, args: list[str], stream: Path, **extra: str
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "run", *args],
            capture_output=True,
            env=self.env(stream, **extra),
            cwd=self.tmp,
            timeout=300,
        )

    def spawn(self, args: list[str], stream: Path, **extra: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", "run", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env(stream, **extra),
            cwd=self.tmp,
        )

    def agent_pids(self) -> list[int]:
        if not self.pids.exists():
            return []
        return [int(line) for line in self.pids.read_text().split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_looping_agent_is_denied_through_the_hook_then_stopped(env: Env, agent: str) -> None:
    stream, argv = AGENTS[agent]
    out = env.tmp / "agent.jsonl"
    copy = env.tmp / "written.jsonl"
    result = env.run(
        [
            "--output",
            str(out),
            "--json",
            str(env.tmp / "run.json"),
            "--junit",
            str(env.tmp / "junit.xml"),
            "--",
            *argv,
        ],
        stream,
        STANDIN_LOOP="20",
        STANDIN_COPY=str(copy),
        STANDIN_HOOKS_RAN=str(env.tmp / "hooks"),
    )
    stderr = result.stderr.decode()
    assert result.returncode == 6, stderr
    # the agent's stream, passed through unchanged
    assert out.read_bytes() == copy.read_bytes()
    doc = json.loads((env.tmp / "run.json").read_text())
    run = doc["run"]
    assert run["decision"]["kind"] == "ignored" and run["ignoredDenials"] == 2
    assert run["status"] == 6 and run["agentStatus"] == -signal.SIGTERM
    # the hook denied the third identical call and the two the agent made after it
    assert run["hook"] == {
        "denied": 3,
        "stopped": 0,
        "warned": 0,
        "failedOpen": 0,
        "reasons": [],
    }
    assert doc["totals"]["denied"] == 3
    # the agent writes each denial's result after the call's line, and the run ends
    # it on seeing the third denied call's line: that last result may be cut short
    denied_results = out.read_text().count("the call was denied before it ran")
    assert denied_results in (2, 3)
    assert "deny 3/3" in stderr and "ending the agent" in stderr
    junit = (env.tmp / "junit.xml").read_text()
    assert 'failures="1"' in junit and "stopped by the brake" in junit
    summary = env.summary.read_text()
    assert "### loop-brake run: stopped by the brake" in summary
    assert env.snapshot() == env.before  # the user's settings, byte for byte
    assert env.agent_pids() and not [pid for pid in env.agent_pids() if alive(pid)]


def test_a_run_the_brake_does_not_act_on_exits_with_the_agents_status(env: Env) -> None:
    copy = env.tmp / "written.jsonl"
    result = env.run(
        ["--junit", str(env.tmp / "junit.xml"), "--", *AGENTS["codex"][1]],
        CODEX_SMALL,
        STANDIN_EXIT="3",
        STANDIN_COPY=str(copy),
    )
    assert result.returncode == 3, result.stderr.decode()
    assert result.stdout == copy.read_bytes()
    junit = (env.tmp / "junit.xml").read_text()
    assert 'tests="1" failures="0"' in junit
    assert "the brake did not act" in env.summary.read_text()


def test_codex_without_hook_trust_is_stopped_from_its_stream(env: Env) -> None:
    """Codex skips an untrusted hook: the hook never runs, the stream's denials do the rest,
    and the summary says the hook never denied."""
    argv = ["codex", "exec", "--json", "fix the tests"]
    result = env.run(
        ["--json", str(env.tmp / "run.json"), "--", *argv], CODEX_STREAM, STANDIN_LOOP="20"
    )
    assert result.returncode == 6, result.stderr.decode()
    run = json.loads((env.tmp / "run.json").read_text())["run"]
    assert run["hook"]["denied"] == 0
    assert "the stream shows denials the hook never gave" in result.stderr.decode()
    assert not [pid for pid in env.agent_pids() if alive(pid)]


def test_an_agent_that_ignores_sigterm_is_killed(env: Env) -> None:
    stream, argv = AGENTS["claude"]
    result = env.run(
        ["--grace", "0.5", "-q", "--", *argv], stream, STANDIN_LOOP="20", STANDIN_IGNORE_TERM="1"
    )
    assert result.returncode == 6, result.stderr.decode()
    assert env.agent_pids() and not [pid for pid in env.agent_pids() if alive(pid)]


@pytest.mark.parametrize("how", ["fork", "setsid"])
def test_an_agent_that_forks_leaves_no_process(env: Env, how: str) -> None:
    """A child holding the agent's stdout (in its group, or escaped with setsid) is ended
    with it: the run neither hangs on the pipe nor leaves an orphan."""
    stream, argv = AGENTS["gemini"]
    result = env.run(["-q", "--grace", "1", "--", *argv], stream, STANDIN_FORK=how)
    assert result.returncode == 0, result.stderr.decode()
    pids = env.agent_pids()
    assert len(pids) == 2 and not [pid for pid in pids if alive(pid)]


def test_ctrl_c_ends_the_agent_and_exits_130(env: Env) -> None:
    stream, argv = AGENTS["gemini"]
    proc = env.spawn(["--", *argv], stream, STANDIN_HANG="1")
    assert proc.stdout is not None
    lines = stream.read_text().splitlines()
    for _ in lines:  # the whole stream is through: the agent now hangs
        proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr.decode()
    assert "interrupted" in stderr.decode()
    assert env.agent_pids() and not [pid for pid in env.agent_pids() if alive(pid)]


def test_a_closed_stdout_ends_the_agent_quietly(env: Env) -> None:
    stream, argv = AGENTS["gemini"]
    proc = env.spawn(["-q", "--grace", "1", "--", *argv], stream, STANDIN_FLOOD="1")
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    stderr = proc.stderr.read() if proc.stderr else b""
    proc.wait(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr
    assert "standard output was closed" in stderr.decode()
    assert env.agent_pids() and not [pid for pid in env.agent_pids() if alive(pid)]


def test_no_argument_appears_in_any_output_of_ours(env: Env) -> None:
    """The canary is in the calls' arguments: it is in the agent's own stream (passed
    through) and nowhere loop-brake writes."""
    source = ROOT / "samples" / "formats" / "claude-stream.jsonl"
    stream = env.tmp / "canary-stream.jsonl"
    stream.write_text(source.read_text().replace("npm test", CANARY), encoding="utf-8")
    out = env.tmp / "agent.jsonl"
    files = {name: env.tmp / name for name in ("run.json", "junit.xml", "report.html")}
    result = env.run(
        [
            "--output",
            str(out),
            "--json",
            str(files["run.json"]),
            "--junit",
            str(files["junit.xml"]),
            "--html",
            str(files["report.html"]),
            "--stop-after",
            "0",
            "--",
            *AGENTS["claude"][1],
        ],
        stream,
    )
    assert result.returncode == 6, result.stderr.decode()
    assert CANARY in out.read_text()
    assert CANARY not in result.stderr.decode() and CANARY not in result.stdout.decode()
    for path in [*files.values(), env.summary]:
        assert CANARY not in path.read_text(encoding="utf-8"), path.name


def test_stop_after_zero_ends_at_the_first_denial(env: Env) -> None:
    stream, argv = AGENTS["gemini"]
    result = env.run(["--stop-after", "0", "--json", str(env.tmp / "r.json"), "--", *argv], stream)
    assert result.returncode == 6
    run = json.loads((env.tmp / "r.json").read_text())["run"]
    assert run["ignoredDenials"] == 0 and run["hook"]["denied"] == 1


def test_a_policy_stop_ends_the_run(env: Env) -> None:
    policy = env.tmp / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 1\n", encoding="utf-8")
    stream, argv = AGENTS["gemini"]
    result = env.run(
        ["--policy", str(policy), "--json", str(env.tmp / "r.json"), "--", *argv], stream
    )
    assert result.returncode == 6, result.stderr.decode()
    run = json.loads((env.tmp / "r.json").read_text())["run"]
    assert run["decision"]["kind"] == "stop"


@pytest.mark.parametrize(
    "argv, status, said",
    [
        (["nosuchagent", "x"], 2, "cannot tell which agent"),
        (["claude", "-p", "x"], 2, "--output-format stream-json"),
        (["codex", "exec", "x"], 2, "codex exec --json"),
        (["codex", "exec", "--json", "-c", "hooks.PreToolUse=[]", "x"], 2, "would replace"),
    ],
)
def test_command_lines_it_cannot_brake_are_usage_errors(
    env: Env, argv: list[str], status: int, said: str
) -> None:
    result = env.run(["--", *argv], GEMINI_STREAM)
    assert result.returncode == status
    assert said in result.stderr.decode()
    assert not env.agent_pids()


def test_an_agent_that_cannot_start_is_127(env: Env) -> None:
    result = env.run(
        ["--agent", "gemini", "--", str(env.tmp / "no-such-gemini"), "-o", "stream-json"],
        GEMINI_STREAM,
    )
    assert result.returncode == 127
    assert "cannot start" in result.stderr.decode()


def test_a_hook_that_fails_its_check_is_7_and_the_agent_never_starts(env: Env) -> None:
    store = env.tmp / "a-directory"
    store.mkdir()
    stream, argv = AGENTS["claude"]
    result = env.run(["--store", str(store), "--", *argv], stream)
    assert result.returncode == 7, result.stderr.decode()
    assert "could not be installed" in result.stderr.decode()
    assert not env.agent_pids()


def test_gemini_system_settings_that_cannot_be_kept_are_7(env: Env) -> None:
    system = env.tmp / "system.json"
    system.write_text("{ // a comment\n}", encoding="utf-8")
    stream, argv = AGENTS["gemini"]
    result = env.run(["--", *argv], stream, GEMINI_CLI_SYSTEM_SETTINGS_PATH=str(system))
    assert result.returncode == 7
    assert "not strict JSON" in result.stderr.decode()
    assert not env.agent_pids()


def test_session_names_the_runs_streaks(env: Env) -> None:
    stream, argv = AGENTS["gemini"]
    result = env.run(
        [
            "--session",
            "ci-job-7",
            "--stop-after",
            "0",
            "--junit",
            str(env.tmp / "j.xml"),
            "--",
            *argv,
        ],
        stream,
    )
    assert result.returncode == 6
    assert 'name="ci-job-7"' in (env.tmp / "j.xml").read_text()


OPENCODE_STANDIN = """
import json, os, subprocess, sys
with open(os.environ["STANDIN_PIDS"], "a") as handle:
    handle.write(f"{os.getpid()}\\n")
    child = subprocess.Popen(["sleep", "600"])
    handle.write(f"{child.pid}\\n")
session = "ses_standin"
for step in range(1000):  # a loop only a stop ends: the same read, again and again
    part = {"id": f"prt_{step}", "messageID": f"msg_{step}", "sessionID": session,
            "type": "tool", "tool": "read", "callID": f"call_{step}",
            "state": {"status": "completed", "input": {"filePath": os.environ["STANDIN_ARG"]},
                      "output": "same", "title": "read", "metadata": {}}}
    line = {"type": "tool_use", "timestamp": step, "sessionID": session, "part": part}
    sys.stdout.write(json.dumps(line) + "\\n")
    sys.stdout.flush()
"""


def test_opencode_is_braked_from_its_stream_alone(env: Env) -> None:
    """OpenCode has no command hook: the run reads its stream and ends it at the first
    denial (the third identical call), with its child, and says the hook could not reach it."""
    opencode = env.bin / "opencode"
    opencode.write_text(f"#!{sys.executable}\n{OPENCODE_STANDIN}", encoding="utf-8")
    opencode.chmod(0o755)
    out = env.tmp / "agent.jsonl"
    result = env.run(
        [
            "--output",
            str(out),
            "--json",
            str(env.tmp / "run.json"),
            "--junit",
            str(env.tmp / "junit.xml"),
            "--",
            "opencode",
            "run",
            "--format",
            "json",
            "fix the tests",
        ],
        CODEX_SMALL,  # unread by this stand-in; the Env wants a stream
        STANDIN_ARG=CANARY,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 6, stderr
    run = json.loads((env.tmp / "run.json").read_text())["run"]
    assert run["decision"]["kind"] == "unreachable"
    assert run["status"] == 6 and run["agentStatus"] == -signal.SIGTERM
    assert "deny 3/3" in stderr
    # the stream is passed through, from the first call to at least the denied one
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(calls) >= 3 and {c["part"]["callID"] for c in calls[:3]} == {
        "call_0",
        "call_1",
        "call_2",
    }
    assert CANARY in out.read_text() and CANARY not in stderr
    assert CANARY not in (env.tmp / "run.json").read_text()
    assert CANARY not in (env.tmp / "junit.xml").read_text()
    assert "stopped by the brake" in env.summary.read_text()
    assert env.snapshot() == env.before
    pids = env.agent_pids()
    assert len(pids) == 2 and not [pid for pid in pids if alive(pid)]
