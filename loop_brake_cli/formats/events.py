"""The core's own event lines, one JSON object per line.

    {"tool": "search", "args": {"q": "weather"}, "sessionId": "s1", "callId": "c7"}

Aliases: ``toolName``/``name`` for ``tool``; ``arguments``/``input`` for
``args``; ``session_id``; ``agent_id``; ``call_id``/``id``. A missing ``args``
is ``{}``; ``null`` ids count as absent. The session is ``sessionId``, else
``agentId``, else ``"default"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..brake import session_key
from ..canonical import JSONInputError, parse_json
from ..reader import TOO_LONG, Source
from ..records import BadRecord, Record, ToolCall, line_too_long
from . import FormatInfo

INFO = FormatInfo(
    name="events",
    description="loop-brake event lines: {tool, args, sessionId, agentId, callId}",
    line_based=True,
    patterns=("*.jsonl", "*.ndjson"),
)

_TOOL_KEYS = ("tool", "toolName", "name")
_ARGS_KEYS = ("args", "arguments", "input")
_SESSION_KEYS = ("sessionId", "session_id")
_AGENT_KEYS = ("agentId", "agent_id")
_CALL_KEYS = ("callId", "call_id", "id")


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def sniff(head: bytes) -> bool:
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        obj = parse_json(first)
    except JSONInputError:
        return False
    return isinstance(obj, dict) and isinstance(_first(obj, _TOOL_KEYS), str)


def event_to_record(obj: Any, line: int | None) -> Record:
    """Read one parsed event object; wrong types become a located BadRecord."""
    if not isinstance(obj, dict):
        return BadRecord("not a JSON object", line)
    tool = _first(obj, _TOOL_KEYS)
    if not isinstance(tool, str):
        what = "missing" if tool is None else "not a string"
        return BadRecord(f'tool name {what} (expected "tool", "toolName" or "name")', line)
    session = _first(obj, _SESSION_KEYS)
    agent = _first(obj, _AGENT_KEYS)
    for label, value in (("sessionId", session), ("agentId", agent)):
        if value is not None and not isinstance(value, str):
            return BadRecord(f"{label} is not a string", line)
    call_id = _first(obj, _CALL_KEYS)
    if call_id is not None and (isinstance(call_id, bool) or not isinstance(call_id, (str, int))):
        return BadRecord("callId is not a string or an integer", line)
    args = _first(obj, _ARGS_KEYS)
    return ToolCall(tool, {} if args is None else args, session_key(session, agent), call_id, line)


def parse(source: Source) -> Iterator[Record]:
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        try:
            obj = parse_json(raw)
        except JSONInputError as exc:
            yield BadRecord(str(exc), number)
            continue
        yield event_to_record(obj, number)
