"""Results and usage: what the adapters yield besides calls (issues 14 and 16).

Every adapter that can pairs each result with its call, and reports each model
turn's usage once, before the calls that turn produced. The expected totals are
counted here straight from the raw files (json over the lines, never the
adapter), and written out as numbers too, so a change in either shows.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from adapter_helpers import FIXTURES, read
from conftest import SHARED_SKIP, run_cli, shared_dir

from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage

SHARED = shared_dir() / "samples-real"
FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def totals(records: list) -> dict[str, Any]:
    """Turns and tokens by kind of the Usage records (None where no turn recorded a kind)."""
    usage = [r for r in records if isinstance(r, Usage)]
    out: dict[str, Any] = {"turns": len(usage)}
    for name in (*FIGURES, "reasoning_tokens"):
        values = [getattr(u, name) for u in usage if getattr(u, name) is not None]
        out[name] = sum(values) if values else None
    return out


def turn_of_each_call(records: list, key: Callable[[Usage], Any] = lambda u: u.turn) -> list:
    """(line, key of the turn) of each call: the session's latest Usage before it."""
    latest: dict[str, Any] = {}
    out = []
    for record in records:
        if isinstance(record, Usage):
            latest[record.session] = record
        elif isinstance(record, ToolCall):
            usage = latest.get(record.session)
            out.append((record.line, "none" if usage is None else key(usage)))
    return out


def raw_lines(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed JSON) of each line of a JSON-lines file, gzip or not."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [(n, json.loads(t)) for n, t in enumerate(data.decode().splitlines(), 1) if t.strip()]


def assert_results_pair(records: list) -> list[ToolResult]:
    """Each result names a call its session made before it; returns the results."""
    made: set[tuple[str, Any]] = set()
    results = []
    for record in records:
        if isinstance(record, ToolCall):
            made.add((record.session, record.call_id))
        elif isinstance(record, ToolResult):
            assert (record.session, record.call_id) in made, record
            results.append(record)
    return results


# --- Claude Code ------------------------------------------------------------------


def _claude_session(obj: dict) -> str:
    if obj.get("isSidechain"):
        return f"{obj['sessionId']}/{obj.get('agentId') or 'sidechain'}"
    return obj["sessionId"]


def claude_hand_count(path: Path) -> dict[str, Any]:
    """Per (session, message.id) the largest figure of its lines; a line without an id alone."""
    turns: dict[Any, dict[str, int]] = {}
    keys = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cache_read_tokens": "cache_read_input_tokens",
        "cache_write_tokens": "cache_creation_input_tokens",
    }
    for number, text in enumerate(path.read_text().splitlines(), 1):
        obj = json.loads(text)
        if obj.get("type") != "assistant" or "usage" not in obj["message"]:
            continue
        usage = obj["message"]["usage"]
        key = (_claude_session(obj), obj["message"].get("id") or number)
        seen = turns.setdefault(key, {})
        for mine, theirs in keys.items():
            if theirs in usage:
                seen[mine] = max(seen.get(mine, 0), usage[theirs])
    out: dict[str, Any] = {"turns": len(turns)}
    for mine in keys:
        values = [t[mine] for t in turns.values() if mine in t]
        out[mine] = sum(values) if values else None
    out["reasoning_tokens"] = None
    return out


def claude_results_by_hand(path: Path) -> list[tuple[int, str, Any]]:
    """(line, tool_use_id, content) of every tool_result block with a string id."""
    out = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        obj = json.loads(text)
        content = obj.get("message", {}).get("content") if obj.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                out.append((number, block["tool_use_id"], block.get("content")))
    return out


def claude_turn_of_call_lines(path: Path) -> list[tuple[int, str]]:
    """(line, message.id) of each new tool_use block: the turn that produced the call."""
    out, seen = [], set()
    for number, text in enumerate(path.read_text().splitlines(), 1):
        obj = json.loads(text)
        if obj.get("type") != "assistant" or not isinstance(obj["message"].get("content"), list):
            continue
        for block in obj["message"]["content"]:
            if block.get("type") == "tool_use" and block["id"] not in seen:
                seen.add(block["id"])
                out.append((number, obj["message"].get("id")))
    return out


CLAUDE = FIXTURES / "claude-code"
# file: turns, input, output, cache reads, cache writes (counted with jq, see claude_hand_count)
CLAUDE_USAGE = {
    "real--fasthooks-main-transcript.jsonl": (12, 132, 1480, 223265, 8467),
    "real--fasthooks-agent-sidechain.jsonl": (1, 728, 152, 0, 0),
    "real--codemie-4c2ddfdc.jsonl": (7, 33, 806, 214627, 37172),
    "real--codemie-incremental-subagents-turn-1.jsonl": (7, 82, 1244, 154285, 61416),
    "synthetic--results-usage.jsonl": (4, 23, 80, 2100, 100),
}


def _as_tuple(counted: dict[str, Any]) -> tuple:
    return (counted["turns"], *(counted[name] for name in FIGURES))


