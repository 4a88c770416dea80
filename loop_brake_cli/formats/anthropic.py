"""Anthropic Messages: a message array, ``{"messages": [...]}`` (a request), responses, or JSONL.

A tool call is a ``tool_use`` content block of an assistant message::

    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01…",
      "name": "retrieve_entity_info", "input": {"name": "Alice"}}]}

* ``input`` is an object (a JSON string there is parsed, as elsewhere).
* Server-side blocks are counted under their own name: ``server_tool_use``
  (for example ``web_search``, ``tool_search_tool_bm25``) and ``mcp_tool_use``
  (a remote MCP connector call, under the MCP tool's ``name``). Decision: they
  are tool calls the model issued, a model repeating one is as stuck as one
  repeating a client tool, and the real samples' call counts include them.
  A live harness sees them only after the response, so treat their denials as
  a diagnosis rather than something a client-side brake could have stopped.
  Their result blocks (``*_tool_result``) are not calls.
* A response object (``{"type": "message", "role": "assistant", "content": [...]}``)
  is read like an assistant message; user messages hold only results.
* The session is the file. A call whose id, name and input equal an earlier
  one (a request log repeating the history) is emitted once.
* Results: a ``tool_result`` block (in a user message) is a ``ToolResult`` of
  ``{"content", "isError"}`` (the block's ``content`` and ``is_error``; its id,
  different for every call, left out), paired by ``tool_use_id`` (once per id:
  requests repeat the conversation); so are the
  server-side ``*_tool_result`` blocks (``web_search_tool_result``,
  ``mcp_tool_result``…) that answer a ``server_tool_use`` or ``mcp_tool_use``.
* User turns (only when the reader asks: ``Source.user_turns``, a policy's
  ``reset_on_user_turn``): a ``user`` message whose content is a non-empty
  string or has a text or image block and no ``*tool_result`` block (a user
  message carrying results is the client sending them back, not the user
  speaking); in a log of requests, only past the furthest one already reported
  (``CallLedger.spoke``). Its content is never read.
* Usage: a response object's ``usage`` (``input_tokens``, ``output_tokens``,
  ``cache_read_input_tokens``, ``cache_creation_input_tokens``; thinking is
  counted in the output), reported before the response's calls, the turn
  named by its ``id``. A message list (a request) records none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import CallLedger, file_calls, json_path, make_call, never_raises, tokens
from ._sniff import foreign, head_text

INFO = FormatInfo(
    name="anthropic",
    description="Anthropic Messages API (message array, {messages} request, responses, JSONL)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_BLOCK = re.compile(
    rb'"(?<!\\")type"\s*:\s*"(tool_use|tool_result|server_tool_use|mcp_tool_use'
    rb'|redacted_thinking|thinking)"'
)
_MESSAGE = re.compile(rb'"(?<!\\")type"\s*:\s*"message"')
_STOP_REASON = re.compile(rb'"(?<!\\")stop_reason"\s*:')


def sniff(head: bytes) -> bool:
    """Anthropic content blocks (or a response object), and no other format's markers.

    Both need a ``"type"`` key: a bytes search for it rules out most other formats'
    heads before any regex."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or b'"type"' not in body or foreign(body):
        return False
    return bool(_BLOCK.search(body) or (_MESSAGE.search(body) and _STOP_REASON.search(body)))


def content_calls(
    content: Any,
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
    calls: bool = True,
) -> Iterator[Record]:
    """The call and result blocks of one ``content`` list located at ``parts`` (results
    only when not ``calls``: a user message's)."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        yield BadRecord("content is not a list or a string", line, json_path(*parts))
        return
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if isinstance(kind, str) and kind.endswith("tool_result"):
            call_id = block.get("tool_use_id")
            if isinstance(call_id, str) and call_id and not ledger.answered(call_id):
                result = {"content": block.get("content"), "isError": block.get("is_error") is True}
                yield ToolResult(session, call_id, result, None, line, json_path(*parts, index))
            continue
        if not calls or kind not in CALL_BLOCKS:
            continue
        record = make_call(
            ledger, block.get("name"), block.get("input"), session, block.get("id"), line,
            json_path(*parts, index),
        )  # fmt: skip
        if record is not None:
            yield record


def message_calls(
    message: Any, ledger: CallLedger, session: str, line: int | None, parts: tuple[str | int, ...]
) -> Iterator[Record]:
    """The usage, calls and results of one message or response object."""
    if not isinstance(message, dict):
        yield BadRecord("message is not an object", line, json_path(*parts))
        return
    role = message.get("role")
    if role == "user" and ledger.user_turns and _spoken(message.get("content")):
        if ledger.spoke(parts):
            yield UserTurn(session, line, json_path(*parts))
        return
    if role == "user":  # results only: a user's tool_use block is no call
        for record in content_calls(
            message.get("content"), ledger, session, line, (*parts, "content")
        ):
            if record.__class__ is ToolResult:
                yield record
        return
    if role is not None and role != "assistant":
        return
    usage = message.get("usage")
    if isinstance(usage, dict):
        yield response_usage(message, usage, session, line, parts)
    yield from content_calls(message.get("content"), ledger, session, line, (*parts, "content"))


def _spoken(content: Any) -> bool:
    """A user message's content that is the user speaking: text or an image, no results."""
    if isinstance(content, str):
        return content != ""
    if not isinstance(content, list):
        return False
    kinds = {block.get("type") for block in content if isinstance(block, dict)}
    if any(isinstance(kind, str) and kind.endswith("tool_result") for kind in kinds):
        return False
    return bool(kinds & {"text", "image"})


def response_usage(
    response: dict[str, Any],
    usage: dict[str, Any],
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Usage:
    """A Messages response's ``usage`` as one turn (the response ``id`` names it)."""
    turn, model = response.get("id"), response.get("model")
    return Usage(
        session,
        turn if isinstance(turn, str) and turn else None,
        model if isinstance(model, str) and model else None,
        tokens(usage.get("input_tokens")),
        tokens(usage.get("output_tokens")),
        tokens(usage.get("cache_read_input_tokens")),
        tokens(usage.get("cache_creation_input_tokens")),
        None,  # thinking is part of output_tokens: no separate count
        line,
        json_path(*parts, "usage"),
    )


def value_calls(value: Any, ledger: CallLedger, session: str, line: int | None) -> Iterator[Record]:
    """The calls of one JSON value: messages, a request, a response or one message."""
    if isinstance(value, list):
        for index, message in enumerate(value):
            yield from message_calls(message, ledger, session, line, (index,))
    elif isinstance(value, dict) and isinstance(value.get("messages"), list):
        for index, message in enumerate(value["messages"]):
            yield from message_calls(message, ledger, session, line, ("messages", index))
    elif isinstance(value, dict) and ("content" in value or "role" in value):
        yield from message_calls(value, ledger, session, line, ())
    else:
        yield BadRecord("not a message, a message list or an object with messages", line)


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool_use (and server-side call block), result and usage of the file, in order."""
    yield from file_calls(source, value_calls)
