"""What the hook tests (tests/test_hook.py, tests/test_hook_store.py) share.

Each agent's pre-tool input as its documentation shows it, one hook run as a
real process, and the assertions on what an allowed call leaves behind.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_cli

CANARY = "CANARY-7f3a-do-not-leak"
MESSAGE_START = 'loop brake: tool "Bash" called 3 times in a row with identical arguments'


def claude_input(i: int = 1, session: object = "sess-1", args: object = None, **extra) -> bytes:
    payload = {
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/p/sess.jsonl",
        "cwd": "/home/u/p",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": args if args is not None else {"command": f"cat {CANARY}.txt"},
        "tool_use_id": f"toolu_{i:04d}",
    }
    payload.update(extra)
    return json.dumps(payload).encode()


def codex_input(i: int = 1, args: object = None) -> bytes:
    payload = json.loads(claude_input(i, args=args))
    payload["turn_id"] = "turn-1"
    payload["model"] = "gpt-5"
    return json.dumps(payload).encode()


def gemini_input(i: int = 1, args: object = None) -> bytes:
    return json.dumps(
        {
            "session_id": "g-1",
            "transcript_path": "/t.json",
            "cwd": "/w",
            "hook_event_name": "BeforeTool",
            "timestamp": f"2026-11-29T19:00:{i:02d}Z",
            "tool_name": "Bash",
            "tool_input": args if args is not None else {"command": CANARY},
        }
    ).encode()


def cursor_input(i: int = 1, args: object = None, event: str = "beforeMCPExecution") -> bytes:
    tool_input = args if args is not None else json.dumps({"query": CANARY})
    return json.dumps(
        {
            "conversation_id": "conv-1",
            "generation_id": f"gen-{i}",
            "hook_event_name": event,
            "workspace_roots": ["/w"],
            "tool_name": "Bash",
            "tool_input": tool_input,
        }
    ).encode()


def hook(state: Path, payload: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("hook", "--state", str(state), *args, input=payload)


def assert_allowed(result: subprocess.CompletedProcess[bytes]) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr


def store_bytes(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in state.parent.iterdir() if p.is_file())


def assert_fail_open_notice(stdout: bytes) -> None:
    """Nothing, or the session's one fail-open notice (hook/notice.py): a systemMessage
    alone, no decision, so the call is allowed as with no answer."""
    if stdout == b"":
        return
    answer = json.loads(stdout)
    assert set(answer) == {"systemMessage"}, answer
    assert answer["systemMessage"].startswith("loop brake is off for this session: ")


def assert_allowed_with_warning(result: subprocess.CompletedProcess[bytes]) -> str:
    """Allowed (exit 0; no output but the session's fail-open notice) with exactly one
    stderr line; returns it."""
    assert result.returncode == 0
    assert_fail_open_notice(result.stdout)
    text = result.stderr.decode()
    assert text.startswith("loop-brake hook: ")
    assert text.count("\n") == 1, text
    assert "Traceback" not in text
    return text


def logged(log: Path) -> list[tuple]:
    """The --log lines as (session, call id, count, duplicate)."""
    return [
        (r["sessionId"], r.get("callId"), r["count"], r.get("duplicate", False))
        for r in map(json.loads, log.read_text().splitlines())
    ]
