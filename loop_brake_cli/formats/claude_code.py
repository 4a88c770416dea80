"""Claude Code session transcripts: ``~/.claude/projects/<project>/<sessionId>.jsonl``.

One JSON object per line; a tool call is a ``tool_use`` block of an assistant line::

    {"type":"assistant","sessionId":"c45a…","uuid":"…","message":{"id":"msg_01…",
     "content":[{"type":"tool_use","id":"toolu_01…","name":"Bash","input":{"command":"ls"}}]}}

* One API response is written over several lines that share ``message.id``
  (one content block per line in newer versions, repeated whole in others), so
  each ``tool_use`` is emitted once, keyed by its ``id`` (a bounded memory of
  recent ids, so a live ``tail -f`` never grows).
* The session is ``sessionId``. Subagent (sidechain) lines carry the parent's
  ``sessionId`` plus ``isSidechain: true`` and ``agentId``; their calls get
  their own streak, ``"<sessionId>/<agentId>"`` (``"<sessionId>/sidechain"``
  when an old version wrote no ``agentId``), so a subagent polling never
  counts against its parent or the other way round.
* ``user``, ``summary``, ``system``, ``file-history-snapshot``,
  ``queue-operation`` and ``progress`` lines hold no calls and are skipped, as
  are assistant lines whose ``message.content`` is a plain string.

The hook-event log (``session_id``/``tool_name``/``tool_input``) is a different
format: see ``hook_log`` (format ``claude-hooks``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..brake import session_key, subagent_session_key
from ..reader import TOO_LONG, Source
from ..records import BadRecord, Record, ToolCall, line_too_long
from . import FormatInfo
from ._common import RecentIds, json_path, load_json_line, parse_arguments
from ._sniff import head_objects

INFO = FormatInfo(
    name="claude-code",
    description="Claude Code session transcripts (~/.claude/projects/*/<session>.jsonl)",
    line_based=True,
    patterns=("*.jsonl",),
)

_LINE_TYPES = (
    "user",
    "assistant",
    "system",
    "progress",
    "queue-operation",
)  # a tuple: ==, never hash
# A line too long for the sniff window still starts like this.
_PREFIX = re.compile(
    rb'^\s*\{("parentUuid":(null|"[^"]*"),"isSidechain":(true|false),'
    rb'|"type":"(file-history-snapshot|summary)","(messageId|summary)":)'
)


def _looks_like_claude(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind in _LINE_TYPES:
        return isinstance(obj.get("sessionId"), str) and ("uuid" in obj or "parentUuid" in obj)
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":
        return "snapshot" in obj and "messageId" in obj
    return False


def sniff(head: bytes) -> bool:
    """Any whole line in the head that only Claude Code writes."""
    for obj in head_objects(head):
        if _looks_like_claude(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


def _session(obj: dict[str, Any]) -> str | None:
    """The streak's session key, or None when the ids have the wrong type."""
    session = obj.get("sessionId")
    if session is not None and not isinstance(session, str):
        return None
    if obj.get("isSidechain") is True:
        agent = obj.get("agentId")
        if agent is not None and not isinstance(agent, str):
            return None
        return subagent_session_key(session_key(session), agent or "sidechain")
    return session_key(session)


def calls_in_line(obj: Any, number: int | None, seen: RecentIds) -> Iterator[Record]:
    """The new tool calls of one parsed transcript line (nothing for other line types)."""
    if not isinstance(obj, dict):
        yield BadRecord("not a JSON object", number)
        return
    if obj.get("type") != "assistant":
        return
    message = obj.get("message")
    if not isinstance(message, dict):
        yield BadRecord("assistant line without a message object", number, "$.message")
        return
    content = message.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        yield BadRecord("message.content is not a list", number, "$.message.content")
        return
    session = _session(obj)
    if session is None:
        yield BadRecord("sessionId or agentId is not a string", number)
        return
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        path = json_path("message", "content", index)
        name = block.get("name")
        if not isinstance(name, str):
            yield BadRecord("tool_use block without a string name", number, path)
            continue
        call_id = block.get("id")
        if isinstance(call_id, str):
            if seen.seen(call_id):
                continue
        elif call_id is not None:
            yield BadRecord("tool_use id is not a string", number, path)
            continue
        args, unparsed = parse_arguments(block.get("input"))
        yield ToolCall(name, args, session, call_id, number, path, unparsed)


_TOOL_USE = b'"tool_use"'


def _is_whole_object(raw: bytes) -> bool:
    """The outline of one JSON object: a truncated or garbled line fails this and is parsed."""
    stripped = raw.strip()
    return stripped[:1] == b"{" and stripped[-1:] == b"}"


def parse(source: Source) -> Iterator[Record]:
    """Stream the calls: each one is yielded as soon as its line is read.

    A line without the bytes ``"tool_use"`` holds no call; when it also has the
    outline of a whole object it is not parsed at all (tool results and
    prompts are most of a transcript's bytes). A truncated or garbled line is
    still parsed and reported.
    """
    seen = RecentIds()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if _TOOL_USE not in raw and _is_whole_object(raw):
            continue  # cannot hold a call: skip parsing it (most of a transcript's bytes)
        obj, error = load_json_line(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        yield from calls_in_line(obj, number, seen)
