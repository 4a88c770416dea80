"""Gemini CLI headless output: ``gemini --output-format stream-json``.

One JSON object per line on stdout as the agent works (a different format from the
chat recordings Gemini CLI keeps in ``~/.gemini/tmp``, format ``gemini-cli``). The
shapes are those of Gemini CLI's headless-mode documentation
(google-gemini/gemini-cli ``docs/cli/headless.md``, "Streaming JSON output")::

    {"type":"init","timestamp":"…","session_id":"26c6…","model":"auto-gemini-2.5"}
    {"type":"message","timestamp":"…","role":"user","content":"…"}
    {"type":"tool_use","timestamp":"…","tool_name":"list_directory",
     "tool_id":"list_directory-1766445145513-343f3acdf059e","parameters":{"dir_path":"."}}
    {"type":"tool_result","timestamp":"…","tool_id":"list_directory-…","status":"success",
     "output":"Listed 13 item(s)."}
    {"type":"result","timestamp":"…","status":"success","stats":{"total_tokens":13374,
     "input_tokens":12821,"output_tokens":186,"cached":9598,"input":3223,"tool_calls":1}}

* The session is the ``session_id`` of ``init`` (``default`` before one).
* A call is a ``tool_use`` line: tool ``tool_name``, arguments ``parameters``, id
  ``tool_id``; a ``tool_id`` seen before is not counted again.
* Results: a ``tool_result`` line, paired by ``tool_id``: ``{"status", "output",
  "error"}`` as recorded.
* Usage: the stream gives the run's totals only, in the ``stats`` of the final
  ``result`` line (``input_tokens`` includes ``cached``; ``input`` is the part not
  cached). The run is one ``Usage``, yielded before its first call and filled in by
  ``result`` (``records.Usage``): the session's total is right, and since the one
  turn produced every call, no waste can be attributed to a turn.
* ``message`` (text, in ``delta`` pieces) and ``error`` lines hold no call.
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
    name="gemini-stream",
    description="Gemini CLI headless output (gemini --output-format stream-json)",
    line_based=True,
    patterns=("*.jsonl", "*.json"),
)

_PREFIX = re.compile(rb'^\s*\{"type":"init","timestamp":"[^"]*","session_id":"')
_KEY_WORDS = (b'"init"', b'"tool_id"', UNICODE_ESCAPE)


def _looks_like_stream(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind == "init":
        return obj.get("session_id").__class__ is str and "model" in obj
    if kind == "tool_use":
        return obj.get("tool_id").__class__ is str and "tool_name" in obj and "parameters" in obj
    if kind == "tool_result":
        return obj.get("tool_id").__class__ is str and "status" in obj and "timestamp" in obj
    return False


def sniff(head: bytes) -> bool:
    """An ``init`` line with its ``session_id`` and model, or a ``tool_use`` or
    ``tool_result`` line with its ``tool_id``."""
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if _looks_like_stream(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


class _Reader:
    """The session, the model, the calls counted and the run's usage awaiting ``result``."""

    def __init__(self, results: bool) -> None:
        self.results = results
        self.session = DEFAULT_SESSION
        self.model: str | None = None
        self.seen = RecentIds()
        self.open: Usage | None = None

    def line(self, obj: Any, number: int) -> Iterator[Record]:
        if obj.__class__ is not dict:
            yield BadRecord("not a JSON object", number)
            return
        kind = obj.get("type")
        if kind == "tool_use":
            yield from self.call(obj, number)
        elif kind == "tool_result":
            call_id = obj.get("tool_id")
            if self.results and call_id.__class__ is str:
                result = {k: obj.get(k) for k in ("status", "output", "error")}
                yield ToolResult(self.session, call_id, result, None, number, None)
        elif kind == "init":
            session, model = obj.get("session_id"), obj.get("model")
            if session.__class__ is not str or not session:
                yield BadRecord("init without a string session_id", number)
                return
            self.session, self.open = session, None
            self.model = model if model.__class__ is str else None
        elif kind == "result":
            yield from self.result(obj.get("stats"), number)

    def call(self, obj: dict[str, Any], number: int) -> Iterator[Record]:
        name, call_id = obj.get("tool_name"), obj.get("tool_id")
        if name.__class__ is not str or not name:
            yield BadRecord("tool_use without a string tool_name", number)
            return
        if call_id is not None and call_id.__class__ is not str:
            yield BadRecord("tool_use tool_id is not a string", number)
            return
        if call_id is not None and self.seen.seen(call_id):
            return
        args, unparsed = parse_arguments(obj.get("parameters"))
        if self.open is None:
            self.open = Usage(self.session, None, self.model, line=number)
            yield self.open
        yield ToolCall(name, args, self.session, call_id, number, None, unparsed)

    def result(self, stats: Any, number: int) -> Iterator[Record]:
        record, self.open = self.open, None
        if stats.__class__ is not dict:
            return
        if record is None:
            record = Usage(self.session, None, self.model)
            yield record
        record.line, record.path = number, "$.stats"
        given, cached = tokens(stats.get("input_tokens")), tokens(stats.get("cached"))
        fresh = tokens(stats.get("input"))
        if fresh is None and given is not None:
            fresh = given - cached if cached is not None and cached <= given else given
        record.input_tokens = fresh
        record.cache_read_tokens = cached
        record.output_tokens = tokens(stats.get("output_tokens"))


# A line that may hold a call, a result, the session or the run's usage contains one of these.
_NEEDED = (b'"tool_use"', b'"tool_result"', b'"init"', b'"result"')


def parse(source: Source) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read."""
    return event_lines(source, _NEEDED, _Reader(source.results).line)
