"""Identifiers from transcripts never drive the terminal (issue 23).

Tool names, session ids and file names holding escape sequences, C0/C1 controls
or U+2028/U+2029 reached replay's summary raw, even through a pipe (clear the
screen, set the window title). Every text for people now shows them escaped
(``visible``); JSON outputs keep them exact.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env, run_cli

from loop_brake_cli.hook.runner import main as hook_main
from loop_brake_cli.render.visible import visible

TOOL = "evil\x1b]0;pwned\x07\x1b[2J\u2028x\x9b31m\u202e"
SESSION = "sess\x1b[31mred\u2029"
SHOWN_TOOL = "evil\\x1b]0;pwned\\x07\\x1b[2J\\u2028x\\x9b31m\\u202e"
SHOWN_SESSION = "sess\\x1b[31mred\\u2029"
RAW = ("\x1b", "\x07", "\x9b", "\u2028", "\u2029", "\u202e")


def assert_clean(text: str) -> None:
    assert not any(char in text for char in RAW), ascii(text)


def transcript(tmp_path: Path, name: str = "evil\x1b[2J.jsonl") -> Path:
    lines = [
        json.dumps({"tool": TOOL, "args": {"a": 1}, "sessionId": SESSION, "callId": f"c{n}"})
        for n in range(4)
    ]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_visible_escapes_every_control_and_keeps_the_rest() -> None:
    assert visible(TOOL) == SHOWN_TOOL
    assert visible("\ud800 é 日本 \t") == "\\ud800 é 日本 \\x09"
    assert visible("a\nb\x1b", lines=True) == "a\nb\\x1b"
    assert visible("plain-name_1.jsonl") == "plain-name_1.jsonl"


def test_replay_summary_through_a_pipe_shows_the_escapes(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    result = run_cli("replay", str(path))
    out = result.stdout.decode("utf-8")
    assert_clean(out)
    assert SHOWN_TOOL in out and SHOWN_SESSION in out and "evil\\x1b[2J.jsonl" in out
    exact = run_cli("replay", "--json", str(path))
    document = json.loads(exact.stdout)
    assert document["sessions"][0]["session"] == SESSION  # JSON stays exact


def test_replay_compare_policy_and_errors_show_the_escapes(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    policy = str(ROOT / "samples" / "policies" / "write-stdin.toml")
    compared = run_cli("replay", "--compare-policy", policy, str(path))
    assert_clean(compared.stdout.decode())
    assert SHOWN_SESSION in compared.stdout.decode()
    missing = run_cli("replay", str(tmp_path / "gone\x1b[2J\u2028.jsonl"))
    assert missing.returncode == 3
    err = missing.stderr.decode()
    assert_clean(err)
    assert "gone\\x1b[2J\\u2028.jsonl" in err
    unreadable = run_cli("filter", "--policy", str(tmp_path / "no\x9bsuch.toml"), str(path))
    assert unreadable.returncode == 3  # a missing --policy is unreadable input (d3a5130)
    assert_clean(unreadable.stderr.decode())


def test_filter_verdicts_stay_exact_json(tmp_path: Path) -> None:
    result = run_cli("filter", str(transcript(tmp_path)))
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert {(v["toolName"], v["sessionId"]) for v in verdicts} == {(TOOL, SESSION)}


def test_mcp_proxy_note_shows_the_escapes(tmp_path: Path) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": {"k": "\x1b[2J"},
        "method": "tools/call",
        "params": {"name": TOOL, "arguments": {}},
    }
    line = json.dumps(request, ensure_ascii=False).encode() + b"\n"
    done = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--"]
        + [sys.executable, str(ROOT / "tests" / "echo_server.py")],
        input=line * 3,
        capture_output=True,
        env=cli_env(),
        timeout=60,
    )
    assert done.returncode == 0
    err = done.stderr.decode()
    assert "denied tools/call" in err, err
    assert "x\\x9b31m\\u202e" in err  # raw C1 and bidi controls, escaped
    assert_clean(err)


def test_state_list_and_hook_warnings_show_the_escapes(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": SESSION,
        "tool_name": TOOL,
        "tool_input": {},
    }
    err = io.StringIO()
    argv = ["--agent", "claude-code", "--state", str(state)]
    argv += ["--policy", str(tmp_path / "gone\x1b[2J.toml")]
    hook_main(argv, io.BytesIO(json.dumps(payload).encode()), io.BytesIO(), err)
    assert_clean(err.getvalue())
    assert "gone\\x1b[2J.toml" in err.getvalue()
    out = io.BytesIO()
    assert hook_main(argv[:4], io.BytesIO(json.dumps(payload).encode()), out, io.StringIO()) == 0
    listed = run_cli("state", "list", "--state", str(state))
    assert_clean(listed.stdout.decode())
    assert SHOWN_SESSION in listed.stdout.decode() and SHOWN_TOOL in listed.stdout.decode()
    exact = run_cli("state", "list", "--state", str(state), "--json")
    row = json.loads(exact.stdout)
    assert (row["sessionId"], row["toolName"]) == (SESSION, TOOL)