@pytest.mark.parametrize("name", sorted(CLAUDE_USAGE))
def test_claude_code_usage_equals_the_hand_count(name: str) -> None:
    _, records = read(CLAUDE / name, "claude-code")
    assert totals(records) == claude_hand_count(CLAUDE / name)
    assert _as_tuple(totals(records)) == CLAUDE_USAGE[name]


@pytest.mark.parametrize("name", sorted(CLAUDE_USAGE))
def test_claude_code_usage_comes_before_the_calls_of_its_turn(name: str) -> None:
    _, records = read(CLAUDE / name, "claude-code")
    assert turn_of_each_call(records) == claude_turn_of_call_lines(CLAUDE / name)


@pytest.mark.parametrize("name", sorted(CLAUDE_USAGE))
def test_claude_code_results_pair_with_their_calls(name: str) -> None:
    _, records = read(CLAUDE / name, "claude-code")
    results = assert_results_pair(records)
    got = [(r.line, r.call_id, r.result["content"]) for r in results]
    assert got == claude_results_by_hand(CLAUDE / name)
    assert all(r.digest is None and isinstance(r.result["isError"], bool) for r in results)


def test_claude_code_split_response_is_one_turn_with_its_final_output_count() -> None:
    _, records = read(CLAUDE / "synthetic--results-usage.jsonl", "claude-code")
    usage = [
        (u.line, u.session, u.turn, u.model, u.output_tokens)
        for u in records
        if isinstance(u, Usage)
    ]
    assert usage == [
        (2, "sess-R", "msg_1", "claude-sonnet-4-5", 40),  # line 4's count, reported at line 2
        (7, "sess-R", "msg_2", "claude-sonnet-4-5", 30),
        (10, "sess-R/ag1", "msg_s", "claude-sonnet-4-5", 9),
        (13, "sess-R", None, "claude-sonnet-4-5", 1),
    ]
    errors = [r for r in records if isinstance(r, ToolResult) and r.result["isError"]]
    assert [r.call_id for r in errors] == ["toolu_2"]
    assert not [r for r in records if isinstance(r, BadRecord)]


# --- Codex ------------------------------------------------------------------------


def _codex_events(path: Path) -> list[tuple[int, dict]]:
    """(line, info) of each token_count event that starts a new turn (its total changed)."""
    out, total = [], None
    for number, obj in raw_lines(path):
        payload = obj.get("payload") or {}
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict) and info.get("total_token_usage") != total:
            out.append((number, info))
            total = info.get("total_token_usage")
    return out


def codex_hand_count(path: Path) -> dict[str, Any]:
    """Per new event, last_token_usage (else the total's change); input without the cached part."""
    out: dict[str, Any] = dict.fromkeys(("turns", *FIGURES, "reasoning_tokens"), 0)
    out["cache_write_tokens"] = None
    before: dict = {}
    for _, info in _codex_events(path):
        total = info["total_token_usage"]
        last = info.get("last_token_usage") or {k: v - before.get(k, 0) for k, v in total.items()}
        before = total
        out["turns"] += 1
        out["input_tokens"] += last["input_tokens"] - last["cached_input_tokens"]
        out["cache_read_tokens"] += last["cached_input_tokens"]
        out["output_tokens"] += last["output_tokens"]
        out["reasoning_tokens"] += last["reasoning_output_tokens"]
    if not out["turns"]:
        return {"turns": 0, **dict.fromkeys((*FIGURES, "reasoning_tokens"))}
    return out


def codex_turn_of_call_lines(path: Path) -> list[tuple[int, Any]]:
    """(line, line of its turn's event) of each call: the first new event after the call,
    once the rollout has shown any token_count event ("none" before that)."""
    events = [n for n, _ in _codex_events(path)]
    armed_at = min(
        (n for n, o in raw_lines(path) if (o.get("payload") or {}).get("type") == "token_count"),
        default=None,
    )
    kinds = ("function_call", "custom_tool_call", "local_shell_call")
    out = []
    for number, obj in raw_lines(path):
        if obj.get("type") == "response_item" and obj["payload"].get("type") in kinds:
            if armed_at is None or number < armed_at:
                out.append((number, "none"))
            else:
                out.append((number, min(n for n in events if n > number)))
    return out


def codex_results_by_hand(path: Path) -> list[tuple[int, str, Any]]:
    kinds = ("function_call_output", "custom_tool_call_output")
    return [
        (n, o["payload"]["call_id"], o["payload"]["output"])
        for n, o in raw_lines(path)
        if o.get("type") == "response_item" and o["payload"].get("type") in kinds
    ]


CODEX = FIXTURES / "codex"
# file: turns, input (without cached), output, cache reads, cache writes, reasoning (jq)
CODEX_USAGE = {
    "real--codemie-rollout-019b7f94-shell.jsonl": (3, 7626, 300, 14848, None, 128),
    "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz": (
        28,
        17510,
        3209,
        3530240,
        None,
        551,
    ),
    "real--codemie-rollout-019e1695-EXCERPT-mcp-namespace.jsonl.gz": (
        0,
        None,
        None,
        None,
        None,
        None,
    ),
    "synthetic--results-usage.jsonl": (3, 400, 90, 2900, None, 25),
}


