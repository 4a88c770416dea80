"""The cline adapter: a Cline task's api_conversation_history.json, with the usage of
its requests from the ui_messages.json beside it; the folder read once; canary.

Real tasks (Cline 3.x, Claude Sonnet 4.5 and Opus 4.5: 47 and 38 tool_use blocks,
each request in ui_messages.json with ``conversationHistoryIndex``) were read to write
these fixtures, not copied: tests/fixtures/SOURCES.md says which.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from adapter_helpers import CANARY, FIXTURES, SAMPLES, assert_canary_hidden, calls, read
from conftest import run_cli

from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage, UserTurn
from loop_brake_cli.formats import get, parse_records
from loop_brake_cli.readers.reader import open_source

TASK = FIXTURES / "cline" / "synthetic--1765000000000"
HISTORY = TASK / "api_conversation_history.json"
UI_LOG = TASK / "ui_messages.json"
SAMPLE = SAMPLES / "cline.json"
MODEL = "claude-sonnet-4-5-20250929"


def figures(records: list) -> list[tuple[Any, ...]]:
    return [
        (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.model)
        for u in records
        if isinstance(u, Usage)
    ]


def hand_sum(ui_log: Path) -> dict[str, int]:
    """The UI log's requests summed by hand: what each figure adds up to, the input
    being tokensIn less the cache where the cache is no larger (docs/formats.md)."""
    total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "requests": 0}
    for message in json.loads(ui_log.read_text()):
        if message.get("say") != "api_req_started":
            continue
        info = json.loads(message["text"])
        sent, reads, writes = info["tokensIn"], info["cacheReads"], info["cacheWrites"]
        total["input"] += sent - reads - writes if reads + writes <= sent else sent
        total["output"] += info["tokensOut"]
        total["cache_read"] += reads
        total["cache_write"] += writes
        total["requests"] += 1
    return total


def ours(records: list) -> dict[str, int]:
    usage = [r for r in records if isinstance(r, Usage)]
    return {
        "input": sum(u.input_tokens or 0 for u in usage),
        "output": sum(u.output_tokens or 0 for u in usage),
        "cache_read": sum(u.cache_read_tokens or 0 for u in usage),
        "cache_write": sum(u.cache_write_tokens or 0 for u in usage),
        "requests": len(usage),
    }


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


def test_a_task_folder_is_its_session_with_the_ui_log_s_usage() -> None:
    fmt, records = read(HISTORY)
    assert fmt == "cline"
    assert [(c.tool, c.path, c.session) for c in calls(records)] == [
        ("search_files", "$[1].content[1]", "synthetic--1765000000000"),
        ("replace_in_file", "$[3].content[1]", "synthetic--1765000000000"),
        ("attempt_completion", "$[7].content[1]", "synthetic--1765000000000"),
    ]
    # each request's exact split, cache reads and writes apart, from ui_messages.json
    assert figures(records) == [
        (10, 200, 0, 12000, MODEL),  # Anthropic's: the cache larger than tokensIn, kept
        (400, 150, 2000, 0, MODEL),  # OpenAI-style: tokensIn includes the cache read
        (15, 12, 12200, 300, MODEL),  # a turn without a call
        (10, 40, 12500, 100, MODEL),
    ]
    results = [(r.call_id, r.path) for r in records if isinstance(r, ToolResult)]
    assert results == [(None, "$[2]"), ("toolu_12", "$[4].content[0]")]


def test_each_request_comes_before_the_calls_it_produced() -> None:
    """Matched by conversationHistoryIndex: request k's output is that of the assistant
    message that follows it (Cline writes the same figures in its metrics)."""
    _, records = read(HISTORY)
    history = json.loads(HISTORY.read_text())
    answers = [m["metrics"]["tokens"]["completion"] for m in history if m["role"] == "assistant"]
    kinds = [r.__class__ for r in records if r.__class__ in (Usage, ToolCall)]
    assert kinds == [Usage, ToolCall, Usage, ToolCall, Usage, Usage, ToolCall]
    assert [u.output_tokens for u in records if isinstance(u, Usage)] == answers


def test_usage_equals_the_hand_sum_of_the_ui_log() -> None:
    _, records = read(HISTORY)
    assert (
        ours(records)
        == hand_sum(UI_LOG)
        == {
            "input": 435,
            "output": 402,
            "cache_read": 26700,
            "cache_write": 12400,
            "requests": 4,
        }
    )


def test_without_a_ui_log_the_usage_is_each_message_s_metrics(tmp_path: Path) -> None:
    alone = tmp_path / "1765000000000" / "api_conversation_history.json"
    alone.parent.mkdir()
    shutil.copy(HISTORY, alone)
    _, records = read(alone)
    assert figures(records) == [
        (10, 200, 12000, None, MODEL),  # one cached figure: the writes counted as reads
        (400, 150, 2000, None, MODEL),  # prompt includes the cached part: the rest
        (15, 12, 12500, None, MODEL),
        (10, 40, 12600, None, MODEL),
    ]
    assert {c.session for c in calls(records)} == {"1765000000000"}


def copy_task(tmp_path: Path, ui_log: bytes | None = None) -> Path:
    folder = tmp_path / "tasks" / "1765000000000"
    shutil.copytree(TASK, folder)
    if ui_log is not None:
        (folder / "ui_messages.json").write_bytes(ui_log)
    return folder


def test_a_ui_log_that_is_not_json_is_said_and_the_metrics_read(tmp_path: Path) -> None:
    folder = copy_task(tmp_path, b'[{"ts": 1, "type": "say", "say": "api_req_started", ')
    _, records = read(folder / "api_conversation_history.json")
    bad = [r.message for r in records if isinstance(r, BadRecord)]
    assert bad == ["ui_messages.json beside it is not JSON: usage read from the history"]
    assert [f[:3] for f in figures(records)] == [
        (10, 200, 12000), (400, 150, 2000), (15, 12, 12500), (10, 40, 12600)
    ]  # fmt: skip
    assert len(calls(records)) == 3


def test_a_request_whose_text_is_not_json_is_located_and_counted(tmp_path: Path) -> None:
    log = json.loads(UI_LOG.read_text())
    log[5]["text"] = f"not json {CANARY}"
    folder = copy_task(tmp_path, json.dumps(log).encode())
    _, records = read(folder / "api_conversation_history.json")
    bad = [r.message for r in records if isinstance(r, BadRecord)]
    assert bad == [
        "ui_messages.json beside it, $[5].text: api_req_started text is not a JSON object"
    ]
    # still a request (a turn, cost not recorded), still before the calls it produced
    assert figures(records)[1] == (None, None, None, None, MODEL)
    assert len(figures(records)) == 4


def test_requests_without_index_or_time_are_matched_in_order(tmp_path: Path) -> None:
    """An older UI log (no conversationHistoryIndex, the history without ts): request k
    answered by assistant message k."""
    log = json.loads(UI_LOG.read_text())
    for message in log:
        message.pop("conversationHistoryIndex", None)
    folder = copy_task(tmp_path, json.dumps(log).encode())
    _, records = read(folder / "api_conversation_history.json")
    assert [f[:4] for f in figures(records)] == [
        (10, 200, 0, 12000), (400, 150, 2000, 0), (15, 12, 12200, 300), (10, 40, 12500, 100)
    ]  # fmt: skip
    kinds = [r.__class__ for r in records if r.__class__ in (Usage, ToolCall)]
    assert kinds == [Usage, ToolCall, Usage, ToolCall, Usage, Usage, ToolCall]


def test_a_legacy_finished_record_completes_its_request(tmp_path: Path) -> None:
    """Cline before 2025 wrote the figures in an api_req_finished after the request (its
    combineApiRequests merges the two)."""
    log = json.loads(UI_LOG.read_text())
    started = log[2]
    info = json.loads(started["text"])
    started["text"] = json.dumps({"request": info["request"]})
    finished = {k: info[k] for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost")}
    finish = {"ts": started["ts"] + 1, "type": "say", "say": "api_req_finished"}
    log.insert(3, {**finish, "text": json.dumps(finished)})
    folder = copy_task(tmp_path, json.dumps(log).encode())
    _, records = read(folder / "api_conversation_history.json")
    assert figures(records)[0] == (10, 200, 0, 12000, MODEL)
    assert len(figures(records)) == 4


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


def test_a_directory_replay_reads_the_folder_once(tmp_path: Path) -> None:
    """The task's calls once (from the history), its usage once (from the UI log), the
    UI log and the metadata skipped without a word."""
    copy_task(tmp_path)
    result = run_cli("replay", "--json", str(tmp_path / "tasks"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(Path(f["file"]).name, f["format"], f["calls"]) for f in doc["files"]] == [
        ("api_conversation_history.json", "cline", 3)
    ]
    assert doc["totals"]["calls"] == 3
    assert sorted(Path(s["file"]).name for s in doc["skipped"]) == [
        "task_metadata.json", "ui_messages.json"
    ]  # fmt: skip
    assert result.stderr == b""  # skipped without a word, as Gemini CLI's logs.json
    tokens = doc["usage"]["tokens"]
    expected = hand_sum(UI_LOG)
    assert (doc["usage"]["turns"], tokens["input"], tokens["output"]) == (
        expected["requests"], expected["input"], expected["output"]
    )  # fmt: skip
    assert (tokens["cacheRead"], tokens["cacheWrite"]) == (
        expected["cache_read"], expected["cache_write"]
    )  # fmt: skip


def test_both_files_named_are_still_one_transcript(tmp_path: Path) -> None:
    """``replay tasks/*/*.json`` names both: the UI log is said once and not read again."""
    folder = copy_task(tmp_path)
    named = [str(folder / "api_conversation_history.json"), str(folder / "ui_messages.json")]
    result = run_cli("replay", "--json", *named)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["totals"]["calls"] == 3
    assert doc["usage"]["turns"] == 4
    assert [Path(s["file"]).name for s in doc["skipped"]] == ["ui_messages.json"]
    assert b"--format cline-ui reads it alone" in result.stderr


def test_the_ui_log_named_alone_beside_its_history_says_so(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    named = run_cli("replay", str(folder / "ui_messages.json"))
    assert named.returncode == 4  # nothing else to replay
    assert b"read with the api_conversation_history.json beside it" in named.stderr
    forced = run_cli("replay", "--json", "--format", "cline-ui", str(folder / "ui_messages.json"))
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["totals"]["calls"] == 3


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


def test_no_ui_log_content_in_any_output(tmp_path: Path) -> None:
    """A task folder whose UI log holds a secret in every text: never printed, even in
    the errors a broken record gives."""
    log = json.loads(UI_LOG.read_text())
    for message in log:
        message["text"] = f"{CANARY} {message.get('text', '')}"
    folder = copy_task(tmp_path, json.dumps(log).encode())
    for args in (("--json",), ("--verdicts", "-"), ()):
        result = run_cli("replay", *args, str(folder.parent))
        assert CANARY.encode() not in result.stdout + result.stderr
        assert b"api_req_started text is not a JSON object" in result.stdout + result.stderr
