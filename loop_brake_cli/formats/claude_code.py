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
  counts against its parent or the other way round. A line with a snake-case
  ``session_id`` instead (the stream of ``claude -p --output-format stream-json``,
  read with ``--format claude-code``) is keyed as format ``claude-stream`` keys it.
* ``summary``, ``system``, ``file-history-snapshot``, ``queue-operation`` and
  ``progress`` lines hold no calls and are skipped.
* Results: the ``tool_result`` blocks of ``user`` lines, each a ``ToolResult``
  paired by ``tool_use_id`` (the result is ``{"content", "isError"}`` of the
  block; the top-level ``toolUseResult`` is the harness's own view and ignored).
  When the reader wants no results (``Source.results`` False: no progress mode),
  a line with no call or usage is not parsed at all, as before results were
  read: a user line's ``sessionId`` of the wrong type is then not reported (it
  names the session of results only, and a user line holds no call).
* User turns (only when the reader asks: ``Source.user_turns``, a policy's
  ``reset_on_user_turn``): a ``user`` line where the user spoke, its
  ``message.content`` a non-empty string, or a list with text or image blocks
  and no ``tool_result`` block (those are the harness's results, written as
  user messages: never a user turn). Not a user turn either: a line marked
  ``isMeta`` or ``isCompactSummary`` (the harness's own text), a sidechain line
  (a subagent's prompt comes from its parent agent, not the user), and the
  ``claude-stream`` format's user lines (results only). The prompt is never
  read beyond its type. The user line is then parsed even without results.
* Usage: ``message.usage`` of an assistant line (``input_tokens``,
  ``output_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``;
  thinking is counted in the output). Every line of a split response repeats
  it, with the output count known when that line was written: the turn
  (``message.id``) is reported once, at its first line, so before its calls,
  and the larger figures of its later lines are merged into that same record
  (``_common.TurnUsage``): the last line's output count is the final one.

The hook-event log (``session_id``/``tool_name``/``tool_input``) is a different
format: see ``hook_log`` (format ``claude-hooks``).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import Any

from ..core.records import (
    BadRecord,
    Record,
    ToolCall,
    ToolResult,
    Usage,
    UserTurn,
    line_too_long,
    session_key,
    subagent_session_key,
)
from ..readers.reader import TOO_LONG, Source
from . import FormatInfo
from ._common import RecentIds, TurnUsage, json_path, load_json_line, parse_arguments
from ._sniff import UNICODE_ESCAPE, head_objects, mentions

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
# A head without one of these bytes has no ``type`` key (nor the prefix): no line need be
# parsed (an event file's, which every directory replay of them sniffs here first).
_KEY_WORDS = (b'type"', b'"parentUuid"', UNICODE_ESCAPE)


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
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if _looks_like_claude(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


def _session(obj: dict[str, Any]) -> str | None:
    """The streak's session key, or None when the ids have the wrong type. A line with
    no ``sessionId`` but a snake-case ``session_id`` (``claude -p`` stream-json read as
    this format) is keyed as that stream keys it (``stream_session``)."""
    session = obj.get("sessionId")
    if session is None and "session_id" in obj:
        return stream_session(obj)
    if session is not None and not isinstance(session, str):
        return None
    if obj.get("isSidechain") is True:
        agent = obj.get("agentId")
        if agent is not None and not isinstance(agent, str):
            return None
        return subagent_session_key(session_key(session), agent or "sidechain")
    return session_key(session)


def stream_session(obj: dict[str, Any]) -> str | None:
    """The session key of a ``claude -p --output-format stream-json`` line (format
    ``claude-stream``): ``session_id``, and a subagent's lines (``parent_tool_use_id``,
    the id of the Task call that started it) get their own streak,
    ``"<session_id>/<parent_tool_use_id>"``. None when the ids have the wrong type."""
    session = obj.get("session_id")
    parent = obj.get("parent_tool_use_id")
    if session is not None and session.__class__ is not str:
        return None
    if parent is None:
        return session_key(session)
    if parent.__class__ is not str:
        return None
    return subagent_session_key(session_key(session), parent)


_BAD_SESSION = "sessionId or agentId is not a string"
STREAM_BAD_SESSION = "session_id or parent_tool_use_id is not a string"


# "$.message.content[i]" for the first blocks of a message, built once
_PATHS = tuple(json_path("message", "content", index) for index in range(64))


def _path(index: int) -> str:
    return _PATHS[index] if index < 64 else json_path("message", "content", index)


def _calls(
    obj: Any,
    number: int | None,
    seen: RecentIds,
    turns: TurnUsage,
    results: bool,
    stream: bool = False,
    user_turns: bool = False,
) -> list[Record]:
    """The records of one parsed line (``stream``: a stream-json line, keyed by
    ``stream_session``; ``user_turns``: a user's prompt is a ``UserTurn``)."""
    if obj.__class__ is not dict:  # parsed JSON: a dict is never a subclass
        return [BadRecord("not a JSON object", number)]
    kind = obj.get("type")
    if kind == "user":
        if user_turns and not stream and _is_user_turn(obj):
            session = _session(obj)
            return [
                UserTurn(session, number)
                if session is not None
                else BadRecord(_BAD_SESSION, number)
            ]
        return _results(obj, number, stream) if results else []
    if kind != "assistant":
        return []
    message = obj.get("message")
    if message.__class__ is not dict:
        return [BadRecord("assistant line without a message object", number, "$.message")]
    content = message.get("content")
    usage = message.get("usage")
    if content.__class__ is not list:
        if content is not None and content.__class__ is not str:
            return [BadRecord("message.content is not a list", number, "$.message.content")]
        if usage.__class__ is not dict:
            return []
    if stream:
        session = stream_session(obj)
        if session is None:
            return [BadRecord(STREAM_BAD_SESSION, number)]
    else:
        session = obj.get("sessionId")
        if session.__class__ is not str or obj.get("isSidechain") is True:
            session = _session(obj)  # the common case above is session_key(session)
            if session is None:
                return [BadRecord(_BAD_SESSION, number)]
    out: list[Record] = []
    if usage.__class__ is dict:
        turn = _usage(session, message, usage, number, turns)
        if turn is not None:
            out.append(turn)
    if content.__class__ is not list:
        return out
    for index, block in enumerate(content):
        if block.__class__ is dict and block.get("type") == "tool_use":
            call = _tool_use(block, index, number, session, seen)
            if call is not None:
                out.append(call)
    return out


def _tool_use(
    block: dict[str, Any], index: int, number: int | None, session: str, seen: RecentIds
) -> Record | None:
    """The record of a ``tool_use`` block (``content[index]``), None when its id was seen."""
    name = block.get("name")
    if name.__class__ is not str:
        return BadRecord("tool_use block without a string name", number, _path(index))
    call_id = block.get("id")
    if call_id.__class__ is str:
        if seen.seen(call_id):
            return None
    elif call_id is not None:
        return BadRecord("tool_use id is not a string", number, _path(index))
    args = block.get("input")
    if args.__class__ is dict:  # parse_arguments returns an object as it is
        path = _PATHS[index] if index < 64 else json_path("message", "content", index)
        return ToolCall(name, args, session, call_id, number, path)
    args, unparsed = parse_arguments(args)
    return ToolCall(name, args, session, call_id, number, _path(index), unparsed)


def _usage(
    session: str,
    message: dict[str, Any],
    usage: dict[str, Any],
    number: int | None,
    turns: TurnUsage,
) -> Usage | None:
    """The message's usage, once per ``message.id``: None for a later line of the same
    message, whose larger figures are merged into the record already yielded (before
    the message's calls)."""
    turn = message.get("id")
    if turn.__class__ is str:
        key = (session, turn)
        earlier = turns.get(key)
        if earlier is not None:  # a later line of a split response: no new record
            earlier.input_tokens = _larger(earlier.input_tokens, usage.get("input_tokens"))
            earlier.output_tokens = _larger(earlier.output_tokens, usage.get("output_tokens"))
            earlier.cache_read_tokens = _larger(
                earlier.cache_read_tokens, usage.get("cache_read_input_tokens")
            )
            earlier.cache_write_tokens = _larger(
                earlier.cache_write_tokens, usage.get("cache_creation_input_tokens")
            )
            return None
    else:
        turn = None
    model = message.get("model")
    # tokens() inline: this runs for every assistant line of a transcript
    given = usage.get("input_tokens")
    read = usage.get("cache_read_input_tokens")
    written = usage.get("cache_creation_input_tokens")
    output = usage.get("output_tokens")
    record = Usage(
        session,
        turn,
        model if model.__class__ is str else None,
        given if given.__class__ is int and given >= 0 else None,
        output if output.__class__ is int and output >= 0 else None,
        read if read.__class__ is int and read >= 0 else None,
        written if written.__class__ is int and written >= 0 else None,
        None,  # thinking is part of output_tokens: the API reports no separate count
        number,
        "$.message.usage",
    )
    if turn is not None:
        turns.remember(key, record)
    return record


def merge_usage(earlier: Usage, figures: tuple[int | None, ...]) -> None:
    """A later line of a turn already reported (``_usage``), its figures already read as
    token counts (an int >= 0, or None: replay's C reader): the larger ones raised."""
    given, output, read, written = figures
    earlier.input_tokens = _larger(earlier.input_tokens, given)
    earlier.output_tokens = _larger(earlier.output_tokens, output)
    earlier.cache_read_tokens = _larger(earlier.cache_read_tokens, read)
    earlier.cache_write_tokens = _larger(earlier.cache_write_tokens, written)


def _larger(old: int | None, value: Any) -> int | None:
    """``value`` when it is a token count above ``old`` (None: not recorded), else ``old``."""
    if value.__class__ is int and value >= 0 and (old is None or value > old):
        return value
    return old


def _is_user_turn(obj: dict[str, Any]) -> bool:
    """A user line where the user spoke (module docstring): a prompt, not results, not the
    harness's own text, not a subagent's prompt."""
    if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
        return False
    if obj.get("isSidechain") is True:
        return False
    message = obj.get("message")
    if message.__class__ is not dict:
        return False
    content = message.get("content")
    if content.__class__ is str:
        return content != ""
    if content.__class__ is not list:
        return False
    kinds = {block.get("type") for block in content if block.__class__ is dict}
    return "tool_result" not in kinds and bool(kinds & {"text", "image"})


def _results(obj: dict[str, Any], number: int | None, stream: bool = False) -> list[Record]:
    """The ``tool_result`` blocks of a user line, each paired by its ``tool_use_id``.

    The result is ``{"content": ..., "isError": ...}`` (the block's own values, not
    copied): the block's id differs for every call, so it is left out of what
    progress compares. A block without a string id cannot be paired and is skipped."""
    message = obj.get("message")
    if message.__class__ is not dict:
        return []
    content = message.get("content")
    if content.__class__ is not list:
        return []
    session = None
    out: list[Record] = []
    for index, block in enumerate(content):
        if block.__class__ is not dict or block.get("type") != "tool_result":
            continue
        call_id = block.get("tool_use_id")
        if call_id.__class__ is not str:
            continue
        if session is None:
            session = stream_session(obj) if stream else _session(obj)
            if session is None:
                return [BadRecord(STREAM_BAD_SESSION if stream else _BAD_SESSION, number)]
        result = {"content": block.get("content"), "isError": block.get("is_error") is True}
        out.append(ToolResult(session, call_id, result, None, number, _path(index)))
    return out


_TOOL_USE = b'"tool_use"'
_TOOL_RESULT = b'"tool_result"'
_USAGE = b'"usage"'
_USER = b'"user"'  # every user line (a prompt, or results) names its type and role so


def _needles(results: bool, user_turns: bool = False) -> tuple[bytes, bytes, bytes | None]:
    """What a line that may hold a record contains: at least one of these bytes (None:
    no third). With results, the result's type first: a result line is the longest
    kind and names its type near the start, while ``"tool_use"`` would be looked for
    through all of it. Without, usage first: an assistant line names it in its
    message's head, before the content blocks. The readers look with ``raw.find(...)``
    in their loop: not through a function (a call per line), nor a bound ``raw.find``
    kept in a variable (3.11 builds that method object by a generic look-up: 1,600
    instructions a call+result pair more), nor ``in`` (``bytes.__contains__`` first
    tries its operand as an integer, and raises and clears a TypeError every time).
    With user turns, ``"user"`` instead of the result's type: every user line is read."""
    if user_turns:
        return _USER, _TOOL_USE, _USAGE
    if results:
        return _TOOL_RESULT, _TOOL_USE, _USAGE
    return _USAGE, _TOOL_USE, None


def _reported(raw: bytes) -> bool:
    """Whether a line the parser refused is an error: one that may hold a call, or that is
    not even the outline of an object. A whole line holding only results or usage that
    the strict parser refuses (say a lone surrogate in a result) is skipped, as it was
    before results were read: its results and usage are lost, the calls are not."""
    return raw.find(_TOOL_USE) >= 0 or not _is_whole_object(raw)


def _is_whole_object(raw: bytes) -> bool:
    """The outline of one JSON object: a truncated or garbled line fails this and is parsed."""
    stripped = raw.strip()
    return stripped[:1] == b"{" and stripped[-1:] == b"}"


def parse(source: Source, stream: bool = False) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read (``stream``:
    the lines of ``claude -p --output-format stream-json``, format ``claude-stream``).

    A line without the bytes ``"tool_use"``, ``"tool_result"`` or ``"usage"``
    holds no record; when it also has the outline of a whole object it is not
    parsed at all. A truncated or garbled line is still parsed and reported.
    Results are attached as parsed, never copied or serialised again.
    """
    from ..readers.fast_canonical import AVAILABLE  # imported when a file is read

    if not AVAILABLE:
        return _parse(source, stream)
    # orjson reads each line as parse_json would: every call's arguments are plain JSON
    # values, and judge may hash them the fast way
    from ..readers.pipeline import plain_records

    return plain_records(_parse_fast(source, stream))


def _parse_fast(source: Source, stream: bool = False) -> Generator[Record, None, None]:
    """``parse`` with orjson where it reads a line as parse_json would."""
    from ..readers.fast_canonical import DecodeError, load_line, loads

    seen, turns = RecentIds(), TurnUsage()
    results, user_turns = source.results, source.user_turns
    first, second, third = _needles(results, user_turns)
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if raw.find(first) < 0 and raw.find(second) < 0 and (third is None or raw.find(third) < 0):
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
                if _reported(raw):
                    yield BadRecord(error, number)
                continue
        if obj.__class__ is dict and obj.get("type") == "assistant" and not stream:
            # An assistant line whose ids have their types, as _calls reads it, with no
            # call or list of its own: most lines of a transcript that are parsed.
            message = obj.get("message")
            session = obj.get("sessionId")
            if (
                message.__class__ is dict
                and session.__class__ is str
                and obj.get("isSidechain") is not True
                and (content := message.get("content")).__class__ is list
            ):
                usage = message.get("usage")
                if usage.__class__ is dict:
                    if (turn := _usage(session, message, usage, number, turns)) is not None:
                        yield turn
                for index, block in enumerate(content):
                    if block.__class__ is dict and block.get("type") == "tool_use":
                        if (call := _tool_use(block, index, number, session, seen)) is not None:
                            yield call
                continue
        calls = _calls(obj, number, seen, turns, results, stream, user_turns)
        if calls:
            yield from calls


def _parse(source: Source, stream: bool = False) -> Iterator[Record]:
    """``parse`` with the exact parser."""
    seen, turns = RecentIds(), TurnUsage()
    results, user_turns = source.results, source.user_turns
    first, second, third = _needles(results, user_turns)
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if raw.find(first) < 0 and raw.find(second) < 0 and (third is None or raw.find(third) < 0):
            if _is_whole_object(raw):
                continue
        obj, error = load_json_line(raw)
        if error is not None:
            if _reported(raw):
                yield BadRecord(error, number)
            continue
        calls = _calls(obj, number, seen, turns, results, stream, user_turns)
        if calls:
            yield from calls


def line_records(raw: bytes, number: int, seen: RecentIds, turns: TurnUsage) -> list[Record]:
    """The records ``parse`` makes of one line that holds one of its needles, or lacks the
    outline of an object, when the reader wants neither results nor user turns: what
    ``analysis/replay_claude.py`` does with a line its C reader declines. The same
    steps as ``_parse_fast``'s loop (orjson, else the exact parser; an error reported
    only where ``_reported``), with ``_calls`` for what its inline branch spells out."""
    from ..readers.fast_canonical import DecodeError, load_line, loads

    obj = None
    if len(raw) < 1024:
        try:
            obj = loads(raw)
        except DecodeError:
            obj = None
    if obj is None:
        obj, error = load_line(raw)
        if error is not None:
            return [BadRecord(error, number)] if _reported(raw) else []
    return _calls(obj, number, seen, turns, False)
