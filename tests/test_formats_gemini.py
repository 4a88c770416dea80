"""The gemini-cli adapter: real recordings, the JSONL upsert log, canary, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    assert_canary_hidden,
    assert_never_raises,
    bytes_or_json,
    calls,
    json_shapes,
    longest_streak,
    parse_bytes,
    read,
    summary,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord

REAL = {
    "codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini__session-2025-12-01T21-45"
    "-5b959dae.json": ("5b959dae-8655-4cd1-b10f-720b8c336ea2", 10, {"read_file": 7}),
    "codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini__session-2026-01-16T11-01"
    "-file-ops-37b7abef.json": ("37b7abef-713d-4522-85f0-8ff15a4e6d17", 14, {"write_todos": 3}),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_recordings(name: str) -> None:
    session, count, some_tools = REAL[name]
    fmt, records = read(FIXTURES / "gemini-cli" / name)
    assert fmt == "gemini-cli"
    assert not [r for r in records if isinstance(r, BadRecord)]
    found = calls(records)
    assert len(found) == count
    assert {c.session for c in found} == {session}
    for tool, n in some_tools.items():
        assert sum(c.tool == tool for c in found) == n
    assert all(c.call_id.startswith(c.tool + "-") for c in found)
    assert found[0].path.startswith("$.messages[3].toolCalls[0]")
    assert longest_streak(records)[0] == 1


@pytest.mark.parametrize("name", sorted(REAL))
def test_shared_samples(shared_samples: Path, name: str) -> None:
    fmt, records = read(shared_samples / "trajectories/gemini-cli" / name)
    assert (fmt, len(calls(records))) == ("gemini-cli", REAL[name][1])


def test_jsonl_upserts_set_and_rewind() -> None:
    fmt, records = read(FIXTURES / "gemini-cli/synthetic--edge-cases.jsonl")
    assert fmt == "gemini-cli"
    assert summary(records) == [
        ("read_file", {"file_path": "a.txt"}, "read_file-1-aa", 3, "$.toolCalls[0]", False),
        # line 4 rewrites message m2 and line 6 ($set.messages) repeats it: not new calls
        ("read_file", {"file_path": "a.txt"}, "read_file-2-bb", 5, "$.toolCalls[0]", False),
        ("list_directory", {}, None, 5, "$.toolCalls[1]", False),
        ("glob", {"pattern": "*.txt"}, "glob-3-cc", 8, "$.toolCalls[0]", False),
        ("BAD", 8, "$.toolCalls[1]"),
        ("BAD", 9, "$.toolCalls"),
        ("BAD", 10, None),
    ]
    assert {r.session for r in calls(records)} == {"gem-synthetic-1"}
    assert longest_streak(records)[0] == 2  # two read_file calls, different ids


def test_session_falls_back_to_the_file() -> None:
    turn = {"type": "gemini", "toolCalls": [{"id": "x-1", "name": "x", "args": {}}]}
    doc = {"sessionId": None, "projectHash": "h", "messages": [turn]}
    (call,) = parse_bytes("gemini-cli", json.dumps(doc).encode())
    assert call.session == "fuzz.json"


def test_canary_never_printed(tmp_path: Path) -> None:
    tool_calls = [{"id": f"run-{n}", "name": "run_shell_command", "args": {"command": CANARY}}
                  for n in range(3)]  # fmt: skip
    tool_calls += [{"id": "bad", "name": ["x"], "args": {"command": CANARY}},
                   {"id": "str", "name": "x", "args": CANARY + "{"}]  # fmt: skip
    turns = [{"type": "user", "content": CANARY}, {"type": "gemini", "toolCalls": tool_calls}]
    doc = {"sessionId": "s", "projectHash": "h", "messages": turns}
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps(doc))
    assert_canary_hidden("gemini-cli", path)


JSON_KEYS = st.sampled_from(
    ["sessionId", "projectHash", "messages", "type", "toolCalls", "id", "name", "args", "$set",
     "$rewindTo", "content"]
)  # fmt: skip
JSON_VALUES = json_shapes(
    JSON_KEYS,
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.sampled_from(["gemini"]),
)


@settings(max_examples=200, deadline=None)
@given(
    data=bytes_or_json(JSON_VALUES)
    | st.lists(JSON_VALUES, min_size=2, max_size=4).map(
        lambda vs: b"\n".join(json.dumps(v).encode() for v in vs)
    )
)
def test_never_raises(data: bytes) -> None:
    assert_never_raises("gemini-cli", data)
