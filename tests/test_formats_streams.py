"""The agents' headless output streams: claude-stream, codex-exec, gemini-stream.

Real recorded streams (tests/fixtures/SOURCES.md) are detected and read whole, each
call once in the session the stream names; edge cases are located; no argument
reaches any output (filter, replay); nothing raises on any input; and ``filter``
prints each verdict as its call arrives, proved by a producer process that writes
the next line only after it has read the verdict of the last call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    SAMPLES,
    assert_never_raises,
    calls,
    check_errors_hide,
    longest_streak,
    parse_bytes,
    read,
)
from conftest import ROOT, cli_env, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord, ToolResult, Usage

CLAUDE_REAL = FIXTURES / "claude-stream" / "DERIVED--hive-mind-issue-667-pr49-run1.jsonl.gz"
CLAUDE_SESSION = "46c574cf-a4e0-4294-912b-3e69ecc53cf5"
CLAUDE_SUBAGENT = f"{CLAUDE_SESSION}/toolu_01BVnfPHqPjZRv9vh1Fv4cWf"
CODEX_RUN1 = FIXTURES / "codex-exec" / "DERIVED--hive-mind-issue-642-run1.jsonl"
CODEX_RUN2 = FIXTURES / "codex-exec" / "DERIVED--hive-mind-issue-642-run2.jsonl"


def bad(records: list) -> list[tuple[int | None, str]]:
    return [(r.line, r.message) for r in records if isinstance(r, BadRecord)]


def distinct_ids(path: Path, kinds: tuple[str, ...]) -> set[str]:
    """The item ids of a codex exec stream's call items, read independently of the adapter."""
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        item = obj.get("item")
        if obj["type"].startswith("item.") and item.get("type") in kinds:
            ids.add(item["id"])
    return ids


# ---------------------------------------------------------------- claude -p stream-json


def test_real_claude_stream_is_detected_with_every_call_in_its_sessions() -> None:
    """A real ``claude -p --output-format stream-json`` run (55 tool_use blocks, 10 of
    them a Task subagent's): detected, every call once, in the session its
    ``session_id`` names and the subagent's own streak."""
    fmt, records = read(CLAUDE_REAL)
    assert fmt == "claude-stream"
    assert bad(records) == []
    found = calls(records)
    assert len(found) == 55 == len({c.call_id for c in found})
    sessions = [c.session for c in found]
    assert sessions.count(CLAUDE_SESSION) == 45 and sessions.count(CLAUDE_SUBAGENT) == 10
    assert CLAUDE_SUBAGENT.split("/")[1] in {c.call_id for c in found if c.tool == "Task"}
    assert longest_streak(records) == (1, 0)


def test_real_claude_stream_replays_as_a_new_user_runs_it() -> None:
    done = run_cli("replay", "--json", str(CLAUDE_REAL))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["totals"]["formats"] == {"claude-stream": 1}
    assert document["totals"]["calls"] == 55 and document["totals"]["unreadable"] == 0
    assert sorted(s["session"] for s in document["sessions"]) == [CLAUDE_SESSION, CLAUDE_SUBAGENT]
    assert document["usage"]["turns"] > 0  # each message's usage, once per message id


def test_claude_stream_results_and_usage() -> None:
    _, records = read(CLAUDE_REAL)
    results = [r for r in records if isinstance(r, ToolResult)]
    assert len(results) == 47  # 8 result lines were lost in the log the stream came from
    ids = {c.call_id for c in calls(records)}
    assert {r.call_id for r in results} <= ids
    usages = [r for r in records if isinstance(r, Usage)]
    assert len({u.turn for u in usages}) == len(usages)  # one record per message id


def test_claude_stream_edge_cases() -> None:
    fmt, records = read(FIXTURES / "claude-stream" / "synthetic--edge-cases.jsonl")
    assert fmt == "claude-stream"
    assert [(c.tool, c.session, c.call_id, c.line) for c in calls(records)] == [
        ("Bash", "s-edge", "toolu_A", 3),  # the stream_event's partial block is not a call
        ("Task", "s-edge", "toolu_T", 6),
        ("Bash", "s-edge/toolu_T", "toolu_S1", 7),
    ]
    assert bad(records) == [
        (9, "session_id or parent_tool_use_id is not a string"),
        (10, "session_id or parent_tool_use_id is not a string"),
        (11, "tool_use block without a string name"),
        (13, "not valid JSON: expecting ',' delimiter at column 136"),
    ]
    usage = next(r for r in records if isinstance(r, Usage))
    assert (usage.output_tokens, usage.cache_read_tokens) == (7, 100)  # the later, final line
    results = [(r.session, r.call_id, r.result) for r in records if isinstance(r, ToolResult)]
    assert results == [
        ("s-edge", "toolu_A", {"content": "FAIL", "isError": True}),
        ("s-edge/toolu_T", "toolu_S1", {"content": "FAIL", "isError": False}),
    ]


