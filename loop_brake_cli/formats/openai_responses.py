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
* Results: ``function_call_output`` and ``custom_tool_call_output`` items are a
  ``ToolResult`` of their ``output`` (as recorded), paired by ``call_id`` (once
  per id: a request's ``input`` repeats the conversation); an
  ``mcp_call`` item carries its own result, ``{"output", "error"}``, paired by
  its ``id``. Errors (``ToolResult.error``, for a policy's ``[same_error]``):
  an ``mcp_call`` whose ``error`` is not null; the API records no failure of a
  ``function_call_output`` (its ``output`` is whatever the caller sent back),
  so those are never errors.
* Usage: a response object's ``usage`` (``input_tokens`` include
  ``input_tokens_details.cached_tokens``: input is the rest, the cached part
  cache reads; ``output_tokens_details.reasoning_tokens`` is a part of the
  output), reported before the response's items, the turn named by the
  response ``id``. In a stream the usage arrives last, in ``response.completed``,
  after the ``response.output_item.done`` events of the calls: the
  ``response.created`` event, which comes first, opens the turn with no figures
  and ``response.completed`` fills that same record (``_common.TurnUsage``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import (
    CallLedger,
    TurnUsage,
    file_calls,
    json_path,
    make_call,
    never_raises,
    split_input,
    tokens,
)
from ._sniff import foreign, head_text, mentions
from .openai_chat import response_turn

INFO = FormatInfo(
    name="openai-responses",
    description="OpenAI Responses API items (input array, {input}, {output} responses)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_ITEM = re.compile(
    rb'"(?<!\\")type"\s*:\s*"(function_call|function_call_output|custom_tool_call|mcp_call'
    rb'|response\.output_item\.done|response\.completed)"'
)
_RESPONSE = re.compile(rb'"(?<!\\")object"\s*:\s*"response"')
_KEYS = (b'"type"', b'"object"')  # one of them, or neither pattern can match
_STREAM_DONE = ("response.completed", "response.done", "response.incomplete", "response.failed")
_STREAM_START = ("response.created", "response.in_progress")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def sniff(head: bytes) -> bool:
    """A Responses item type or a response object, and no other format's markers."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or not mentions(body, _KEYS) or foreign(body):
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
    if kind in _OUTPUTS:
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id and not ledger.answered(call_id):
            return ToolResult(session, call_id, item.get("output"), None, line, path)
    return None


def _mcp_result(item: Any, session: str, line: int | None, path: str) -> Record | None:
    """An ``mcp_call`` item's own result, when it has one."""
    if not isinstance(item, dict) or item.get("type") != "mcp_call":
        return None
    call_id = item.get("id")
    if not (isinstance(call_id, str) and call_id) or (
        item.get("output") is None and item.get("error") is None
    ):
        return None
    result = {"output": item.get("output"), "error": item.get("error")}
    error = True if item.get("error") is not None else None  # the item's own failure field
    return ToolResult(session, call_id, result, None, line, path, error)


def response_usage(
    response: dict[str, Any],
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
    opening: bool = False,
) -> Usage | None:
    """A response object's ``usage`` as one turn, or None when it records none; with
    ``opening`` (a stream's first event) the turn without figures yet, if it has an id."""
    record = response_turn(response, session, line, parts)
    usage = response.get("usage")
    if isinstance(usage, dict):
        details = usage.get("input_tokens_details")
        cached = tokens(details.get("cached_tokens")) if isinstance(details, dict) else None
        split_input(record, tokens(usage.get("input_tokens")), cached)
        record.output_tokens = tokens(usage.get("output_tokens"))
        details = usage.get("output_tokens_details")
        if isinstance(details, dict):
            record.reasoning_tokens = tokens(details.get("reasoning_tokens"))
    elif record.turn is None or not opening:
        return None
    return record


def _turn(
    response: dict[str, Any],
    turns: TurnUsage,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
    opening: bool = False,
) -> Iterator[Record]:
    """A response's turn, the first time its id is seen (later sightings fill it in)."""
    usage = response_usage(response, session, line, parts, opening)
    if usage is not None and (usage.turn is None or turns.first((session, usage.turn), usage)):
        yield usage


def items_calls(
    items: list[Any],
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The calls and results of a list of items located at ``parts``."""
    for index, item in enumerate(items):
        record = item_call(item, ledger, session, line, (*parts, index))
        if record is not None:
            yield record
            result = _mcp_result(item, session, line, json_path(*parts, index))
            if result is not None:
                yield result


def value_calls(
    value: Any,
    ledger: CallLedger,
    session: str,
    line: int | None,
    turns: TurnUsage | None = None,
) -> Iterator[Record]:
    """The records of one JSON value: a list of items, an object holding them, or an event.
    ``turns``: the responses already reported in this file."""
    if turns is None:
        turns = TurnUsage()
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
            result = _mcp_result(value.get("item"), session, line, "$.item")
            if result is not None:
                yield result
        return
    if kind in _STREAM_START and isinstance(value.get("response"), dict):
        yield from _turn(value["response"], turns, session, line, ("response",), True)
        return
    if kind in _STREAM_DONE and isinstance(value.get("response"), dict):
        yield from _turn(value["response"], turns, session, line, ("response",))
        output = value["response"].get("output")
        if isinstance(output, list):
            yield from items_calls(output, ledger, session, line, ("response", "output"))
        return
    if value.get("object") == "response":
        yield from _turn(value, turns, session, line, ())
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
    """Every function call of the file, in order, each once, with results and usage."""
    turns = TurnUsage()
    yield from file_calls(
        source,
        lambda value, ledger, session, line: value_calls(value, ledger, session, line, turns),
    )
