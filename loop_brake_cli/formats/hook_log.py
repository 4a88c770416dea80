"""Claude Code hook-event logs: one hook input object per line.

Claude Code hands every hook a JSON object on stdin; a logging hook that
appends those objects (as the fasthooks sample does) leaves a file like::

    {"ts":"…","session_id":"c45a…","event":"PreToolUse","tool_name":"Bash",
     "tool_input":{"command":"ls -la"}}

Each ``PreToolUse`` event is one tool call, about to run: that is the call the
brake would judge. ``PostToolUse`` echoes the same call after it ran and every
other event (``UserPromptSubmit``, ``Stop``, ``SubagentStop``…) holds none, so
they are not counted. The event name is ``hook_event_name`` as Claude Code
sends it, or ``event`` as some loggers rename it. The session is
``session_id``, joined with ``agent_id`` when a subagent's hook carries one; a
``tool_use_id``, when present, is the call id and de-duplicates an event
logged twice. This is not the session transcript (``claude-code``): the
transcript holds ``tool_use`` blocks, the hook log holds events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..brake import session_key, subagent_session_key
from ..reader import TOO_LONG, Source
from ..records import BadRecord, Record, ToolCall, line_too_long
from . import FormatInfo
from ._common import RecentIds, load_json_line, parse_arguments
from ._sniff import head_objects

INFO = FormatInfo(
    name="claude-hooks",
    description="Claude Code hook-event logs (one hook input per line; PreToolUse = a call)",
    line_based=True,
    patterns=("*.jsonl",),
)

HOOK_EVENTS = (  # a tuple: membership by ==, so an odd event value never raises
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
)


def _event(obj: dict[str, Any]) -> Any:
    name = obj.get("hook_event_name")
    return obj.get("event") if name is None else name


def sniff(head: bytes) -> bool:
    """A line that is a hook input: a known event name and a ``session_id``."""
    for obj in head_objects(head):
        if _event(obj) in HOOK_EVENTS and isinstance(obj.get("session_id"), str):
            return True
    return False


def event_to_records(obj: Any, number: int | None, seen: RecentIds) -> Iterator[Record]:
    """The call of one hook event, if it is a new PreToolUse."""
    if not isinstance(obj, dict):
        yield BadRecord("not a JSON object", number)
        return
    if _event(obj) != "PreToolUse":
        return
    name = obj.get("tool_name")
    if not isinstance(name, str):
        yield BadRecord("PreToolUse event without a string tool_name", number)
        return
    session, agent = obj.get("session_id"), obj.get("agent_id")
    if not isinstance(session, (str, type(None))) or not isinstance(agent, (str, type(None))):
        yield BadRecord("session_id or agent_id is not a string", number)
        return
    call_id = obj.get("tool_use_id")
    if isinstance(call_id, str):
        if seen.seen(call_id):
            return
    elif call_id is not None:
        yield BadRecord("tool_use_id is not a string", number)
        return
    key = (
        session_key(session) if agent is None else subagent_session_key(session_key(session), agent)
    )
    args, unparsed = parse_arguments(obj.get("tool_input"))
    yield ToolCall(name, args, key, call_id, number, None, unparsed)


def parse(source: Source) -> Iterator[Record]:
    """Stream the PreToolUse calls, one per event line, as each line arrives."""
    seen = RecentIds()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        obj, error = load_json_line(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        yield from event_to_records(obj, number, seen)
