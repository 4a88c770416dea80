"""``reset_on_user_turn`` in replay (issue 29): the transcript formats' user messages are
``UserTurn`` records, on the real samples (tests/fixtures/*/real--*, DERIVED__*, copied
from shared/samples-real), where tool results written as user messages (Claude Code,
Anthropic) never are; without the key no adapter yields one, so every default output
stays what it was; and a replay ends a streak at the user's turn, saying nothing of
what the user said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES
from conftest import run_cli

from loop_brake_cli.core.records import ToolResult, UserTurn
from loop_brake_cli.formats import ADAPTERS, get, parse_records
from loop_brake_cli.readers.reader import open_source

CANARY = "canary-41d7-user-said-secret"


def records(fmt: str, path: Path, user_turns: bool = True, results: bool = True) -> list:
    source = open_source(str(path))
    try:
        return list(parse_records(get(fmt), source, results, user_turns))
    finally:
        source.close()


def turns(fmt: str, path: Path) -> list:
    return [(r.line, r.path, r.session) for r in records(fmt, path) if r.__class__ is UserTurn]


# where the users of the real samples spoke: (line, JSON path) of each prompt
REAL = [
    (
        "claude-code",
        "claude-code/real--fasthooks-main-transcript.jsonl",
        # 60 is the compaction summary (isCompactSummary), 61 a caveat (isMeta): not the user
        [(2, None), (10, None), (19, None), (27, None), (35, None), (62, None), (63, None)],
    ),
    (
        "claude-code",
        "claude-code/real--codemie-4c2ddfdc.jsonl",
        [(2, None), (15, None), (22, None)],
    ),
    ("claude-code", "claude-code/real--fasthooks-agent-sidechain.jsonl", []),  # the parent spoke
    ("codex", "codex/real--codemie-rollout-019b7f94-shell.jsonl", [(5, None)]),  # not 2-4
    (
        "gemini-cli",
        "gemini-cli/codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini__"
        "session-2026-01-16T11-01-file-ops-37b7abef.json",
        None,  # every message of type user, checked below
    ),
    (
        "anthropic",
        "anthropic/DERIVED__pydantic-ai__test_multiple_parallel_tool_calls__messages.json",
        [(None, "$.messages[0]")],  # the user messages after it carry only tool_result blocks
    ),
    (
        "openai-chat",
        "openai-chat/DERIVED__pydantic-ai__test_multiple_agent_tool_calls__chat_messages.json",
        None,
    ),
    # the task (history[1]); history[2] is the recall it triggered, OpenHands' own
    (
        "openhands",
        "openhands/OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl",
        [(None, "$.history[1]")],
    ),
    ("openhands", "openhands/OpenHands__tests-runtime-trajs__basic.json", [(None, "$[0]")]),
]


@pytest.mark.parametrize(("fmt", "name", "expected"), REAL)
def test_the_real_samples_user_turns(fmt: str, name: str, expected: list | None) -> None:
    path = FIXTURES / name
    found = turns(fmt, path)
    if expected is None:  # a JSON document: one per message whose role/type is user
        document = json.loads(path.read_bytes())
        messages = document["messages"] if isinstance(document, dict) else document
        kind = "type" if fmt == "gemini-cli" else "role"
        prefix = "$.messages" if isinstance(document, dict) else "$"
        expected = [
            (None, f"{prefix}[{index}]")
            for index, message in enumerate(messages)
            if message.get(kind) == "user"
        ]
        assert expected
    assert [(line, path) for line, path, _ in found] == expected
    calls = [r for r in records(fmt, path) if r.__class__.__name__ == "ToolCall"]
    if calls and found:  # a user turn is keyed as the calls of its session are
        assert {session for *_, session in found} <= {call.session for call in calls}


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("claude-code", "claude-code/real--fasthooks-main-transcript.jsonl"),
        ("claude-code", "claude-code/real--codemie-incremental-subagents-turn-1.jsonl"),
        (
            "anthropic",
            "anthropic/DERIVED__pydantic-ai__test_multiple_parallel_tool_calls__messages.json",
        ),
    ],
)
def test_tool_results_in_user_messages_are_never_user_turns(fmt: str, name: str) -> None:
    read = records(fmt, FIXTURES / name)
    results = {
        (r.line, (r.path or "").rsplit(".content", 1)[0]) for r in read if r.__class__ is ToolResult
    }
    spoken = {(r.line, r.path) for r in read if r.__class__ is UserTurn}
    assert results and spoken and not results & spoken


def test_a_user_message_with_results_and_text_is_no_user_turn(tmp_path: Path) -> None:
    """A tool_result block beside a text block (an interruption note): still results."""
    mixed = [{"type": "tool_result", "tool_use_id": "t1", "content": "x"},
             {"type": "text", "text": "[Request interrupted by user for tool use]"}]  # fmt: skip
    path = tmp_path / "mixed.jsonl"
    line = {"type": "user", "sessionId": "s", "message": {"role": "user", "content": mixed}}
    path.write_text(json.dumps(line) + "\n")
    assert turns("claude-code", path) == []
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": mixed}]))
    assert turns("anthropic", messages) == []
    spoken = [{"role": "user", "content": [{"type": "text", "text": "go on"}]}]
    messages.write_text(json.dumps(spoken))
    assert [(line, where) for line, where, _ in turns("anthropic", messages)] == [(None, "$[0]")]


def test_without_the_key_no_adapter_yields_a_user_turn() -> None:
    """Every fixture of every format, results on and off: no UserTurn unless asked."""
    read = 0
    for module in ADAPTERS:
        folder = FIXTURES / module.INFO.name
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in (".md", ".out") or path.name.endswith(".verdicts.jsonl"):
                continue
            for results in (False, True):
                try:
                    got = records(module.INFO.name, path, user_turns=False, results=results)
                except Exception:  # an adapter's refusal of a fixture made for another test
                    continue
                assert not any(r.__class__ is UserTurn for r in got), path
                read += 1
    assert read > 40


def _transcript(tmp_path: Path) -> Path:
    """A Claude Code session: the same Bash call twice, the user speaks (the canary),
    the call twice more; the result lines are user lines too."""
    lines = []

    def user(content: object) -> dict:
        return {"type": "user", "sessionId": "s", "message": {"role": "user", "content": content}}

    def call(number: int) -> None:
        lines.append({"type": "assistant", "sessionId": "s", "message": {"id": f"m{number}",
                      "content": [{"type": "tool_use", "id": f"t{number}", "name": "Bash",
                                   "input": {"command": "make test"}}]}})  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"t{number}", "content": "1 failed"}
        lines.append(user([result]))

    lines.append(user("go"))
    call(1)
    call(2)
    lines.append(user([{"type": "text", "text": CANARY}]))
    call(3)
    call(4)
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_replay_ends_the_streak_at_the_users_turn(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text("reset_on_user_turn = true\n")
    args = ("replay", "--verdicts", "-m", "3", "--format", "claude-code", str(transcript))
    plain = [json.loads(line) for line in run_cli(*args).stdout.splitlines()]
    assert [(v["count"], v["verdict"]) for v in plain] == [
        (1, "pass"), (2, "pass"), (3, "deny"), (4, "deny"),
    ]  # fmt: skip
    done = run_cli(*args, "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    reset = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(v["line"], v["count"], v["verdict"]) for v in reset] == [
        (2, 1, "pass"), (4, 2, "pass"), (7, 1, "pass"), (9, 2, "pass"),
    ]  # fmt: skip
    report = run_cli(*args[:1], *args[2:], "--json", "--policy", str(policy))
    assert report.returncode == 0 and json.loads(report.stdout)["totals"]["denied"] == 0
    compared = run_cli(*args[:1], *args[2:], "--compare-policy", str(policy))
    assert compared.returncode == 0, compared.stderr
    assert b'tool "Bash": seed denies 2, policy denies 0' in compared.stdout
    for output in (done, report, compared):
        assert CANARY.encode() not in output.stdout + output.stderr
