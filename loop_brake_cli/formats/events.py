"""The core's own event lines, one JSON object per line.

    {"tool": "search", "args": {"q": "weather"}, "sessionId": "s1", "callId": "c7"}

Each line is decoded by ``wire.event_line`` (aliases and edge rules there), the
decoder the fast path of ``filter`` falls back to. Result lines (``"type":
"result"``) are read only when asked (``formats.parse_records`` under a policy's
progress mode), user lines (``"type": "user"``) only under a policy's
``reset_on_user_turn`` (``Source.user_turns``).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, line_too_long
from ..readers.reader import TOO_LONG, Source
from ..readers.wire.event_line import TOOL_KEYS, decode, first
from . import FormatInfo

INFO = FormatInfo(
    name="events",
    description="loop-brake event lines: {tool, args, sessionId, agentId, callId}",
    line_based=True,
    patterns=("*.jsonl", "*.ndjson"),
)


def sniff(head: bytes) -> bool:
    first_line = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        obj = parse_json(first_line)
    except JSONInputError:
        return False
    return isinstance(obj, dict) and isinstance(first(obj, TOOL_KEYS), str)


def parse(source: Source, results: bool = False) -> Iterator[Record]:
    user_turns = source.user_turns
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        try:
            obj = parse_json(raw)
        except JSONInputError as exc:
            yield BadRecord(str(exc), number)
            continue
        yield decode(obj, number, results, user_turns)
