"""formats/_template.py stays a working adapter: the example in its docstring is read
as the docstring says (a new format starts from a template that runs)."""

from __future__ import annotations

import io
import json

from adapter_helpers import CANARY, assert_records_sound

from loop_brake_cli import formats
from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage, UserTurn
from loop_brake_cli.formats import _template as template
from loop_brake_cli.readers.reader import Source

LINES = [
    {"event": "prompt", "session": "s1"},
    {"event": "usage", "session": "s1", "turn": "t1", "input_tokens": 10, "output_tokens": 2},
    {"event": "tool", "session": "s1", "id": "c1", "name": "ls", "input": {"path": CANARY}},
    {"event": "tool", "session": "s1", "id": "c1", "name": "ls", "input": {"path": CANARY}},
    {"event": "output", "session": "s1", "id": "c1", "output": "a.txt", "error": True},
    {"event": "tool", "name": "cat", "input": '{"path": "a.txt"}'},
    {"event": "note", "text": "passed over"},
]


def read(data: bytes, results: bool = True, user_turns: bool = True) -> list:
    source = Source(io.BytesIO(data), "run.jsonl")
    source.results, source.user_turns = results, user_turns
    return list(template.parse(source))


def test_the_template_reads_its_own_example() -> None:
    data = b"".join(json.dumps(line).encode() + b"\n" for line in LINES) + b"{not json\n"
    records = read(data)
    assert_records_sound([r for r in records if not isinstance(r, UserTurn)])
    # the call written twice is emitted once; the note is passed over
    kinds = [UserTurn, Usage, ToolCall, ToolResult, ToolCall, BadRecord]
    assert [r.__class__ for r in records] == kinds
    first, second = (r for r in records if isinstance(r, ToolCall))
    assert (first.tool, first.call_id, first.session, first.line) == ("ls", "c1", "s1", 3)
    assert (second.tool, second.args, second.session) == ("cat", {"path": "a.txt"}, "run.jsonl")
    result = next(r for r in records if isinstance(r, ToolResult))
    assert (result.call_id, result.error, result.line) == ("c1", True, 5)
    bad = records[-1]
    assert bad.line == 8 and CANARY not in bad.message
    plain = read(data, results=False, user_turns=False)
    assert not [r for r in plain if isinstance(r, (ToolResult, UserTurn))]


def test_the_template_sniffs_its_own_events_and_is_no_registered_format() -> None:
    assert template.sniff(json.dumps(LINES[2]).encode() + b"\n")
    assert not template.sniff(b'{"text": "\\"event\\": \\"tool\\""}\n')
    assert template.INFO.name not in formats.names()
    assert template not in formats.ADAPTERS