@pytest.mark.parametrize("name", sorted(CODEX_USAGE))
def test_codex_usage_equals_the_hand_count(name: str) -> None:
    _, records = read(CODEX / name, "codex")
    assert totals(records) == codex_hand_count(CODEX / name)
    assert (*_as_tuple(totals(records)), totals(records)["reasoning_tokens"]) == CODEX_USAGE[name]


@pytest.mark.parametrize("name", sorted(CODEX_USAGE))
def test_codex_usage_comes_before_the_calls_its_event_follows(name: str) -> None:
    _, records = read(CODEX / name, "codex")
    by_event = turn_of_each_call(records, lambda usage: usage.line)
    assert by_event == codex_turn_of_call_lines(CODEX / name)


@pytest.mark.parametrize("name", sorted(CODEX_USAGE))
def test_codex_results_pair_with_their_calls(name: str) -> None:
    _, records = read(CODEX / name, "codex")
    results = [r for r in records if isinstance(r, ToolResult)]
    assert [(r.line, r.call_id, r.result) for r in results] == codex_results_by_hand(CODEX / name)
    if "EXCERPT-write-stdin" in name:  # line 3 answers a call made before the excerpt
        results = results[1:]
        records = [r for r in records if r.line != 3]
    assert assert_results_pair(records) == results


# --- OpenHands and the chat-shaped usage it embeds ----------------------------------


def chat_figures(usage: dict) -> dict[str, Any]:
    """A Chat Completions / LiteLLM usage object by hand: prompt_tokens include the cache."""
    details = usage.get("prompt_tokens_details") or {}
    read_ = usage.get("cache_read_input_tokens", details.get("cached_tokens"))
    write = usage.get("cache_creation_input_tokens")
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    return {
        "input_tokens": usage["prompt_tokens"] - (read_ or 0) - (write or 0),
        "output_tokens": usage["completion_tokens"],
        "cache_read_tokens": read_,
        "cache_write_tokens": write,
        "reasoning_tokens": reasoning,
    }


