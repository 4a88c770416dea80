"""The core's event line: one JSON object naming one call.

    {"tool": "search", "args": {"q": "weather"}, "sessionId": "s1", "callId": "c7"}

Aliases, the first non-null one wins: ``toolName``/``name`` for ``tool``;
``arguments``/``input`` for ``args``; ``session_id``; ``agent_id``;
``call_id``/``id``. Arguments are hashed as given (a missing ``args`` is
``{}``); the session, call id and tool rules are ``fields``'.

Where results are read (a policy's progress mode), a line with ``"type":
"result"`` is what a call returned, not a call:

    {"type": "result", "sessionId": "s1", "callId": "c7", "result": {"rows": 3}}
    {"type": "result", "sessionId": "s1", "callId": "c7", "resultDigest": "<64 hex>"}

with the same session and call id aliases. Elsewhere it is read as it always
was: a line without a tool name is an error, so without the progress mode every
verdict stays what it was before result lines existed.

Under a policy's ``reset_on_user_turn``, a line with ``"type": "user"`` is a
user turn: the user spoke in that session (the same session aliases; nothing
else of the line is read, so a prompt in it is never looked at):

    {"type": "user", "sessionId": "s1"}

Without that key such a line is what it always was (an error: no tool name).
"""

from __future__ import annotations

from typing import Any

from ...core.progress import digest_of_hex
from ...core.records import BadRecord, Record, ToolCall, ToolResult, UserTurn
from .fields import FieldError, call_id_of, session_of

__all__ = ["decode", "first"]

TOOL_KEYS = ("tool", "toolName", "name")
ARGS_KEYS = ("args", "arguments", "input")
SESSION_KEYS = ("sessionId", "session_id")
AGENT_KEYS = ("agentId", "agent_id")
CALL_KEYS = ("callId", "call_id", "id")
RESULT_TYPE = "result"
USER_TYPE = "user"


def first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first non-null value among the aliases."""
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def decode(
    obj: Any, line: int | None = None, results: bool = False, user_turns: bool = False
) -> Record:
    """One parsed event object as a call (or, with ``results``, a result line; with
    ``user_turns``, a user line); wrong types become a located BadRecord."""
    if not isinstance(obj, dict):
        return BadRecord("not a JSON object", line)
    if results and obj.get("type") == RESULT_TYPE:
        return _result(obj, line)
    if user_turns and obj.get("type") == USER_TYPE:
        try:
            return UserTurn(session_of(first(obj, SESSION_KEYS), first(obj, AGENT_KEYS)), line)
        except FieldError as exc:
            return BadRecord(str(exc), line)
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


def _result(obj: dict[str, Any], line: int | None) -> ToolResult | BadRecord:
    """A result line: the value (never looked into here) or the host's digest."""
    try:
        session = session_of(first(obj, SESSION_KEYS), first(obj, AGENT_KEYS))
        call_id = call_id_of(first(obj, CALL_KEYS))
    except FieldError as exc:
        return BadRecord(str(exc), line)
    value = obj.get("result")
    text = obj.get("resultDigest")
    error = True if obj.get("isError") is True else None
    if text is None:
        if value is None:
            return BadRecord('result line without "result" or "resultDigest"', line)
        return ToolResult(session, call_id, value, None, line, None, error)
    if value is not None:
        return BadRecord('result line with both "result" and "resultDigest"', line)
    digest = digest_of_hex(text)
    if digest is None:
        return BadRecord("resultDigest is not 64 hex characters (a sha256)", line)
    return ToolResult(session, call_id, None, digest, line, None, error)
