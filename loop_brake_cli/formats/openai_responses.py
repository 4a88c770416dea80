"""OpenAI Responses API items: an input array, ``{"input": [...]}``, responses' ``output``.

A tool call is an item of ``type: "function_call"``; its call id is
``call_id`` (``id``, ``fc_…``, is the item's own id)::

    {"type": "function_call", "call_id": "call_Yfw…", "name": "get_capital",
     "arguments": "{\\"country\\":\\"PotatoLand\\"}"}

* ``arguments`` is a JSON string, parsed before hashing (``""`` is ``{}``).
* Also counted: ``custom_tool_call`` (``input`` hashed as the raw string) and
  ``mcp_call`` (a remote MCP call the model asked for, under its own ``name``,
  like the anthropic adapter's ``mcp_tool_use``). Hosted tools without a name
  and arguments (``web_search_call``, ``file_search_call``…) are not counted.
* JSON lines may hold items, response objects, request bodies, or streaming
  events: ``response.output_item.done`` carries the finished item (the
  ``…added`` event, with empty arguments, is not counted). A request's
  ``input`` repeats earlier calls: a call whose ``call_id``, name and arguments
  equal an earlier one is emitted once.
* The session is the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..reader import Source
from ..records import BadRecord, Record
from . import FormatInfo
from ._common import CallLedger, file_calls, json_path, make_call, never_raises
from ._sniff import foreign, head_text

INFO = FormatInfo(
    name="openai-responses",
    description="OpenAI Responses API items (input array, {input}, {output} responses)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

_ITEM = re.compile(
    rb'(?<!\\)"type"\s*:\s*"(function_call|function_call_output|custom_tool_call|mcp_call'
    rb'|response\.output_item\.done|response\.completed)"'
)
_RESPONSE = re.compile(rb'(?<!\\)"object"\s*:\s*"response"')
_STREAM_DONE = ("response.completed", "response.done", "response.incomplete", "response.failed")


def sniff(head: bytes) -> bool:
    """A Responses item type or a response object, and no other format's markers."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or foreign(body):
        return False
    return bool(_ITEM.search(body) or _RESPONSE.search(body))


def item_call(
    item: Any, ledger: CallLedger, session: str, line: int | None, parts: tuple[str | int, ...]
) -> Record | None:
    """One Responses item as a call, or None for items that are not calls (or repeats)."""
    path = json_path(*parts)
    if not isinstance(item, dict):
        return BadRecord("item is not an object", line, path)
    kind = item.get("type")
    if kind == "function_call":
        return make_call(
            ledger, item.get("name"), item.get("arguments"), session, item.get("call_id"),
            line, path,
        )  # fmt: skip
    if kind == "custom_tool_call":
        return make_call(
            ledger, item.get("name"), item.get("input"), session, item.get("call_id"), line,
            path, raw_string=True,
        )  # fmt: skip
    if kind == "mcp_call":
        return make_call(
            ledger, item.get("name"), item.get("arguments"), session, item.get("id"), line, path
        )
    return None


def items_calls(
    items: list[Any],
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The calls of a list of items located at ``parts``."""
    for index, item in enumerate(items):
        record = item_call(item, ledger, session, line, (*parts, index))
        if record is not None:
            yield record


def value_calls(value: Any, ledger: CallLedger, session: str, line: int | None) -> Iterator[Record]:
    """The calls of one JSON value: a list of items, an object holding them, or an event."""
    if isinstance(value, list):
        yield from items_calls(value, ledger, session, line, ())
        return
    if not isinstance(value, dict):
        yield BadRecord("not a Responses item, item list, request or response", line)
        return
    kind = value.get("type")
    if kind == "response.output_item.done":
        record = item_call(value.get("item"), ledger, session, line, ("item",))
        if record is not None:
            yield record
        return
    if kind in _STREAM_DONE and isinstance(value.get("response"), dict):
        output = value["response"].get("output")
        if isinstance(output, list):
            yield from items_calls(output, ledger, session, line, ("response", "output"))
        return
    found = False
    for key in ("input", "output"):
        if isinstance(value.get(key), list):
            found = True
            yield from items_calls(value[key], ledger, session, line, (key,))
    if found or isinstance(kind, str):
        if not found:
            record = item_call(value, ledger, session, line, ())
            if record is not None:
                yield record
        return
    if "input" in value or value.get("object") == "response":
        return  # a request with a plain-string input, or a response without output
    yield BadRecord("not a Responses item, item list, request or response", line)


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every function call of the file, in order, each once."""
    yield from file_calls(source, value_calls)
