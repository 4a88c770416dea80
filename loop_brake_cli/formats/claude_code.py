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
    yield from _calls(obj, number, seen, _keep)


def _keep(args: Any) -> Any:
    return args


# "$.message.content[i]" for the first blocks of a message, built once
_PATHS = tuple(json_path("message", "content", index) for index in range(64))


def _calls(obj: Any, number: int | None, seen: RecentIds, mark: Any) -> list[Record]:
    """``calls_in_line`` as a list; ``mark`` is applied to each call's arguments."""
    if obj.__class__ is not dict:  # parsed JSON: a dict is never a subclass
        return [BadRecord("not a JSON object", number)]
    if obj.get("type") != "assistant":
        return []
    message = obj.get("message")
    if message.__class__ is not dict:
        return [BadRecord("assistant line without a message object", number, "$.message")]
    content = message.get("content")
    if content is None or content.__class__ is str:
        return []
    if content.__class__ is not list:
        return [BadRecord("message.content is not a list", number, "$.message.content")]
    session = obj.get("sessionId")
    if session.__class__ is not str or obj.get("isSidechain") is True:
        session = _session(obj)  # the common case above is session_key(session)
        if session is None:
            return [BadRecord("sessionId or agentId is not a string", number)]
    out: list[Record] = []
    for index, block in enumerate(content):
        if block.__class__ is not dict or block.get("type") != "tool_use":
            continue
        path = _PATHS[index] if index < 64 else json_path("message", "content", index)
        name = block.get("name")
        if name.__class__ is not str:
            out.append(BadRecord("tool_use block without a string name", number, path))
            continue
        call_id = block.get("id")
        if call_id.__class__ is str:
            if seen.seen(call_id):
                continue
        elif call_id is not None:
            out.append(BadRecord("tool_use id is not a string", number, path))
            continue
        args = block.get("input")
        if args.__class__ is dict:  # parse_arguments returns an object as it is
            out.append(ToolCall(name, mark(args), session, call_id, number, path))
        else:
            args, unparsed = parse_arguments(args)
            out.append(ToolCall(name, mark(args), session, call_id, number, path, unparsed))
    return out


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
    from ..fast_canonical import AVAILABLE  # imported when a file is read

    if not AVAILABLE:
        yield from _parse(source, load_json_line, _keep)
        return
    # orjson where it reads the line as parse_json would; then the arguments are plain
    # JSON values and judge may hash them the fast way (pipeline.plain_args)
    from ..fast_canonical import DecodeError, load_line, loads
    from ..pipeline import plain_args

    seen = RecentIds()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if _TOOL_USE not in raw:
            if (raw[0] == 123 and raw[-1] == 125) or _is_whole_object(raw):  # '{' ... '}'
                continue  # cannot hold a call: not parsed (most of a transcript's bytes)
        obj = None
        if len(raw) < 1024:  # too short to nest too deep: load_line's orjson, inline
            try:
                obj = loads(raw)
            except DecodeError:
                obj = None  # parse_json says why (or reads it: 1e400)
        if obj is None:  # orjson never gives None for a line that is not 'null'
            obj, error = load_line(raw)
            if error is not None:
                yield BadRecord(error, number)
                continue
        calls = _calls(obj, number, seen, plain_args)
        if calls:
            yield from calls


def _parse(source: Source, load: Any, mark: Any) -> Iterator[Record]:
    """``parse`` with the exact parser."""
    seen = RecentIds()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if _TOOL_USE not in raw and _is_whole_object(raw):
            continue
        obj, error = load(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        calls = _calls(obj, number, seen, mark)
        if calls:
            yield from calls
