"""Holes in the adapters' tests that an outside audit found (issue 42), and their
neighbours: each test fails on the break ``bench/mutants.py`` names beside it.

* a result whose ``content`` is not a list is no MCP result: its ``_meta`` is hashed;
* a request log that resends the last user message is one user turn, not two
  (openai-chat, anthropic by position; gemini-cli by message id);
* an empty session id (Gemini's ``sessionId: ""``) is no session id: the file is;
* a call id ``true`` is no call id, never the id ``1`` (events, chat ``tool_calls``,
  a cassette stream's ``index``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import run_cli

from loop_brake_cli.core.progress import normalise, result_digest
from loop_brake_cli.core.records import BadRecord, ToolCall, UserTurn
from loop_brake_cli.formats import get, parse_records
from loop_brake_cli.readers.reader import Source


def records(fmt: str, data: bytes, name: str = "log.jsonl", user_turns: bool = False) -> list:
    source = Source(io.BytesIO(data), name)
    return list(parse_records(get(fmt), source, results=True, user_turns=user_turns))


def jsonl(*values: object) -> bytes:
    return b"".join(json.dumps(value).encode() + b"\n" for value in values)


# --- _meta on a result whose content is not a list --------------------------------


def test_meta_counts_where_content_is_not_a_list() -> None:
    """Only an MCP result (``content`` an array) drops ``_meta`` and ``structuredContent``:
    another object with those keys is hashed whole, so a timing in it changes the digest."""
    for content in ("text", {"text": "t"}, None, 3):
        one = {"content": content, "_meta": {"took": 1}}
        two = {"content": content, "_meta": {"took": 2}}
        assert result_digest(one) != result_digest(two), content
        assert normalise(one) == one
    listed = {"content": [{"type": "text", "text": "t"}], "_meta": {"took": 1}}
    assert result_digest(listed) == result_digest({**listed, "_meta": {"took": 2}})
    extra = {**listed, "note": "kept"}  # a key MCP does not have: not an MCP result
    assert normalise(extra) == extra


# --- a resent user message is one user turn ---------------------------------------


def test_a_request_log_resending_the_last_user_message_is_one_turn() -> None:
    system = {"role": "system", "content": "s"}
    ask = {"role": "user", "content": "hi"}
    log = jsonl({"messages": [system, ask]}, {"messages": [system, ask]})
    turns = [
        r.path for r in records("openai-chat", log, user_turns=True) if r.__class__ is UserTurn
    ]
    assert turns == ["$.messages[1]"]
    answer = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    again = {"role": "user", "content": [{"type": "text", "text": "and?"}]}
    log = jsonl({"messages": [ask]}, {"messages": [ask]}, {"messages": [ask, answer, again]})
    turns = [r.path for r in records("anthropic", log, user_turns=True) if r.__class__ is UserTurn]
    assert turns == ["$.messages[0]", "$.messages[2]"]


def test_gemini_a_user_message_rewritten_is_one_turn() -> None:
    said = {"id": "u1", "type": "user", "content": "hi"}
    log = jsonl(
        {"sessionId": "s1", "projectHash": "h"},
        said,
        {"$set": {"messages": [said]}},  # the history rewritten: the same message again
        {"id": "u2", "type": "user", "content": "more"},
    )
    turns = [r for r in records("gemini-cli", log, user_turns=True) if r.__class__ is UserTurn]
    assert [(t.session, t.line) for t in turns] == [("s1", 2), ("s1", 4)]


# --- an empty session id is no session id ------------------------------------------


def test_gemini_an_empty_session_id_is_the_file() -> None:
    call = {"id": "c1", "name": "ls", "args": {}}
    message = {"id": "m1", "type": "gemini", "toolCalls": [call]}
    recording = {"sessionId": "", "projectHash": "h", "messages": [message]}
    (found,) = [
        r
        for r in records("gemini-cli", json.dumps(recording).encode(), "chat.json")
        if r.__class__ is ToolCall
    ]
    assert found.session == "chat.json"
    later = jsonl({"sessionId": "s1", "projectHash": "h"}, {"$set": {"sessionId": ""}}, message)
    (found,) = [r for r in records("gemini-cli", later) if r.__class__ is ToolCall]
    assert found.session == "s1"  # an empty id later does not replace the real one


# --- a call id true is no call id ---------------------------------------------------


def test_events_call_id_true_is_refused_not_read_as_one(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(jsonl({"tool": "t", "callId": 1}, {"tool": "t", "callId": True}))
    result = run_cli("filter", str(path))
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["verdict"] == "pass"
    assert "callId is not a string or an integer" in lines[1]  # not a duplicate of call 1


def test_chat_tool_call_id_true_is_no_id() -> None:
    def call(call_id: object) -> dict:
        function = {"name": "t", "arguments": "{}"}
        tool_call = {"id": call_id, "type": "function", "function": function}
        return {"role": "assistant", "tool_calls": [tool_call]}

    found = [
        r
        for r in records("openai-chat", json.dumps([call(1), call(True)]).encode())
        if r.__class__ is ToolCall
    ]
    assert [c.call_id for c in found] == [1, None]  # two calls: true is not the id 1


def test_cassette_stream_index_true_is_not_index_one() -> None:
    def chunk(index: object, name: str) -> str:
        function = {"name": name, "arguments": "{}"}
        fragment = {"index": index, "id": f"call_{name}", "type": "function", "function": function}
        choices = [{"index": 0, "delta": {"tool_calls": [fragment]}}]
        return "data: " + json.dumps({"object": "chat.completion.chunk", "choices": choices})

    body = "\n\n".join([chunk(1, "a"), chunk(True, "b"), "data: [DONE]"]) + "\n\n"
    response = {"status": {"code": 200, "message": "OK"}, "body": {"string": body}}
    request = {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions"}
    cassette = json.dumps({"interactions": [{"request": request, "response": response}]})
    found = [r for r in records("cassette", cassette.encode(), "c.yaml") if r.__class__ is ToolCall]
    assert sorted(c.tool for c in found) == ["a", "b"]  # not one call "ab" (index 1 twice)
    assert not [
        r for r in records("cassette", cassette.encode(), "c.yaml") if r.__class__ is BadRecord
    ]