def add_up(turns: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": len(turns)}
    for name in (*FIGURES, "reasoning_tokens"):
        values = [t[name] for t in turns if t.get(name) is not None]
        out[name] = sum(values) if values else None
    return out


def _documents(path: Path) -> list[Any]:
    text = path.read_text()
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def openhands_hand_count(path: Path) -> dict[str, Any]:
    """Per distinct model_response.id of the actions, its usage; a completion log: its response."""
    turns = []
    for value in _documents(path):
        if isinstance(value, dict) and "fncall_response" in value:
            turns.append(chat_figures(value["fncall_response"]["usage"]))
            continue
        events = value if isinstance(value, list) else value.get("history", [])
        seen = set()
        for event in [half for e in events for half in (e if isinstance(e, list) else [e])]:
            response = (event.get("tool_call_metadata") or {}).get("model_response") or {}
            if "action" in event and response.get("id") not in seen and "usage" in response:
                seen.add(response["id"])
                turns.append(chat_figures(response["usage"]))
    return add_up(turns)


OPENHANDS = FIXTURES / "openhands"
# file: turns, input, output, cache reads, cache writes (by hand: openhands_hand_count)
OPENHANDS_USAGE = {
    "OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl": (
        33,
        410169,
        5156,
        None,
        None,
    ),
    "OpenHands__tests-runtime-trajs__basic.json": (2, 10, 1312, 3482, 4640),
    "OpenHands__tests-runtime-trajs__wrong_initial_state.json": (4, 22, 358, 10879, 3927),
    "synthetic--results-usage.json": (2, 400, 70, 1500, 300),
    "synthetic--older-pairs.jsonl": (0, None, None, None, None),
}


@pytest.mark.parametrize("name", sorted(OPENHANDS_USAGE))
def test_openhands_usage_equals_the_hand_count(name: str) -> None:
    _, records = read(OPENHANDS / name, "openhands")
    assert totals(records) == openhands_hand_count(OPENHANDS / name)
    assert _as_tuple(totals(records)) == OPENHANDS_USAGE[name]


def test_openhands_turns_add_up_to_the_running_total() -> None:
    """The record's metrics.accumulated_token_usage is the sum of its responses' usage."""
    path = OPENHANDS / (
        "OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl"
    )
    total = json.loads(path.read_text())["metrics"]["accumulated_token_usage"]
    _, records = read(path, "openhands")
    assert (totals(records)["input_tokens"], totals(records)["output_tokens"]) == (
        total["prompt_tokens"],
        total["completion_tokens"],
    )


def openhands_by_hand(path: Path) -> tuple[list, list]:
    """(path, response id) of each metadata action; (path, tool_call_id) of each observation."""
    calls, results = [], []
    for value in _documents(path):
        events, prefix = (
            (value, "$") if isinstance(value, list) else (value["history"], "$.history")
        )
        for index, event in enumerate(events):
            metadata = event.get("tool_call_metadata")
            if not metadata:
                continue
            where = f"{prefix}[{index}]"
            if "action" in event:
                calls.append((where, metadata["model_response"]["id"]))
            else:
                results.append((where, metadata["tool_call_id"]))
    return calls, results


@pytest.mark.parametrize(
    "name",
    [
        "OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl",
        "OpenHands__tests-runtime-trajs__basic.json",
        "OpenHands__tests-runtime-trajs__wrong_initial_state.json",
        "synthetic--results-usage.json",
    ],
)
def test_openhands_results_pair_and_usage_precedes_its_calls(name: str) -> None:
    _, records = read(OPENHANDS / name, "openhands")
    calls, results = openhands_by_hand(OPENHANDS / name)
    got = [(r.path, r.call_id) for r in assert_results_pair(records)]
    assert got == results
    latest: dict[str, Any] = {}
    turns = []
    for record in records:
        if isinstance(record, Usage):
            latest[record.session] = record.turn
        elif isinstance(record, ToolCall):
            turns.append((record.path, latest.get(record.session)))
    assert turns == calls


@pytest.mark.parametrize(
    ("name", "paths"),
    [
        # [action, observation] pairs: the observation half of a call's pair
        ("synthetic--older-pairs.jsonl", 6),
        # flat actions without ids: an observation right after a call
        ("synthetic--resolver-output.jsonl", 7),
        # older serialized events: the observation whose cause is a call's id
        ("synthetic--older-event-stream.json", 3),
    ],
)
def test_openhands_older_observations_answer_the_latest_call(name: str, paths: int) -> None:
    _, records = read(OPENHANDS / name, "openhands")
    previous = None
    answered = 0
    for record in records:
        if isinstance(record, ToolResult):
            assert record.call_id is None and isinstance(previous, ToolCall)
            answered += 1
        previous = record
    assert answered == paths == len([r for r in records if isinstance(r, ToolCall)])


# --- SWE-agent ----------------------------------------------------------------------


def swe_agent_hand_count(path: Path) -> dict[str, Any]:
    """The run's model_stats as one turn, when it made API calls and counted tokens."""
    stats = json.loads(path.read_text())["info"]["model_stats"]
    if stats["api_calls"] == 0 or not (stats["tokens_sent"] or stats["tokens_received"]):
        return add_up([])
    figures = {"input_tokens": stats["tokens_sent"], "output_tokens": stats["tokens_received"]}
    return add_up([figures])


def swe_agent_results_by_hand(path: Path) -> list[tuple[str, Any, Any]]:
    """(path, call id, result) of each tool message; in a text-action run each observation."""
    run = json.loads(path.read_text())
    if any(m.get("tool_calls") and not m.get("is_demo") for m in run["history"]):
        return [
            (f"$.history[{i}]", m["tool_call_ids"][0], m["content"])
            for i, m in enumerate(run["history"])
            if m.get("role") == "tool"
        ]
    return [
        (f"$.trajectory[{i}].observation", None, step["observation"])
        for i, step in enumerate(run["trajectory"])
        if isinstance(step, dict) and isinstance(step.get("action"), str) and step["action"].strip()
    ]


SWE = FIXTURES / "swe-agent"
SWE_USAGE = {
    "SWE-agent__tests-test_data-trajectories-gpt4-swe-bench-dev-easy__pydicom__pydicom-1458.traj": (
        1,
        122612,
        1369,
        None,
        None,
    ),
    "SWE-agent__trajectories-demonstrations-ctf-crypto__eps.traj": (0, None, None, None, None),
    "SWE-agent__trajectories-demonstrations-replay-function_calling__marshmallow-code__"
    "marshmallow-1867.traj": (0, None, None, None, None),
    "synthetic--results-usage.traj": (1, 9100, 310, None, None),
}


@pytest.mark.parametrize("name", sorted(SWE_USAGE))
def test_swe_agent_usage_is_the_run_total_before_every_call(name: str) -> None:
    _, records = read(SWE / name, "swe-agent")
    assert totals(records) == swe_agent_hand_count(SWE / name)
    assert _as_tuple(totals(records)) == SWE_USAGE[name]
    if totals(records)["turns"]:
        assert isinstance(records[0], Usage)


@pytest.mark.parametrize("name", [*sorted(SWE_USAGE)[:3], "synthetic--text-actions.traj"])
def test_swe_agent_results_pair_with_their_calls(name: str) -> None:
    _, records = read(SWE / name, "swe-agent")
    results = [r for r in records if isinstance(r, ToolResult)]
    assert [(r.path, r.call_id, r.result) for r in results] == swe_agent_results_by_hand(SWE / name)
    for index, record in enumerate(records):
        if isinstance(record, ToolResult) and record.call_id is None:
            assert isinstance(records[index - 1], ToolCall)  # the step's own call
    assert_results_pair([r for r in records if not (isinstance(r, ToolResult) and not r.call_id)])


def test_swe_agent_final_step_is_answered_by_its_observation() -> None:
    _, records = read(SWE / "synthetic--results-usage.traj", "swe-agent")
    last_call, last_result = records[-2:]
    assert isinstance(last_call, ToolCall) and last_call.path == "$.trajectory[2]"
    assert isinstance(last_result, ToolResult) and last_result.call_id is None
    assert last_result.path == "$.trajectory[2].observation"


# --- OpenAI Chat Completions, OpenAI Responses, Anthropic Messages -------------------


def responses_figures(usage: dict) -> dict[str, Any]:
    """A Responses usage object by hand: input_tokens include the cached part."""
    cached = usage["input_tokens_details"]["cached_tokens"]
    return {
        "input_tokens": usage["input_tokens"] - cached,
        "output_tokens": usage["output_tokens"],
        "cache_read_tokens": cached,
        "reasoning_tokens": usage["output_tokens_details"]["reasoning_tokens"],
    }


def anthropic_figures(usage: dict) -> dict[str, Any]:
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cache_read_tokens": usage.get("cache_read_input_tokens"),
        "cache_write_tokens": usage.get("cache_creation_input_tokens"),
    }


