"""The cline adapter: a Cline task's api_conversation_history.json, its usage; canary.

A real task (Cline 3.x, Claude Sonnet 4.5: 47 tool_use blocks, each assistant
message with ``metrics.tokens``) was read to write these fixtures, not copied:
tests/fixtures/SOURCES.md says which. Its ``ui_messages.json`` and
``task_metadata.json`` beside it are skipped without a word in a directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from adapter_helpers import CANARY, FIXTURES, SAMPLES, assert_canary_hidden, calls, read
from conftest import run_cli

from loop_brake_cli.core.records import ToolResult, Usage, UserTurn
from loop_brake_cli.formats import get, parse_records
from loop_brake_cli.readers.reader import open_source

TASK = FIXTURES / "cline" / "synthetic--1765000000000"
HISTORY = TASK / "api_conversation_history.json"
SAMPLE = SAMPLES / "cline.json"


def test_own_sample_runs_the_build_three_times() -> None:
    fmt, records = read(SAMPLE)
    assert fmt == "cline"
    build = {"command": "npm run build", "requires_approval": False}
    assert [(c.tool, c.args, c.call_id) for c in calls(records)] == [
        ("read_file", {"path": "package.json"}, "toolu_01"),
        ("execute_command", build, "toolu_02"),
        ("execute_command", build, "toolu_03"),
        ("execute_command", build, "toolu_04"),
    ]
    assert {c.session for c in calls(records)} == {str(SAMPLE)}  # not a task folder's file
    result = run_cli("replay", "--expect-deny", str(SAMPLE))
    assert result.returncode == 0, result.stderr


def test_a_task_folder_is_its_session_with_usage_and_results() -> None:
    fmt, records = read(HISTORY)
    assert fmt == "cline"
    assert [(c.tool, c.path, c.session) for c in calls(records)] == [
        ("search_files", "$[1].content[1]", "synthetic--1765000000000"),
        ("replace_in_file", "$[3].content[1]", "synthetic--1765000000000"),
        ("attempt_completion", "$[7].content[1]", "synthetic--1765000000000"),
    ]
    usage = [r for r in records if isinstance(r, Usage)]
    figures = [(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.model) for u in usage]
    model = "claude-sonnet-4-5-20250929"
    assert figures == [
        (10, 200, 12000, model),  # Anthropic's figures: cached > prompt, kept as they are
        (400, 150, 2000, model),  # Cline's definition: prompt includes the cached part
        (15, 12, 12500, model),  # a turn without a call
        (10, 40, 12600, model),
    ]
    results = [(r.call_id, r.path) for r in records if isinstance(r, ToolResult)]
    assert results == [(None, "$[2]"), ("toolu_12", "$[4].content[0]")]


def user_turns(path: Path) -> list[str | None]:
    source = open_source(str(path))
    try:
        records = list(parse_records(get("cline"), source, user_turns=True))
    finally:
        source.close()
    return [r.path for r in records if isinstance(r, UserTurn)]


def test_user_turns_are_the_user_s_words_not_cline_s_results(tmp_path: Path) -> None:
    assert user_turns(SAMPLE) == ["$[0]"]
    assert user_turns(HISTORY) == ["$[0]", "$[6]"]
    # a written result with no call open before it (the call's message cut from the
    # history) is still Cline's, not the user's
    doc = json.loads(SAMPLE.read_text())
    orphan = [doc[0], {"role": "assistant", "content": [{"type": "text", "text": "Next."}]}, doc[2]]
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(orphan))
    assert user_turns(path) == ["$[0]"]


def test_a_directory_of_tasks_skips_the_companions_quietly(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(TASK, tasks / "1765000000000")
    result = run_cli("replay", "--json", str(tasks))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(Path(f["file"]).name, f["format"], f["calls"]) for f in doc["files"]] == [
        ("api_conversation_history.json", "cline", 3)
    ]
    assert sorted(Path(s["file"]).name for s in doc["skipped"]) == [
        "task_metadata.json", "ui_messages.json"
    ]  # fmt: skip
    assert result.stderr == b""  # skipped without a word, as Gemini CLI's logs.json
    named = run_cli("replay", str(tasks / "1765000000000" / "ui_messages.json"))
    assert named.returncode == 3
    assert b"Cline's UI log" in named.stderr


def test_a_history_of_xml_tool_tags_says_it_read_no_call(tmp_path: Path) -> None:
    """Before native tool calls, Cline wrote its tools as XML in the text: not read,
    and said (issue 39: no silent zero)."""
    old = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nList files\n</task>"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "<list_files>\n<path>.</path>\n</list_files>"}],
        },  # fmt: skip
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(old))
    result = run_cli("replay", str(path))
    assert result.returncode == 0
    assert "no tool call in its 1 assistant message (read as cline)" in result.stderr.decode()


def test_no_argument_in_any_output(tmp_path: Path) -> None:
    doc = json.loads(SAMPLE.read_text())
    for message in doc:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                block["input"] = {"command": f"curl -H 'Authorization: {CANARY}' x"}
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(doc))
    assert_canary_hidden("cline", path)
