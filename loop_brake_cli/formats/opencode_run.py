"""OpenCode headless output: ``opencode run --format json``.

One JSON event per line on stdout as the agent works; each carries the session and
one ``part`` of a message (the shapes OpenCode's ``run`` command prints; its
documentation names the option, not the events: these are read from recorded runs
quoted by projects that parse them)::

    {"type":"step_start","timestamp":1790616253291,"sessionID":"ses_f16f…",
     "part":{"type":"step-start","messageID":"msg_0e90…",…}}
    {"type":"tool_use","timestamp":1790616253809,"sessionID":"ses_f16f…",
     "part":{"type":"tool","tool":"read","callID":"call_8a29…","state":{"status":
     "completed","input":{"filePath":"/tmp/sample.txt"},"output":"…"}}}
    {"type":"step_finish","timestamp":…,"sessionID":"ses_f16f…","part":{"type":
     "step-finish","reason":"tool-calls","tokens":{"input":8069,"output":3,
     "reasoning":12,"cache":{"write":0,"read":0}},"cost":0}}

* The session is ``sessionID``.
* A call is a ``tool_use`` event: tool ``part.tool``, arguments ``part.state.input``,
  id ``part.callID``. The event is written once, when the call has finished (it
  carries the call and its outcome); an id seen again is not counted again.
* Results: the same event's ``part.state``: ``{"status", "output", "error"}``.
* Usage: a ``step_finish`` event ends one model call (a step) with its ``tokens``
  (``input`` without the cache, ``output``, ``reasoning``, ``cache.read``,
  ``cache.write``). The step's record is yielded at its ``step_start`` (before its
  calls) and filled in at ``step_finish`` (``records.Usage``); a step without a
  start is a record of its own.
* ``text``, ``reasoning`` and ``error`` events hold no call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import DEFAULT_SESSION, BadRecord, Record, ToolCall, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import RecentIds, parse_arguments, tokens
from ._sniff import UNICODE_ESCAPE, head_objects, mentions
from ._stream_lines import event_lines

INFO = FormatInfo(
    name="opencode-run",
    description="OpenCode headless output (opencode run --format json)",
    line_based=True,
    patterns=("*.jsonl", "*.json"),
)

_EVENTS = ("step_start", "tool_use", "step_finish", "text", "reasoning")  # ==, never hash
_PREFIX = re.compile(rb'^\s*\{"type":"[a-z_]+","timestamp":\d+,"sessionID":"')
_KEY_WORDS = (b'"sessionID"', UNICODE_ESCAPE)


def _looks_like_run(obj: dict[str, Any]) -> bool:
    """An event with its ``sessionID`` and a ``part`` of a known event type."""
    if obj.get("sessionID").__class__ is not str or obj.get("part").__class__ is not dict:
        return False
    return obj.get("type") in _EVENTS


def sniff(head: bytes) -> bool:
    """An event line: a known ``type`` with ``sessionID`` and ``part``."""
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if _looks_like_run(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


class _Reader:
    """The calls counted and the step whose usage awaits ``step_finish``, per session."""

    def __init__(self, results: bool) -> None:
        self.results = results
        self.seen = RecentIds()
        self.open: dict[str, Usage] = {}

    def line(self, obj: Any, number: int) -> Iterator[Record]:
        if obj.__class__ is not dict:
            yield BadRecord("not a JSON object", number)
            return
        kind = obj.get("type")
        if kind not in ("tool_use", "step_start", "step_finish"):
            return
        session = obj.get("sessionID")
        if session is None:
            session = DEFAULT_SESSION
        elif session.__class__ is not str:
            yield BadRecord("sessionID is not a string", number)
            return
        part = obj.get("part")
        if part.__class__ is not dict:
            yield BadRecord(f"{kind} without a part object", number, "$.part")
            return
        if kind == "tool_use":
            yield from self.call(part, session, number)
        elif kind == "step_start":
            usage = Usage(session, None, None, line=number, path="$.part")
            self.open[session] = usage
            yield usage
        else:
            yield from self.step_finish(part, session, number)

    def call(self, part: dict[str, Any], session: str, number: int) -> Iterator[Record]:
        name, call_id = part.get("tool"), part.get("callID")
        if name.__class__ is not str or not name:
            yield BadRecord("tool_use without a string part.tool", number, "$.part")
            return
        if call_id is not None and call_id.__class__ is not str:
            yield BadRecord("tool_use part.callID is not a string", number, "$.part")
            return
        if call_id is not None and self.seen.seen((session, call_id)):
            return
        state = part.get("state")
        state = state if state.__class__ is dict else {}
        args, unparsed = parse_arguments(state.get("input"))
        yield ToolCall(name, args, session, call_id, number, "$.part", unparsed)
        if self.results and call_id is not None and state.get("status") is not None:
            result = {k: state.get(k) for k in ("status", "output", "error")}
            yield ToolResult(session, call_id, result, None, number, "$.part.state")

    def step_finish(self, part: dict[str, Any], session: str, number: int) -> Iterator[Record]:
        counts = part.get("tokens")
        usage = self.open.pop(session, None)
        if counts.__class__ is not dict:
            return
        if usage is None:
            usage = Usage(session, None, None)
            yield usage
        usage.line, usage.path = number, "$.part.tokens"
        usage.input_tokens = tokens(counts.get("input"))
        usage.output_tokens = tokens(counts.get("output"))
        usage.reasoning_tokens = tokens(counts.get("reasoning"))
        cache = counts.get("cache")
        if cache.__class__ is dict:
            usage.cache_read_tokens = tokens(cache.get("read"))
            usage.cache_write_tokens = tokens(cache.get("write"))


# A line that may hold a call, its result or a step's usage contains one of these.
_NEEDED = (b'"tool_use"', b'"step_start"', b'"step_finish"')


def parse(source: Source) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read."""
    return event_lines(source, _NEEDED, _Reader(source.results).line)
