"""``loop-brake run``'s exit status, JUnit and step summary, from docs/ci.md.

A session the brake denied but did not stop (the agent changed course) is no JUnit
failure and is ``ok`` in the step summary; ``$GITHUB_STEP_SUMMARY`` is appended to;
a run without a tool call is one test case; an identifier is escaped for the
Markdown table; an agent killed by a signal the run did not send exits 128 + N, as a
shell says, and the summary names the signal; an output that cannot be written
turns a clean exit into 5. Stand-ins: tests/standin_agent.py (``test_run.Env``), and
an OpenCode-like agent written here whose stream this test chooses.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from test_run import AGENTS, CODEX_SMALL, Env, alive

SCRIPTED = """
import json, os, signal, sys
session = os.environ.get("STANDIN_SESSION", "ses_standin")
for step in range(int(os.environ.get("STANDIN_CALLS", "0"))):
    part = {"id": f"prt_{step}", "messageID": f"msg_{step}", "sessionID": session,
            "type": "tool", "tool": "read", "callID": f"call_{step}",
            "state": {"status": "completed", "input": {"filePath": f"file-{step}"},
                      "output": "ok", "title": "read", "metadata": {}}}
    line = {"type": "tool_use", "timestamp": step, "sessionID": session, "part": part}
    sys.stdout.write(json.dumps(line) + "\\n")
sys.stdout.flush()
if os.environ.get("STANDIN_KILL"):
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


OPENCODE = ["opencode", "run", "--format", "json", "fix the tests"]


def _scripted(env: Env) -> None:
    path = env.bin / "opencode"
    path.write_text(f"#!{sys.executable}\n{SCRIPTED}", encoding="utf-8")
    path.chmod(0o755)


def test_a_session_denied_but_not_stopped_is_no_failure(env: Env) -> None:
    env.summary.write_text("earlier step\n", encoding="utf-8")
    stream, argv = AGENTS["gemini"]
    junit = env.tmp / "junit.xml"
    result = env.run(
        ["--stop-after", "5", "--junit", str(junit), "-q", "--", *argv], stream, STANDIN_LOOP="2"
    )
    assert result.returncode == 0, result.stderr.decode()
    text = junit.read_text()
    assert 'tests="1" failures="0"' in text and "<failure" not in text
    assert "denied 4" in text
    summary = env.summary.read_text()
    assert summary.startswith("earlier step\n### loop-brake run: the brake did not act")
    row = next(line for line in summary.splitlines() if "| 6 | 4 |" in line)
    assert row.endswith("| ok |")


def test_a_run_without_a_call_is_one_test_case(env: Env) -> None:
    _scripted(env)
    junit = env.tmp / "junit.xml"
    result = env.run(["--junit", str(junit), "-q", "--", *OPENCODE], CODEX_SMALL)
    assert result.returncode == 0, result.stderr.decode()
    text = junit.read_text()
    assert 'tests="1" failures="0"' in text and 'name="(no tool call)"' in text


def test_a_session_name_cannot_split_the_summary_table(env: Env) -> None:
    _scripted(env)
    result = env.run(["-q", "--", *OPENCODE], CODEX_SMALL, STANDIN_SESSION="a|b", STANDIN_CALLS="1")
    assert result.returncode == 0, result.stderr.decode()
    rows = [line for line in env.summary.read_text().splitlines() if "`a" in line]
    assert rows == ["| `a\\|b` | 1 | 0 | 1 x `read` " + rows[0].split("`read` ")[1]]
    assert rows[0].count("|") - rows[0].count("\\|") == 6


def test_an_agent_killed_by_a_signal_exits_as_a_shell_says(env: Env) -> None:
    _scripted(env)
    report = env.tmp / "run.json"
    result = env.run(["--json", str(report), "--", *OPENCODE], CODEX_SMALL, STANDIN_KILL="1")
    assert result.returncode == 128 + signal.SIGKILL, result.stderr.decode()
    assert "(the agent's: killed by signal 9)" in result.stderr.decode()
    run = json.loads(report.read_text())["run"]
    assert run["status"] == 137 and run["agentStatus"] == -signal.SIGKILL


def test_an_output_that_cannot_be_written_turns_a_clean_exit_into_5(env: Env) -> None:
    _scripted(env)
    junit = env.tmp / "no-such-folder" / "junit.xml"
    result = env.run(["-q", "--junit", str(junit), "--", *OPENCODE], CODEX_SMALL)
    assert result.returncode == 5
    assert f"cannot write {junit}" in result.stderr.decode()


TERM_IGNORER = """
import os, subprocess
child = subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do sleep 1; done"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open(os.environ["STANDIN_PIDS"], "a") as handle:
    handle.write(f"{os.getpid()}\\n{child.pid}\\n")
"""


def test_a_child_that_ignores_sigterm_is_killed_when_the_agent_exits(env: Env) -> None:
    """The agent exits by itself; the rest of its group gets SIGTERM, then SIGKILL."""
    path = env.bin / "opencode"
    path.write_text(f"#!{sys.executable}\n{TERM_IGNORER}", encoding="utf-8")
    path.chmod(0o755)
    try:
        result = env.run(["-q", "--grace", "0.5", "--", *OPENCODE], CODEX_SMALL)
        assert result.returncode == 0, result.stderr.decode()
        pids = env.agent_pids()
        assert len(pids) == 2 and not [pid for pid in pids if alive(pid)]
    finally:
        for pid in env.agent_pids():
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