def test_a_claude_stream_line_is_keyed_by_its_session_id_even_beside_a_sessionId() -> None:
    """The stream's keys decide (``stream_session``), also on a line that carries a
    camel-case ``sessionId`` too: the adapter's loop reads common transcript lines
    itself, and a stream's line must never be taken for one (bench/mutants.py)."""
    line = {
        "type": "assistant",
        "session_id": "s-stream",
        "sessionId": "s-transcript",
        "parent_tool_use_id": "toolu_T",
        "message": {
            "id": "msg_1",
            "usage": {"output_tokens": 3},
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
        },
    }
    records = parse_bytes("claude-stream", json.dumps(line).encode() + b"\n")
    assert [(r.__class__.__name__, r.session) for r in records] == [
        ("Usage", "s-stream/toolu_T"),
        ("ToolCall", "s-stream/toolu_T"),
    ]


def test_snake_case_session_id_gives_the_session_under_format_claude_code() -> None:
    """Read as a transcript (``--format claude-code``), a stream's calls are no longer all
    in session ``default``: the snake-case ``session_id`` names it."""
    done = run_cli("filter", "--format", "claude-code", str(SAMPLES / "claude-stream.jsonl"))
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == 5
    assert {v["sessionId"] for v in verdicts} == {"c0ffee00-1111-4222-8333-444455556666"}


# ---------------------------------------------------------------- codex exec --json


@pytest.mark.parametrize(
    ("name", "thread", "tools"),
    [
        ("real--agentcmd-stream-output-2.jsonl", "019a2d7a-6455", ["command_execution"]),
        ("real--agentcmd-stream-output-3.jsonl", "019a2d7a-8e1c", ["file_change"]),
        ("real--agentcmd-stream-output-4.jsonl", "019a2d7b-231d", ["command_execution"]),
        ("real--agentcmd-stream-output-5.jsonl", "019a2d7b-7fb8", ["command_execution"]),
    ],
)
def test_real_codex_exec_streams(name: str, thread: str, tools: list[str]) -> None:
    fmt, records = read(FIXTURES / "codex-exec" / name)
    assert fmt == "codex-exec"
    assert bad(records) == []
    assert [c.tool for c in calls(records)] == tools
    assert all(c.session.startswith(thread) and c.call_id == "item_1" for c in calls(records))


