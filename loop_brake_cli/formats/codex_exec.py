"""OpenAI Codex CLI headless output: ``codex exec --json``.

One JSON object per line on stdout as the agent works (a different format from the
rollout Codex keeps in ``~/.codex/sessions``, format ``codex``)::

    {"type":"thread.started","thread_id":"019a3fe0-82fb-7e31-8e96-1d5c0544fd8a"}
    {"type":"turn.started"}
    {"type":"item.started","item":{"id":"item_4","type":"command_execution",
      "command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}
    {"type":"item.completed","item":{"id":"item_4","type":"command_execution",
      "command":"bash -lc ls","aggregated_output":"…","exit_code":0,"status":"completed"}}
    {"type":"turn.completed","usage":{"input_tokens":177136,"cached_input_tokens":163840,
      "output_tokens":2836}}

* The session is the ``thread_id`` of ``thread.started`` (``default`` before one).
  ``codex exec resume`` starts the same thread again, and numbers its items from
  ``item_0`` again: a call of a thread's second run has the id ``item_4#2``.
* A call is an item of one of these types, counted once although it appears in
  ``item.started``, ``item.updated`` and ``item.completed``:

  | item type | tool | arguments |
  |---|---|---|
  | ``command_execution`` | ``command_execution`` | ``{"command": …}`` |
  | ``mcp_tool_call`` | ``mcp__<server>__<tool>`` | the item's ``arguments`` (``{}`` when null) |
  | ``web_search`` | ``web_search`` | ``{"query": …}``, and the ``action`` where recorded |
  | ``file_change`` | ``file_change`` | ``{"changes": …, "item": <item id>}`` |

  A command or MCP call is read from its first event (``item.started``: it holds
  the whole call); a web search and a file change from ``item.completed`` (newer
  versions start a search with an empty query and fill it in at the end). A file
  change records the paths and kinds, not the patch, so two edits of one file
  cannot be told apart: its item id is part of its arguments, and a file change
  never repeats another. ``reasoning``, ``agent_message``, ``todo_list`` (the plan
  as it stands) and ``error`` items are not calls.
* Results: a call's ``item.completed`` is its ``ToolResult``, paired by item id:
  ``{"output", "exit_code"}`` of a command (``aggregated_output``), ``{"result",
  "error"}`` of an MCP call, ``{"status"}`` of a file change; a search's is not
  recorded. It is an error (``ToolResult.error``, for a policy's
  ``[same_error]``) where the item records a failure: ``"status": "failed"``, a
  command's ``exit_code`` other than 0, an MCP call's ``error`` that is not null;
  never read from the output's text.
* Usage: ``turn.completed`` gives the turn's ``usage`` (``input_tokens`` including
  ``cached_input_tokens``, ``output_tokens``, ``reasoning_output_tokens`` where
  written). A turn here is the whole answer to one prompt, many model calls: its
  usage is one ``Usage`` yielded before the turn's first call and filled in when
  the turn completes (``records.Usage``), or at ``turn.completed`` for a turn
  without calls. No model name is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import DEFAULT_SESSION, BadRecord, Record, ToolCall, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import RecentIds, fill_codex_usage
from ._sniff import UNICODE_ESCAPE, head_objects, mentions
from ._stream_lines import event_lines

INFO = FormatInfo(
    name="codex-exec",
    description="OpenAI Codex CLI headless output (codex exec --json)",
    line_based=True,
    patterns=("*.jsonl", "*.json"),
)

_ITEM_EVENTS = ("item.started", "item.updated", "item.completed")  # tuples: ==, never hash
_CALL_ITEMS = ("command_execution", "mcp_tool_call", "web_search", "file_change")
_AT_START = ("command_execution", "mcp_tool_call")
_OTHER_ITEMS = ("reasoning", "agent_message", "todo_list", "error", "collab_tool_call")
_PREFIX = re.compile(rb'^\s*\{"type":"(thread\.started|turn\.started|item\.(started|completed))"')
_KEY_WORDS = (b'"thread.started"', b'"item.', b'"turn.', UNICODE_ESCAPE)


def _looks_like_exec(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind == "thread.started":
        return obj.get("thread_id").__class__ is str
    if kind in _ITEM_EVENTS:
        item = obj.get("item")
        return item.__class__ is dict and item.get("type") in _CALL_ITEMS + _OTHER_ITEMS
    if kind == "turn.completed":
        return obj.get("usage").__class__ is dict
    return False


def sniff(head: bytes) -> bool:
    """A ``thread.started`` line, an item event of a known item type, or a
    ``turn.completed`` with its usage."""
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if _looks_like_exec(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


class _Reader:
    """What the stream needs between lines: the thread, its runs, the items counted and
    the turn whose usage awaits ``turn.completed``."""

    def __init__(self, results: bool) -> None:
        self.results = results
        self.session = DEFAULT_SESSION
        self.runs: dict[str, int] = {}  # thread -> how many times it started
        self.suffix = ""
        self.seen = RecentIds()
        self.answered = RecentIds()
        self.open: Usage | None = None  # the current turn's usage, yielded, not yet filled

    def line(self, obj: Any, number: int) -> Iterator[Record]:
        if obj.__class__ is not dict:
            yield BadRecord("not a JSON object", number)
            return
        kind = obj.get("type")
        if kind in _ITEM_EVENTS:
            yield from self.item(kind, obj.get("item"), number)
        elif kind == "thread.started":
            thread = obj.get("thread_id")
            if thread.__class__ is str:
                self.thread(thread)
            else:
                yield BadRecord("thread.started without a string thread_id", number)
        elif kind == "turn.started":
            self.open = None
        elif kind == "turn.completed":
            yield from self.turn_completed(obj.get("usage"), number)

    def thread(self, thread: str) -> None:
        runs = self.runs.get(thread, 0) + 1
        self.runs[thread] = runs
        self.session = thread
        self.suffix = "" if runs == 1 else f"#{runs}"
        self.seen = RecentIds()
        self.answered = RecentIds()
        self.open = None

    def item(self, event: str, item: Any, number: int) -> Iterator[Record]:
        if item.__class__ is not dict:
            yield BadRecord(f"{event} without an item object", number, "$.item")
            return
        kind = item.get("type")
        if kind not in _CALL_ITEMS:
            return
        item_id = item.get("id")
        if item_id.__class__ is not str or not item_id:
            yield BadRecord(f"{kind} item without a string id", number, "$.item")
            return
        completed = event == "item.completed"
        if (completed or kind in _AT_START) and not self.seen.seen(item_id):
            call = _call(kind, item, item_id, self.session, item_id + self.suffix, number)
            if call.__class__ is BadRecord:
                yield call
                return
            if self.open is None:
                self.open = Usage(self.session, None, None, line=number, path="$.item")
                yield self.open
            yield call
        if completed and self.results and not self.answered.seen(item_id):
            result = _result(kind, item)
            if result is not None:
                call_id = item_id + self.suffix
                yield ToolResult(
                    self.session, call_id, result, None, number, "$.item", _failed(kind, item)
                )

    def turn_completed(self, usage: Any, number: int) -> Iterator[Record]:
        record = self.open
        self.open = None
        if usage.__class__ is not dict:
            return
        if record is None:
            record = Usage(self.session, None, None)
            yield record
        record.line = number
        record.path = "$.usage"
        fill_codex_usage(record, usage)


def _call(
    kind: str, item: dict[str, Any], item_id: str, session: str, call_id: str, number: int
) -> ToolCall | BadRecord:
    """The ToolCall of a call item, or a located BadRecord."""
    if kind == "command_execution":
        command = item.get("command")
        if command.__class__ is not str:
            return BadRecord("command_execution without a string command", number, "$.item")
        return ToolCall(kind, {"command": command}, session, call_id, number, "$.item")
    if kind == "mcp_tool_call":
        server, tool = item.get("server"), item.get("tool")
        if server.__class__ is not str or tool.__class__ is not str or not tool:
            return BadRecord("mcp_tool_call without a string server and tool", number, "$.item")
        args = item.get("arguments")
        return ToolCall(
            f"mcp__{server}__{tool}", {} if args is None else args, session, call_id, number,
            "$.item",
        )  # fmt: skip
    if kind == "web_search":
        search: dict[str, Any] = {"query": item.get("query")}
        if "action" in item:
            search["action"] = item["action"]
        return ToolCall(kind, search, session, call_id, number, "$.item")
    changes = {"changes": item.get("changes"), "item": item_id}
    return ToolCall(kind, changes, session, call_id, number, "$.item")


def _result(kind: str, item: dict[str, Any]) -> Any:
    """What a completed call item returned (never its id, which differs for every call)."""
    if kind == "command_execution":
        return {"output": item.get("aggregated_output"), "exit_code": item.get("exit_code")}
    if kind == "mcp_tool_call":
        return {"result": item.get("result"), "error": item.get("error")}
    if kind == "file_change":
        return {"status": item.get("status")}
    return None


def _failed(kind: str, item: dict[str, Any]) -> bool | None:
    """True when a completed item records that its call failed (module docstring);
    None otherwise (no error)."""
    if item.get("status") == "failed":
        return True
    code = item.get("exit_code")
    if kind == "command_execution" and code.__class__ is int and code != 0:
        return True
    if kind == "mcp_tool_call" and item.get("error") is not None:
        return True
    return None


# A line that may hold a call, a thread or a turn's usage contains one of these.
_NEEDED = (b'"item.', b'"thread.started"', b'"turn.')


def parse(source: Source) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read."""
    return event_lines(source, _NEEDED, _Reader(source.results).line)
