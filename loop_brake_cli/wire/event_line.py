"""The core's event line: one JSON object naming one call.

    {"tool": "search", "args": {"q": "weather"}, "sessionId": "s1", "callId": "c7"}

Aliases, the first non-null one wins: ``toolName``/``name`` for ``tool``;
``arguments``/``input`` for ``args``; ``session_id``; ``agent_id``;
``call_id``/``id``. Arguments are hashed as given (a missing ``args`` is
``{}``); the session, call id and tool rules are ``fields``'.
"""

from __future__ import annotations

from typing import Any

from ..records import BadRecord, Record, ToolCall
from .fields import FieldError, call_id_of, session_of

__all__ = ["decode", "first"]

TOOL_KEYS = ("tool", "toolName", "name")
ARGS_KEYS = ("args", "arguments", "input")
SESSION_KEYS = ("sessionId", "session_id")
AGENT_KEYS = ("agentId", "agent_id")
CALL_KEYS = ("callId", "call_id", "id")


def first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first non-null value among the aliases."""
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def decode(obj: Any, line: int | None = None) -> Record:
    """One parsed event object as a call; wrong types become a located BadRecord."""
    if not isinstance(obj, dict):
        return BadRecord("not a JSON object", line)
    tool = first(obj, TOOL_KEYS)
    if not isinstance(tool, str):
        what = "missing" if tool is None else "not a string"
        return BadRecord(f'tool name {what} (expected "tool", "toolName" or "name")', line)
    try:
        session = session_of(first(obj, SESSION_KEYS), first(obj, AGENT_KEYS))
        call_id = call_id_of(first(obj, CALL_KEYS))
    except FieldError as exc:
        return BadRecord(str(exc), line)
    args = first(obj, ARGS_KEYS)
    return ToolCall(tool, {} if args is None else args, session, call_id, line)