@pytest.mark.parametrize(("path", "commands", "changes"), [(CODEX_RUN1, 6, 3), (CODEX_RUN2, 7, 0)])
def test_real_codex_exec_run_counts_each_call_once(path: Path, commands: int, changes: int) -> None:
    """Both ``item.started`` and ``item.completed`` of a command are in the stream: it is
    one call. Every call item of the stream is counted, in the thread's session."""
    fmt, records = read(path)
    assert fmt == "codex-exec"
    assert bad(records) == []
    found = calls(records)
    assert [c.tool for c in found].count("command_execution") == commands
    assert [c.tool for c in found].count("file_change") == changes
    kinds = ("command_execution", "file_change")
    assert {c.call_id for c in found} == distinct_ids(path, kinds)
    thread = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["thread_id"]
    assert {c.session for c in found} == {thread}
    done = run_cli("replay", "--json", str(path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["totals"]["formats"] == {"codex-exec": 1}
    assert document["totals"]["calls"] == commands + changes
    assert [s["session"] for s in document["sessions"]] == [thread]


def test_codex_exec_usage_is_the_turns() -> None:
    _, records = read(CODEX_RUN1)
    usage = [r for r in records if isinstance(r, Usage)]
    assert len(usage) == 1 and records.index(usage[0]) < records.index(calls(records)[0])
    turn = usage[0]
    fresh = 177136 - 163840
    assert (turn.input_tokens, turn.cache_read_tokens, turn.output_tokens) == (fresh, 163840, 2836)


def test_codex_exec_edge_cases() -> None:
    fmt, records = read(FIXTURES / "codex-exec" / "synthetic--edge-cases.jsonl")
    assert fmt == "codex-exec"
    assert [(c.tool, c.args, c.call_id, c.line) for c in calls(records)] == [
        ("mcp__github__search_issues", {"q": "loop"}, "item_0", 3),
        (
            "web_search",
            {"query": "codex exec json", "action": {"type": "search", "query": "codex exec json"}},
            "item_1",
            6,
        ),  # noqa: E501
        ("mcp__github__list_prs", {}, "item_2", 7),
        (
            "file_change",
            {"changes": [{"path": "/work/a.py", "kind": "update"}], "item": "item_3"},
            "item_3",
            8,
        ),  # noqa: E501
        (
            "file_change",
            {"changes": [{"path": "/work/a.py", "kind": "update"}], "item": "item_4"},
            "item_4",
            9,
        ),  # noqa: E501
        ("command_execution", {"command": "bash -lc 'make test'"}, "item_0#2", 17),  # resumed
    ]
    assert {c.session for c in calls(records)} == {"t-edge"}
    assert bad(records) == [
        (10, "command_execution without a string command"),
        (11, "command_execution item without a string id"),
        (12, "item.completed without an item object"),
        (20, "thread.started without a string thread_id"),
    ]
    results = {r.call_id: r.result for r in records if isinstance(r, ToolResult)}
    assert results["item_0#2"] == {"output": "FAIL\n", "exit_code": 1}
    assert results["item_3"] == {"status": "completed"}
    usage = [
        (u.input_tokens, u.cache_read_tokens, u.reasoning_tokens)
        for u in records
        if isinstance(u, Usage)
    ]  # noqa: E501
    assert usage == [(200, 800, 20), (10, 0, None), (2, 1, None)]


def test_two_file_changes_of_one_path_never_repeat() -> None:
    """A file change records paths, not the patch: the same path edited twice is not the
    same call (each keeps its item id in its arguments)."""
    _, records = read(FIXTURES / "codex-exec" / "synthetic--edge-cases.jsonl")
    changes = [c for c in calls(records) if c.tool == "file_change"]
    assert len(changes) == 2 and changes[0].args != changes[1].args


# ---------------------------------------------------------------- gemini stream-json


def test_gemini_stream_edge_cases_results_and_usage() -> None:
    fmt, records = read(FIXTURES / "gemini-stream" / "synthetic--edge-cases.jsonl")
    assert fmt == "gemini-stream"
    assert [(c.tool, c.args, c.session, c.call_id) for c in calls(records)] == [
        ("run_shell_command", {"command": "make test"}, "g-edge", "run_shell_command-1-a"),
        ("read_file", {"file_path": "a.py"}, "g-edge", "read_file-2-b"),  # a JSON string
    ]
    assert bad(records) == [
        (7, "tool_use without a string tool_name"),
        (8, "tool_use tool_id is not a string"),
        (9, "not valid JSON: expecting ',' delimiter at column 82"),
    ]
    result = next(r for r in records if isinstance(r, ToolResult))
    assert result.result == {
        "status": "error",
        "output": None,
        "error": {"type": "shell", "message": "exit 1"},
    }  # noqa: E501
    (usage,) = [r for r in records if isinstance(r, Usage)]
    assert records[0] is usage and usage.model == "gemini-test"
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (300, 900, 100)


# ---------------------------------------------------------------- opencode run --format json


def test_opencode_run_edge_cases_results_and_usage() -> None:
    fmt, records = read(FIXTURES / "opencode-run" / "synthetic--edge-cases.jsonl")
    assert fmt == "opencode-run"
    assert [(c.tool, c.args, c.session, c.call_id, c.line) for c in calls(records)] == [
        ("bash", {"command": "make"}, "ses_edge", "c1", 2),  # line 3 repeats its callID
        ("edit", {"filePath": "a.py"}, "ses_edge", "c2", 4),  # input as a JSON string
    ]
    assert bad(records) == [
        (5, "tool_use without a string part.tool"),
        (6, "tool_use part.callID is not a string"),
        (7, "sessionID is not a string"),
        (8, "tool_use without a part object"),
        (12, "not valid JSON: expecting ',' delimiter at column 79"),
    ]
    results = [(r.call_id, r.result) for r in records if isinstance(r, ToolResult)]
    assert results[0] == ("c1", {"status": "error", "output": None, "error": "exit 2"})
    step, other = [r for r in records if isinstance(r, Usage)]
    assert records[0] is step  # yielded at step_start, before the step's calls
    assert (step.input_tokens, step.output_tokens, step.reasoning_tokens) == (100, 5, 1)
    assert (step.cache_read_tokens, step.cache_write_tokens) == (50, 2)
    assert (other.session, other.input_tokens) == ("ses_other", 7)  # a finish without start


# ---------------------------------------------------------------- every stream format

STREAMS = ["claude-stream", "codex-exec", "gemini-stream", "opencode-run"]


@pytest.mark.parametrize("fmt", STREAMS)
def test_own_sample_is_a_loop_the_brake_stops(fmt: str) -> None:
    detected, records = read(SAMPLES / f"{fmt}.jsonl")
    assert detected == fmt and bad(records) == []
    assert longest_streak(records) == (4, 2)


def secret_stream(fmt: str) -> bytes:
    """Five identical calls whose arguments are the canary, and a broken line holding it."""
    lines: list[str] = []
    for n in range(5):
        if fmt == "claude-stream":
            block = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"k": CANARY}}
            lines.append(
                json.dumps(
                    {
                        "type": "assistant",
                        "message": {"id": f"m{n}", "content": [block]},
                        "parent_tool_use_id": None,
                        "session_id": "s",
                    }
                )
            )  # noqa: E501
        elif fmt == "codex-exec":
            item = {"id": f"item_{n}", "type": "command_execution", "command": f"echo {CANARY}"}
            lines.append(json.dumps({"type": "item.started", "item": item}))
            lines.append(
                json.dumps(
                    {
                        "type": "item.completed",
                        "item": dict(item, aggregated_output=CANARY, exit_code=0),
                    }
                )
            )  # noqa: E501
        elif fmt == "gemini-stream":
            gemini = {"tool_name": "run", "tool_id": f"r{n}", "parameters": {"k": CANARY}}
            lines.append(json.dumps({"type": "tool_use", "timestamp": "t", **gemini}))
        else:
            state = {"status": "completed", "input": {"k": CANARY}, "output": CANARY}
            part = {"type": "tool", "tool": "bash", "callID": f"c{n}", "state": state}
            lines.append(json.dumps({"type": "tool_use", "sessionID": "s", "part": part}))
    lines.append('{"type":"assistant","tool_use":"' + CANARY)
    return "".join(line + "\n" for line in lines).encode()