def api_hand_count(fmt: str, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(totals, call id -> the id of the response that made it), from the raw lines."""
    turns: dict[str, dict] = {}
    made: dict[str, str] = {}
    for _, line in raw_lines(path):
        if fmt == "openai-chat" and "response" in line:
            response = line["response"]
            turns[response["id"]] = chat_figures(response["usage"])
            for call in response["choices"][0]["message"].get("tool_calls", []):
                made[call["id"]] = response["id"]
        elif fmt == "openai-responses":
            response = line.get("response", line)
            if response.get("object") == "response" and response.get("usage"):
                turns[response["id"]] = responses_figures(response["usage"])
                for item in response["output"]:
                    made[item.get("call_id", item["id"])] = response["id"]
        elif fmt == "anthropic" and line.get("type") == "message":
            turns[line["id"]] = anthropic_figures(line["usage"])
            for block in line["content"]:
                if block["type"] in ("tool_use", "mcp_tool_use"):
                    made[block["id"]] = line["id"]
    return add_up(list(turns.values())), made


def api_results_by_hand(fmt: str, path: Path) -> list[tuple[str, Any]]:
    """(call id, result) of each result, the first time its id appears in the file."""
    out: dict[str, Any] = {}
    for _, line in raw_lines(path):
        if fmt == "openai-chat":
            for message in line["messages"]:
                if message["role"] == "tool":
                    out.setdefault(message["tool_call_id"], message["content"])
        elif fmt == "openai-responses":
            items = line.get("input") or line.get("response", {}).get("output") or []
            for item in [*items, line.get("item") or {}]:
                if item.get("type") == "function_call_output":
                    out.setdefault(item["call_id"], item["output"])
                elif item.get("type") == "mcp_call":
                    out.setdefault(item["id"], {"output": item["output"], "error": item["error"]})
        else:
            messages = line.get("messages") or [line]
            for message in messages:
                for block in message["content"] if isinstance(message["content"], list) else []:
                    if block["type"].endswith("tool_result"):
                        result = {
                            "content": block["content"],
                            "isError": bool(block.get("is_error")),
                        }
                        out.setdefault(block["tool_use_id"], result)
    return list(out.items())


API = [
    ("openai-chat", (3, 512, 70, 128, None)),
    ("openai-responses", (2, 488, 90, 712, None)),
    ("anthropic", (2, 20, 100, 900, 1000)),
]


@pytest.mark.parametrize(("fmt", "expected"), API, ids=[f for f, _ in API])
def test_api_formats_usage_results_and_turns_by_hand(fmt: str, expected: tuple) -> None:
    path = FIXTURES / fmt / "synthetic--results-usage.jsonl"
    detected, records = read(path)
    assert detected == fmt
    counted, made = api_hand_count(fmt, path)
    assert totals(records) == counted
    assert _as_tuple(totals(records)) == expected
    got = [(r.call_id, r.result) for r in assert_results_pair(records)]
    assert sorted(got, key=str) == sorted(api_results_by_hand(fmt, path), key=str)
    turn_of = {line: turn for line, turn in turn_of_each_call(records)}
    calls = [r for r in records if isinstance(r, ToolCall)]
    assert {c.call_id: turn_of[c.line] for c in calls} == made


# --- Gemini CLI ---------------------------------------------------------------------


def gemini_hand_count(path: Path) -> dict[str, Any]:
    """Per gemini message id, its last record's tokens: input less cached plus tool, output
    plus thoughts; the four billed kinds add up to ``total``."""
    turns: dict[str, dict] = {}
    for value in _documents(path):
        for message in value.get("messages", [value]):
            if message.get("type") == "gemini" and "tokens" in message:
                t = message["tokens"]
                turns[message["id"]] = {
                    "input_tokens": t["input"] - t["cached"] + t["tool"],
                    "output_tokens": t["output"] + t["thoughts"],
                    "cache_read_tokens": t["cached"],
                    "reasoning_tokens": t["thoughts"],
                    "total": t["total"],
                }
    for turn in turns.values():
        billed = ("input_tokens", "output_tokens", "cache_read_tokens")
        assert sum(turn[k] for k in billed) == turn.pop("total")
    return add_up(list(turns.values()))


def gemini_results_by_hand(path: Path) -> list[tuple[str, Any]]:
    out: dict[str, Any] = {}
    for value in _documents(path):
        for message in value.get("messages", [value]):
            for call in message.get("toolCalls", []):
                if call.get("result") is not None:
                    responses = [part["functionResponse"]["response"] for part in call["result"]]
                    out.setdefault(call["id"], responses)
    return list(out.items())


GEMINI = FIXTURES / "gemini-cli"
GEMINI_USAGE = {
    "codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini__"
    "session-2025-12-01T21-45-5b959dae.json": (11, 45092, 4227, 56538, None),
    "codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini__"
    "session-2026-01-16T11-01-file-ops-37b7abef.json": (9, 25301, 4355, 62117, None),
    "synthetic--results-usage.jsonl": (2, 905, 90, 1300, None),
}


@pytest.mark.parametrize("name", sorted(GEMINI_USAGE))
def test_gemini_cli_usage_results_and_turns_by_hand(name: str) -> None:
    _, records = read(GEMINI / name, "gemini-cli")
    assert totals(records) == gemini_hand_count(GEMINI / name)
    assert _as_tuple(totals(records)) == GEMINI_USAGE[name]
    got = [(r.call_id, r.result) for r in assert_results_pair(records)]
    assert got == gemini_results_by_hand(GEMINI / name)
    made = {
        call["id"]: message["id"]
        for value in _documents(GEMINI / name)
        for message in value.get("messages", [value])
        for call in message.get("toolCalls", [])
    }
    assert {
        r.call_id: turn
        for r, (_, turn) in zip(
            [r for r in records if isinstance(r, ToolCall)], turn_of_each_call(records), strict=True
        )
    } == made


# --- OpenTelemetry ------------------------------------------------------------------


def otel_hand_count(path: Path) -> tuple[dict[str, Any], list]:
    """The chat spans' gen_ai.usage (input less cache reads and writes); the tool spans'
    (call id, result), in start order."""
    spans = json.loads(path.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.sort(key=lambda span: int(span["startTimeUnixNano"]))
    turns, results = [], []
    for span in spans:
        a = {x["key"]: next(iter(x["value"].values())) for x in span["attributes"]}
        number = {k: int(v) for k, v in a.items() if k.startswith("gen_ai.usage.")}
        if a["gen_ai.operation.name"] == "chat":
            read_ = number.get("gen_ai.usage.cache_read.input_tokens")
            write = number.get("gen_ai.usage.cache_creation.input_tokens")
            turns.append(
                {
                    "input_tokens": number["gen_ai.usage.input_tokens"]
                    - (read_ or 0)
                    - (write or 0),
                    "output_tokens": number["gen_ai.usage.output_tokens"],
                    "cache_read_tokens": read_,
                    "cache_write_tokens": write,
                    "reasoning_tokens": number.get("gen_ai.usage.reasoning.output_tokens"),
                }
            )
        elif a["gen_ai.operation.name"] == "execute_tool":
            results.append((a["gen_ai.tool.call.id"], a["gen_ai.tool.call.result"]))
    return add_up(turns), results


def test_otel_usage_results_and_turns_by_hand() -> None:
    path = FIXTURES / "otel" / "synthetic--results-usage.json"
    _, records = read(path, "otel")
    counted, results = otel_hand_count(path)
    assert totals(records) == counted
    assert (*_as_tuple(totals(records)), totals(records)["reasoning_tokens"]) == (
        2,
        500,
        65,
        1600,
        200,
        10,
    )
    assert [(r.call_id, r.result) for r in assert_results_pair(records)] == results
    calls = [r for r in records if isinstance(r, ToolCall)]
    turns = [turn for _, turn in turn_of_each_call(records)]
    assert dict(zip([c.call_id for c in calls], turns, strict=True)) == {
        "call_1": "chatcmpl-1",
        "call_2": "chatcmpl-1",
        "call_3": "chatcmpl-2",
    }


# --- VCR cassettes -------------------------------------------------------------------


def _stream_events(text: str) -> list[dict]:
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
    ]


def _gemini_figures(meta: dict) -> dict[str, Any]:
    cached, thoughts = meta.get("cachedContentTokenCount"), meta.get("thoughtsTokenCount")
    return {
        "input_tokens": meta["promptTokenCount"] - (cached or 0),
        "output_tokens": meta["candidatesTokenCount"] + (thoughts or 0),
        "cache_read_tokens": cached,
        "reasoning_tokens": thoughts,
    }


def _body_figures(body: dict) -> dict[str, Any] | None:
    if "usageMetadata" in body:
        return _gemini_figures(body["usageMetadata"])
    usage = body.get("usage")
    if not usage:
        return None
    if "prompt_tokens" in usage:
        return chat_figures(usage)
    if "input_tokens_details" in usage:
        return responses_figures(usage)
    return anthropic_figures(usage)


def _stream_figures(events: list[dict]) -> dict[str, Any] | None:
    """The last figures a stream sends (Anthropic: message_start's, message_delta's over them)."""
    found = None
    start: dict = {}
    for event in events:
        if event.get("type") == "message_start":
            start = event["message"]["usage"]
            found = anthropic_figures(start)
        elif event.get("type") == "message_delta":
            found = anthropic_figures({**start, **event["usage"]})
        elif event.get("type") == "response.completed":
            found = responses_figures(event["response"]["usage"])
        elif event.get("usage") and "choices" in event:
            found = chat_figures(event["usage"])
        elif "usageMetadata" in event:
            found = _gemini_figures(event["usageMetadata"])
    return found


def cassette_hand_count(path: Path) -> dict[str, Any]:
    """One turn per recorded response that states its usage."""
    turns = []
    for interaction in yaml.safe_load(path.read_text())["interactions"]:
        response = interaction["response"]
        body = response.get("parsed_body")
        if body is None:
            text = response["body"]["string"] if isinstance(response["body"], dict) else ""
            body = json.loads(text) if text.lstrip().startswith("{") else text
        figures = (
            _body_figures(body) if isinstance(body, dict) else _stream_figures(_stream_events(body))
        )
        if figures is not None:
            turns.append(figures)
    return add_up(turns)


CASSETTE = FIXTURES / "cassette"
CASSETTE_USAGE = {
    "pydantic-ai__cassettes-test_anthropic__test_anthropic_mcp_servers_stream.yaml": (
        1,
        3042,
        354,
        0,
        0,
    ),
    "pydantic-ai__cassettes-test_anthropic__test_anthropic_tool_with_thinking.yaml": (
        2,
        964,
        281,
        0,
        0,
    ),
    "pydantic-ai__cassettes-test_anthropic__test_multiple_parallel_tool_calls.yaml": (
        2,
        1194,
        279,
        0,
        0,
    ),
    "pydantic-ai__cassettes-test_openai__test_compatible_api_with_tool_calls_without_id.yaml": (
        2,
        101,
        18,
        None,
        None,
    ),
    "pydantic-ai__cassettes-test_openai__test_multiple_agent_tool_calls.yaml": (
        4,
        291,
        38,
        0,
        None,
    ),
    "pydantic-ai__cassettes-test_openai__test_run_stream_sync_streams_real_model.yaml": (
        2,
        131,
        24,
        0,
        None,
    ),
    "pydantic-ai__cassettes-test_openai_responses__test_openai_responses_model_simple_"
    "response_with_tool_call.yaml": (2, 107, 29, 0, None),
    "pydantic-ai__cassettes-test_openai_responses__test_openai_responses_stream.yaml": (
        2,
        533,
        25,
        0,
        None,
    ),
    "pydantic-ai__cassettes-test_tool_search__test_anthropic_native_tool_search_streaming.yaml": (
        2,
        2598,
        234,
        0,
        0,
    ),
    "synthetic--results-usage.yaml": (3, 176, 25, 64, None),
}


@pytest.mark.parametrize("name", sorted(CASSETTE_USAGE))
def test_cassette_usage_equals_the_hand_count(name: str) -> None:
    _, records = read(CASSETTE / name, "cassette")
    assert totals(records) == cassette_hand_count(CASSETTE / name)
    assert _as_tuple(totals(records)) == CASSETTE_USAGE[name]


def test_cassette_results_come_from_the_next_request() -> None:
    _, records = read(CASSETTE / "synthetic--results-usage.yaml", "cassette")
    assert [type(r).__name__ for r in records] == [
        "Usage", "ToolCall", "ToolResult", "Usage", "ToolCall", "ToolResult", "Usage"
    ]  # fmt: skip
    results = assert_results_pair(records)
    assert [r.path for r in results] == [
        "$.interactions[1].request.parsed_body.messages[2]",  # not again in request 2
        "$.interactions[2].request.parsed_body.messages[4]",
    ]


# --- every format --------------------------------------------------------------------

CANARY = "CANARY-results-7d41-never-print"
# a fixture per format whose results hold CANARY
CANARY_FILES = [
    ("claude-code", CLAUDE / "synthetic--results-usage.jsonl"),
    ("codex", CODEX / "synthetic--results-usage.jsonl"),
    ("openhands", OPENHANDS / "synthetic--results-usage.json"),
    ("swe-agent", SWE / "synthetic--results-usage.traj"),
    ("mini-swe-agent", FIXTURES / "mini-swe-agent" / "synthetic--results-usage.traj.json"),
    ("cline", FIXTURES / "cline" / "synthetic--1765000000000" / "api_conversation_history.json"),
    (
        "roo-code",
        FIXTURES
        / "roo-code"
        / "synthetic--019cadc0-7c00-7000-8000-000000000001"
        / "api_conversation_history.json",
    ),
    *((fmt, FIXTURES / fmt / "synthetic--results-usage.jsonl") for fmt, _ in API),
    ("gemini-cli", GEMINI / "synthetic--results-usage.jsonl"),
    ("otel", FIXTURES / "otel" / "synthetic--results-usage.json"),
    ("cassette", FIXTURES / "cassette" / "synthetic--results-usage.yaml"),
]


@pytest.mark.parametrize(("fmt", "path"), CANARY_FILES, ids=[f for f, _ in CANARY_FILES])
def test_results_hold_the_canary_and_no_output_does(fmt: str, path: Path, tmp_path: Path) -> None:
    _, records = read(path, fmt)
    held = [r for r in records if isinstance(r, ToolResult) and CANARY in json.dumps(r.result)]
    assert held, "the fixture's results must hold the canary"
    written = tmp_path / "report.html"
    policy = tmp_path / "progress.toml"  # where results are read: the progress mode
    policy.write_text("progress = true\n")
    runs = [
        run_cli("filter", "--format", fmt, "--policy", str(policy), "--summary", str(path)),
        run_cli("replay", "--format", fmt, "--policy", str(policy), "--verdicts", str(path)),
        run_cli("replay", "--format", fmt, "--compare-policy", str(policy), str(path)),
        run_cli("filter", "--format", fmt, str(path)),
        run_cli("filter", "--format", fmt, "--summary", str(path)),
        run_cli("replay", "--format", fmt, str(path)),
        run_cli("replay", "--format", fmt, "--json", str(path)),
        run_cli("replay", "--format", fmt, "--verdicts", str(path)),
        run_cli("replay", "--format", fmt, "--html", str(written), str(path)),
    ]
    assert b"results: " in runs[0].stderr  # the progress mode read the results
    for result in runs:
        assert result.returncode in (0, 1), result.stderr
        assert CANARY.encode() not in result.stdout + result.stderr
    assert CANARY not in written.read_text()


# --- the real samples in ../shared (read there, never copied) ------------------------

SharedCase = tuple[str, str, Callable[[Path], dict[str, Any]], tuple]
SHARED_USAGE: list[SharedCase] = [
    (
        "claude-code",
        "claude-code/oneryalcin-fasthooks__specs-data__sample_main_transcript.jsonl",
        claude_hand_count,
        (12, 132, 1480, 223265, 8467),
    ),
    (
        "claude-code",
        "claude-code/oneryalcin-fasthooks__specs-data__sample_agent_sidechain.jsonl",
        claude_hand_count,
        (1, 728, 152, 0, 0),
    ),
    (
        "claude-code",
        "claude-code/codemie-ai-codemie-code__tests-integration-metrics-fixtures-claude__"
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        claude_hand_count,
        (7, 33, 806, 214627, 37172),
    ),
    (
        "claude-code",
        "claude-code/codemie-ai-codemie-code__tests-integration-session-fixtures-claude-"
        "incremental-subagents__turn-1.jsonl",
        claude_hand_count,
        (7, 82, 1244, 154285, 61416),
    ),
    (
        "codex",
        "codex-cli/codemie-ai-codemie-code__tests-integration-metrics-fixtures-codex__"
        "rollout-2026-01-02T18-39-45-019b7f94.jsonl",
        codex_hand_count,
        (3, 7626, 300, 14848, None),
    ),
    (
        "codex",
        "codex-cli/codemie-ai-codemie-code__rollout-2026-05-11T11-26-55-019e1625__"
        "EXCERPT-lines1+250-386.jsonl",
        codex_hand_count,
        (28, 17510, 3209, 3530240, None),
    ),
    (
        "openhands",
        "trajectories/openhands/gsmoon97-swe-agent-eval__MopenHands-Claude-3.5-Sonnet__"
        "django__django-16667__STUCK-LOOP.json",
        openhands_hand_count,
        (1, 41695, 4096, None, None),
    ),
    (
        "openhands",
        "trajectories/openhands/gsmoon97-swe-agent-eval__MopenHands-Claude-3.5-Sonnet__"
        "django__django-12713__STUCK-LOOP.json",
        openhands_hand_count,
        (1, 40593, 331, None, None),
    ),
    (
        "openhands",
        "trajectories/openhands/OpenHands__evaluation-benchmarks-multi_swe_bench-examples-"
        "output__LINE2-ponyc-4593.jsonl",
        openhands_hand_count,
        (33, 410169, 5156, None, None),
    ),
    (
        "openhands",
        "trajectories/openhands/OpenHands__tests-runtime-trajs__wrong_initial_state.json",
        openhands_hand_count,
        (4, 22, 358, 10879, 3927),
    ),
    (
        "swe-agent",
        "trajectories/swe-agent/SWE-agent__tests-test_data-trajectories-gpt4-swe-bench-dev-easy__"
        "pydicom__pydicom-1458.traj",
        swe_agent_hand_count,
        (1, 122612, 1369, None, None),
    ),
    *(
        ("gemini-cli", f"trajectories/gemini-cli/{name}", gemini_hand_count, expected)
        for name, expected in GEMINI_USAGE.items()
        if name.startswith("codemie")
    ),
    *(
        ("cassette", f"{folder}/{name}", cassette_hand_count, expected)
        for name, expected in CASSETTE_USAGE.items()
        for folder in ("anthropic-messages", "openai-chat")
        if ("anthropic" in name) == (folder == "anthropic-messages") and name.startswith("pyd")
    ),
]


@pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_SKIP)
@pytest.mark.parametrize(
    ("fmt", "name", "hand_count", "expected"), SHARED_USAGE, ids=[c[1] for c in SHARED_USAGE]
)
def test_shared_samples_usage_equals_the_hand_count(
    fmt: str, name: str, hand_count: Callable[[Path], dict[str, Any]], expected: tuple
) -> None:
    _, records = read(SHARED / name, fmt)
    assert totals(records) == hand_count(SHARED / name)
    assert _as_tuple(totals(records)) == expected
