"""No silent zero (issue 39 item 4): a file that gives no tool call is said on stderr.

A file that is not blank, read without an unreadable record, and gave no call is
named once on stderr with what was read (its assistant messages, or none), in the
summary and in ``--verdicts``; stdout is what it was (``--json`` has no new key);
with ``--strict`` the file is unreadable, exit 3. A directory of many such files
gets one line.
"""

from __future__ import annotations

import json
from pathlib import Path

from adapter_helpers import CANARY, SAMPLES
from conftest import run_cli

CHAT = [
    {"role": "user", "content": f"say hello {CANARY}"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "again"},
    {"role": "assistant", "content": "Hello again!"},
]


def chat(tmp_path: Path, name: str = "talk.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(CHAT))
    return path


def test_a_chat_without_calls_warns_and_fails_under_strict(tmp_path: Path) -> None:
    path = chat(tmp_path)
    said = f"{path}: warning: no tool call in its 2 assistant messages (read as openai-chat)"
    result = run_cli("replay", str(path))
    assert result.returncode == 0
    assert said in result.stderr.decode()
    strict = run_cli("replay", "--strict", str(path))
    assert strict.returncode == 3
    assert f"{path}: no tool call in its 2 assistant messages" in strict.stderr.decode()
    for args in (["--verdicts"], ["--verdicts", "--strict"]):
        verdicts = run_cli("replay", *args, str(path))
        assert verdicts.returncode == (3 if "--strict" in args else 0)
        assert "no tool call in its 2 assistant messages" in verdicts.stderr.decode()
        assert verdicts.stdout == b""
    assert CANARY.encode() not in result.stdout + result.stderr + strict.stderr


def test_json_output_is_unchanged(tmp_path: Path) -> None:
    result = run_cli("replay", "--json", str(chat(tmp_path)))
    assert result.returncode == 0
    (info,) = json.loads(result.stdout)["files"]
    assert set(info) == {"file", "format", "calls", "denied", "sessions", "unreadable", "error"}
    assert info["calls"] == 0 and info["error"] is None
    assert b"warning: no tool call" in result.stderr


def test_a_file_forced_into_a_format_warns_too(tmp_path: Path) -> None:
    """Forced into its own format, a file without calls was silent: now it is said. A
    mini-swe-agent run forced into openai-chat (as it was read before it had a format
    of its own) is unreadable with the advice to use its format."""
    path = chat(tmp_path)
    result = run_cli("replay", "--format", "openai-chat", str(path))
    assert result.returncode == 0
    assert "no tool call in its 2 assistant messages (read as openai-chat)" in (
        result.stderr.decode()
    )
    assert run_cli("replay", "--format", "openai-chat", "--strict", str(path)).returncode == 3
    sample = SAMPLES / "mini-swe-agent.traj.json"
    result = run_cli("replay", "--format", "openai-chat", str(sample))
    assert result.returncode == 3
    assert "use --format mini-swe-agent" in result.stderr.decode()


def test_standard_input_says_what_the_adapter_counted() -> None:
    """A stream cannot be read again: the adapter's own count of model messages."""
    doc = json.loads((SAMPLES / "mini-swe-agent.traj.json").read_text())
    for message in doc["messages"]:
        if message["role"] == "assistant":
            message["content"] = "THOUGHT: nothing to run."
    result = run_cli("replay", "-", input=json.dumps(doc).encode())
    assert result.returncode == 0
    assert "no tool call in its 4 assistant messages (read as mini-swe-agent)" in (
        result.stderr.decode()
    )


def test_a_file_of_other_events_says_it_holds_no_assistant_message(tmp_path: Path) -> None:
    path = tmp_path / "post.json"
    event = {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash"}
    path.write_text(json.dumps({**event, "tool_input": {}, "tool_response": {}}))
    result = run_cli("replay", str(path))
    assert "no tool call and no assistant message (read as claude-hooks)" in result.stderr.decode()


def test_unreadable_and_blank_files_are_not_said_twice(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tool": 1}\n')  # one unreadable record: said as such, not as a zero
    result = run_cli("replay", "--format", "events", str(bad))
    assert result.returncode == 3
    assert b"warning: no tool call" not in result.stderr
    calls = SAMPLES / "openai-chat.json"
    result = run_cli("replay", str(calls))
    assert result.returncode == 0 and b"warning" not in result.stderr


def test_a_directory_of_many_zero_files_is_one_line(tmp_path: Path) -> None:
    for n in range(5):
        chat(tmp_path, f"talk-{n}.json")
    (tmp_path / "calls.json").write_bytes((SAMPLES / "openai-chat.json").read_bytes())
    result = run_cli("replay", str(tmp_path))
    assert result.returncode == 0
    lines = [line for line in result.stderr.decode().splitlines() if "no tool call" in line]
    assert lines == [
        f"loop-brake replay: warning: 5 files gave no tool call: {tmp_path}/talk-0.json, "
        f"{tmp_path}/talk-1.json, {tmp_path}/talk-2.json and 2 more "
        "(--strict makes them unreadable)"
    ]
    assert run_cli("replay", "--strict", str(tmp_path)).returncode == 3
    few = tmp_path / "few"
    few.mkdir()
    chat(few)
    result = run_cli("replay", "-j", "2", str(few), str(SAMPLES / "openai-chat.json"))
    assert f"{few}/talk.json: warning: no tool call in its 2" in result.stderr.decode()
