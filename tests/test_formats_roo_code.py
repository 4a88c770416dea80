"""The roo-code adapter: a Roo Code task's api_conversation_history.json, told from
Cline's by its head, with the usage of its requests from the ui_messages.json beside
it matched by time; the folder read once; canary.

No public Roo Code task folder was found: the fixtures are written from Roo Code's
source (tests/fixtures/SOURCES.md says which files).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from adapter_helpers import CANARY, FIXTURES, SAMPLES, assert_canary_hidden, calls, read
from conftest import run_cli
from test_formats_cline import figures, hand_sum, ours

from loop_brake_cli.core.records import ToolCall, ToolResult, Usage
from loop_brake_cli.formats import detect
from loop_brake_cli.formats._cline_task import agent

TASK = FIXTURES / "roo-code" / "synthetic--019cadc0-7c00-7000-8000-000000000001"
HISTORY = TASK / "api_conversation_history.json"
UI_LOG = TASK / "ui_messages.json"
SAMPLE = SAMPLES / "roo-code.json"
MODEL = "claude-sonnet-4-5"


def test_own_sample_runs_the_build_three_times() -> None:
    fmt, records = read(SAMPLE)
    assert fmt == "roo-code"
    build = {"command": "npm run build"}
    assert [(c.tool, c.args, c.call_id) for c in calls(records)] == [
        ("read_file", {"path": "package.json"}, "toolu_01"),
        ("execute_command", build, "toolu_02"),
        ("execute_command", build, "toolu_03"),
        ("execute_command", build, "toolu_04"),
    ]
    assert not [r for r in records if isinstance(r, Usage)]  # Roo records none in its history
    result = run_cli("replay", "--expect-deny", str(SAMPLE))
    assert result.returncode == 0, result.stderr


def test_a_task_folder_its_calls_results_and_session() -> None:
    fmt, records = read(HISTORY)
    assert fmt == "roo-code"
    session = TASK.name
    test = {"command": "npm test", "cwd": None}
    assert [(c.tool, c.call_id, c.path) for c in calls(records)] == [
        ("execute_command", "toolu_r1", "$[1].content[1]"),
        ("read_file", "toolu_r2", "$[3].content[1]"),  # after Roo's reasoning block
        ("mcp--github--get_issue", "toolu_r3", "$[5].content[0]"),
        ("apply_diff", "toolu_r4", "$[7].content[0]"),
        ("execute_command", "toolu_r5", "$[9].content[0]"),
        ("execute_command", "toolu_r6", "$[11].content[0]"),
        ("execute_command", "toolu_r7", "$[13].content[0]"),
    ]
    assert calls(records)[-1].args == test
    assert {c.session for c in calls(records)} == {session}
    results = [(r.call_id, r.result["isError"]) for r in records if isinstance(r, ToolResult)]
    assert results[2] == ("toolu_r3", True)  # Roo's is_error: an MCP server not connected
    assert sum(error for _, error in results) == 1


def test_requests_are_matched_to_their_answers_by_time() -> None:
    """No conversationHistoryIndex in Roo: each request goes before the first assistant
    message written after it began; the one no message answered (an empty response,
    then retried) is a turn with no call, and the retry owns the calls."""
    _, records = read(HISTORY)
    assert figures(records) == [
        (10, 85, 0, 14280, MODEL),  # tokensIn includes the cache (Roo since 3.30)
        (320, 0, 14280, 0, MODEL),  # the empty response
        (10, 120, 14280, 360, MODEL),  # its retry
        (10, 40, 14640, 250, MODEL),
        (10, 210, 14890, 200, MODEL),
        (0, 30, 15090, 210, MODEL),
        (0, 30, 15300, 200, MODEL),
        (0, 30, 15500, 200, MODEL),
    ]
    kinds = [r.__class__ for r in records if r.__class__ in (Usage, ToolCall)]
    assert kinds[:6] == [Usage, ToolCall, Usage, Usage, ToolCall, Usage]


def test_usage_equals_the_hand_sum_of_the_ui_log() -> None:
    _, records = read(HISTORY)
    assert ours(records) == hand_sum(UI_LOG)
    assert ours(records)["requests"] == 8


def test_a_directory_replay_reads_the_folder_once(tmp_path: Path) -> None:
    shutil.copytree(TASK, tmp_path / "tasks" / TASK.name)
    result = run_cli("replay", "--json", str(tmp_path / "tasks"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(Path(f["file"]).name, f["format"], f["calls"]) for f in doc["files"]] == [
        ("api_conversation_history.json", "roo-code", 7)
    ]
    assert doc["totals"]["calls"] == 7
    assert doc["totals"]["denied"] == 1  # npm test, the third time in a row
    assert [Path(s["file"]).name for s in doc["skipped"]] == ["ui_messages.json"]
    assert doc["usage"]["turns"] == 8
    assert doc["usage"]["tokens"]["cacheWrite"] == hand_sum(UI_LOG)["cache_write"]
    assert result.stderr == b""


def head(opening: str, env: str = "", extra: dict | None = None) -> bytes:
    texts = [{"type": "text", "text": opening}, {"type": "text", "text": env}]
    first = {"role": "user", "content": texts}
    second = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], **(extra or {})}
    return json.dumps([first, second]).encode()


ROO_ENV = (
    "<environment_details>\n# Current Mode\n<slug>code</slug>\n<name>Code</name>\n"
    "</environment_details>"
)
CLINE_ENV = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"
MODEL_INFO = {"modelInfo": {"modelId": "m", "providerId": "anthropic", "mode": "act"}}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (head("<user_message>\nfix\n</user_message>"), "roo-code"),  # Roo since Jan 2026
        (head("<task>\nfix\n</task>", ROO_ENV), "roo-code"),  # Roo's mode slug
        (head("<task>\nfix\n</task>", CLINE_ENV), "cline"),
        (head("<task>\nfix\n</task>"), "cline"),  # no mark of either: Cline's
        (head("<task>\nfix\n</task>", ROO_ENV, MODEL_INFO), "cline"),  # modelInfo decides
        (head("<user_message>\nfix\n</user_message>", "", MODEL_INFO), "cline"),
        (head("hello"), None),  # not a task history
    ],
)
def test_which_agent_is_decided_from_the_head(data: bytes, expected: str | None) -> None:
    assert agent(data) == expected
    if expected is not None:
        assert detect(data, "x.json").INFO.name == expected


def test_no_argument_in_any_output(tmp_path: Path) -> None:
    doc = json.loads(SAMPLE.read_text())
    for message in doc:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                block["input"] = {"command": f"curl -H 'Authorization: {CANARY}' x"}
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(doc))
    assert_canary_hidden("roo-code", path)