@pytest.mark.parametrize("fmt", STREAMS)
def test_canary_never_printed_by_filter_or_replay(fmt: str, tmp_path: Path) -> None:
    data = secret_stream(fmt)
    errors, stdout = check_errors_hide(fmt, data, CANARY)
    assert errors == 1 and b'"verdict":"deny"' in stdout
    path = tmp_path / "stream.jsonl"
    path.write_bytes(data)
    html = tmp_path / "report.html"
    for mode in ([], ["--json"], ["--verdicts"], ["--html", str(html)], ["--format", "events"]):
        done = run_cli("replay", *mode, str(path))
        assert done.returncode == 3, (mode, done.stderr)  # the broken line
        assert CANARY.encode() not in done.stdout + done.stderr, mode
    assert CANARY not in html.read_text(encoding="utf-8")
    done = run_cli("filter", "--summary", "--format", fmt, str(path))
    assert CANARY.encode() not in done.stdout + done.stderr


@pytest.mark.parametrize("fmt", STREAMS)
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300) | st.sampled_from([b"{}", b'{"type":"item.started"}']))
def test_never_raises(fmt: str, data: bytes) -> None:
    assert_never_raises(fmt, data)


# ---------------------------------------------------------------- live: verdict per call

PRODUCER = r"""
import json, sys
stream = open(sys.argv[1], "rb").read().splitlines(keepends=True)
seen = set()
for line in stream:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    ids = set(json.loads(sys.argv[2]).get(line.decode(), []))
    for call_id in sorted(ids - seen):  # this line holds a new call: wait for its verdict
        verdict = json.loads(sys.stdin.readline())
        assert verdict["callId"] == call_id, (verdict, call_id)
        sys.stderr.write(verdict["verdict"] + "\n")
        sys.stderr.flush()
    seen |= ids
"""


def new_call_ids(fmt: str, path: Path) -> dict[str, list[str]]:
    """For each line of ``path``, the ids of the calls the adapter reads from it."""
    _, records = read(path, fmt)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out: dict[str, list[str]] = {}
    for call in calls(records):
        out.setdefault(lines[call.line - 1], []).append(call.call_id)
    return out


@pytest.mark.parametrize("fmt", STREAMS)
def test_filter_prints_each_verdict_as_its_call_arrives(fmt: str) -> None:
    """The producer is the agent: it writes the next line only once filter has printed the
    verdict of the call it just wrote. A filter that held verdicts back (for the end of
    the input, or a full buffer) would leave both waiting: the run would time out."""
    path = SAMPLES / f"{fmt}.jsonl"
    to_filter_r, to_filter_w = os.pipe()
    to_producer_r, to_producer_w = os.pipe()
    brake = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "filter", "--format", fmt],
        stdin=to_filter_r,
        stdout=to_producer_w,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=ROOT,
    )
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, str(path), json.dumps(new_call_ids(fmt, path))],
        stdin=to_producer_r,
        stdout=to_filter_w,
        stderr=subprocess.PIPE,
    )
    for fd in (to_filter_r, to_filter_w, to_producer_r, to_producer_w):
        os.close(fd)
    try:
        _, said = producer.communicate(timeout=60)
        assert producer.returncode == 0, said
        assert said.decode().split() == ["pass"] * (len(calls(read(path)[1])) - 2) + ["deny"] * 2
        assert brake.wait(timeout=120) == 0
    finally:
        for proc in (producer, brake):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        brake.stderr.close()  # type: ignore[union-attr]
