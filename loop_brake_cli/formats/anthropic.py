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
    name="anthropic",
    description="Anthropic Messages API (message array, {messages} request, responses, JSONL)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
_BLOCK = re.compile(
    rb'(?<!\\)"type"\s*:\s*"(tool_use|tool_result|server_tool_use|mcp_tool_use'
    rb'|redacted_thinking|thinking)"'
)
_MESSAGE = re.compile(rb'(?<!\\)"type"\s*:\s*"message"')
_STOP_REASON = re.compile(rb'(?<!\\)"stop_reason"\s*:')


def sniff(head: bytes) -> bool:
    """Anthropic content blocks (or a response object), and no other format's markers."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or foreign(body):
        return False
    return bool(_BLOCK.search(body) or (_MESSAGE.search(body) and _STOP_REASON.search(body)))


def content_calls(
    content: Any,
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The call blocks of one ``content`` list located at ``parts``."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        yield BadRecord("content is not a list or a string", line, json_path(*parts))
        return
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") not in CALL_BLOCKS:
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
    """The calls of one message or response object."""
    if not isinstance(message, dict):
        yield BadRecord("message is not an object", line, json_path(*parts))
        return
    if message.get("role") not in (None, "assistant"):
        return
    yield from content_calls(message.get("content"), ledger, session, line, (*parts, "content"))


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
    """Every tool_use (and server-side call block) of the file, in order."""
    yield from file_calls(source, value_calls)
