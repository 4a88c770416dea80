"""Adapter edges written out from each format's documented reading (the module
docstrings, docs/formats.md): token counts of 0, content null beside usage, a custom
tool call without input, cached tokens equal to the input, an empty call id, the
log wrappings of MCP traffic, and the replay count of unparsed arguments."""

from __future__ import annotations

import json

from adapter_helpers import calls, parse_bytes

from loop_brake_cli.analysis import Analyzer
from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import BadRecord, ToolCall, Usage
from loop_brake_cli.readers.pipeline import judge


def _lines(*objects: dict) -> bytes:
    return b"".join(json.dumps(obj).encode() + b"\n" for obj in objects)


def _usage(records: list) -> list[Usage]:
    return [r for r in records if isinstance(r, Usage)]


def _assistant(message_id: str, usage: dict, content: object = None) -> dict:
    message = {"id": message_id, "model": "claude-x", "content": content, "usage": usage}
    return {"type": "assistant", "sessionId": "s", "message": message}


def test_claude_code_zero_tokens_and_content_null_beside_usage() -> None:
    records = parse_bytes("claude-code", _lines(_assistant("m1", {"input_tokens": 0})))
    assert not [r for r in records if isinstance(r, BadRecord)]  # content null: no error
    (usage,) = _usage(records)
    assert usage.input_tokens == 0 and usage.output_tokens is None


def test_claude_code_split_message_keeps_the_larger_figures() -> None:
    data = _lines(
        _assistant("m2", {"input_tokens": 3, "output_tokens": 5}, []),
        _assistant("m2", {"input_tokens": 3, "output_tokens": 9}, []),
        _assistant("m2", {"input_tokens": 1, "output_tokens": 2}, []),
    )
    (usage,) = _usage(parse_bytes("claude-code", data))
    assert (usage.input_tokens, usage.output_tokens) == (3, 9)


def _codex(payload: dict, kind: str = "response_item") -> dict:
    return {"timestamp": "2026-05-11T08:27:00.000Z", "type": kind, "payload": payload}


def _token_count(info: dict) -> dict:
    return _codex({"type": "token_count", "info": info}, "event_msg")


def test_codex_custom_tool_call_without_input_hashes_as_the_empty_string() -> None:
    call = {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1"}
    (record,) = calls(parse_bytes("codex", _lines(_codex(call))))
    assert record.tool == "apply_patch" and record.args == "" and not record.args_unparsed


def test_codex_cached_input_equal_to_the_input_is_no_fresh_input() -> None:
    figures = {"input_tokens": 10, "cached_input_tokens": 10, "output_tokens": 1}
    (usage,) = _usage(parse_bytes("codex", _lines(_token_count({"last_token_usage": figures}))))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (0, 10, 1)


def test_codex_a_figure_that_did_not_change_is_a_difference_of_zero() -> None:
    first = {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 1}
    second = {"input_tokens": 25, "cached_input_tokens": 4, "output_tokens": 3}
    data = _lines(
        _token_count({"total_token_usage": first}), _token_count({"total_token_usage": second})
    )
    usage = _usage(parse_bytes("codex", data))
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in usage] == [
        (6, 4, 1),
        (15, 0, 2),
    ]


def test_gemini_an_empty_call_id_is_no_id() -> None:
    call = {"id": "", "name": "read_file", "args": {"p": 1}}
    document = {
        "sessionId": "g",
        "messages": [
            {"id": "m1", "type": "gemini", "content": "", "toolCalls": [call]},
            {"id": "m2", "type": "gemini", "content": "", "toolCalls": [call]},
        ],
    }
    records = calls(parse_bytes("gemini-cli", json.dumps(document).encode()))
    assert [(r.tool, r.call_id) for r in records] == [("read_file", None)] * 2


CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch"}}'


def test_mcp_goose_stderr_is_not_traffic_and_desktop_names_the_server() -> None:
    goose = parse_bytes("mcp", b"STDERR: " + CALL + b"\nSTDIN: " + CALL + b"\n")
    assert [(r.tool, r.session, r.line) for r in calls(goose)] == [("fetch", "mcp#1", 2)]
    desktop = (
        b"2026-01-01T00:00:01.000Z [info] [beta] Message from client: " + CALL + b"\n"
        b"2026-01-01T00:00:02.000Z [alpha] [info] Message from client: " + CALL + b"\n"
    )
    assert [r.session for r in calls(parse_bytes("mcp", desktop))] == ["beta#1", "alpha#1"]


def test_replay_counts_calls_with_unparsed_arguments() -> None:
    records = [
        ToolCall("a", "not json", "s", None, 1, None, True),
        ToolCall("a", {}, "s", None, 2, None, False),
    ]
    analyzer = Analyzer(3, "test", 10)
    analyzer.start_file("f.jsonl")
    for record, verdict in judge(records, LoopBrake(3, policy=None)):
        analyzer.add(record, verdict)
    report = analyzer.finish()
    assert report.unparsed_args == 1
    assert [s.unparsed_args for s in report.sessions] == [1]
