"""OpenAI Chat Completions message lists: a JSON array, ``{"messages": [...]}``, or JSONL.

A tool call is an entry of an assistant message's ``tool_calls``::

    {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_capital", "arguments": "{\\"country\\":\\"France\\"}"}}]}

* ``arguments`` is a JSON string: parsed before hashing; ``""`` is ``{}``; a
  string that does not parse is hashed as the string (and flagged unparseable).
* An ``id`` of ``""`` (Gemini's OpenAI-compatible endpoint) counts as absent.
* Also read: a completion response (``choices[].message``), a logged request
  ``{"messages": [...], "response": {...}}`` (both parts), the legacy
  ``function_call`` of an assistant message, and ``type: "custom"`` tools
  (``custom.input`` hashed as the raw string it is).
* The session is the file: the format has no session id.
* A call whose id, name and arguments all equal an earlier call's in the same
  file is the same call recorded twice and is emitted once; an id reused for a
  different call is dropped from that call (it names nothing), the call is kept.

The Chat Completions ``tool_calls`` shape is shared by OpenHands completion
logs, SWE-agent trajectories and recorded API responses, so this module also
holds the small readers those adapters reuse (``read_values``, ``CallLedger``,
``message_calls``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from ..canonical import JSONInputError, call_digest, parse_json
from ..events import BadRecord, Record, ToolCall
from ..reader import TOO_LONG, Source, UnreadableInputError
from . import FormatInfo
from ._common import json_path, parse_arguments

INFO = FormatInfo(
    name="openai-chat",
    description="OpenAI Chat Completions messages (array, {messages}, or JSONL)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"

# A key written by JSON itself, not one quoted inside a string value (those are \"escaped\").
_TOOL_CALLS = re.compile(rb'(?<!\\)"tool_calls"\s*:')
_ROLE = re.compile(rb'(?<!\\)"role"\s*:\s*"(assistant|user|system|tool|developer|function)"')
_ANTHROPIC_BLOCK = re.compile(
    rb'(?<!\\)"type"\s*:\s*"(tool_use|tool_result|server_tool_use|mcp_tool_use|thinking)"'
)
# Markers of formats whose lines also hold chat-like messages but are read by other adapters.
_FOREIGN = re.compile(
    rb'(?<!\\)"(parentUuid|isSidechain|jsonrpc|resourceSpans|fncall_messages|fncall_response'
    rb'|tool_call_metadata|toolCalls|projectHash)"\s*:'
    rb'|(?<!\\)"type"\s*:\s*"(session_meta|response_item|event_msg|turn_context)"'
    rb'|(?<!\\)"trajectory"\s*:\s*\['
)


# ---------------------------------------------------------------------------
# Shared readers


def file_session(source: Source) -> str:
    """The session key of formats that have no session id: the file's name as given."""
    return source.name


def head_text(head: bytes) -> bytes:
    """The head without a BOM and leading whitespace."""
    if head.startswith(BOM):
        head = head[3:]
    return head.lstrip(_WS)


def foreign(head: bytes) -> bool:
    """Does the head carry a marker of a format another adapter owns?"""
    return _FOREIGN.search(head) is not None


def never_raises(parse: Callable[[Source], Iterator[Record]]) -> Callable[..., Iterator[Record]]:
    """Turn an unexpected exception into a final BadRecord: an adapter never raises on input.

    I/O failures (``UnreadableInputError``) still propagate: the command reports
    those per file. The message names the exception class only, never input.
    """

    @functools.wraps(parse)
    def wrapper(source: Source) -> Iterator[Record]:
        try:
            yield from parse(source)
        except UnreadableInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - the safety net is the point
            yield BadRecord(f"could not read the rest of the input ({exc.__class__.__name__})")

    return wrapper


def _document_error(data: bytes) -> BadRecord:
    """A located error for a document that is not JSON (line from the decoder)."""
    try:
        parse_json(data)
    except JSONInputError as exc:
        message = str(exc)
    else:  # pragma: no cover - only called on failure
        message = "not valid JSON"
    line = None
    try:
        json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        line = exc.lineno
        message = f"not valid JSON: {exc.msg[:1].lower() + exc.msg[1:]} at column {exc.colno}"
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    return BadRecord(message, line)


def _is_object(raw: bytes) -> bool:
    if not raw.lstrip(_WS).startswith(b"{"):
        return False
    try:
        return isinstance(parse_json(raw), dict)
    except JSONInputError:
        return False


def _first_line_is_object(head: bytes) -> bool:
    body = head_text(head)
    end = body.find(b"\n")
    return end >= 0 and bool(body[end:].strip()) and _is_object(body[:end])


def _lines_values(lines: Iterator[tuple[int, bytes | None]], limit: int) -> Iterator[Any]:
    for number, raw in lines:
        if raw is TOO_LONG:
            yield BadRecord(f"line longer than {limit} bytes", number)
            continue
        try:
            yield number, parse_json(raw)
        except JSONInputError as exc:
            yield BadRecord(str(exc), number)


def _split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.rstrip(b"\r")
        if raw.strip():
            yield number, raw


def read_values(source: Source) -> Iterator[tuple[int | None, Any] | BadRecord]:
    """The JSON values of a file that is one JSON document or JSON lines.

    Yields ``(line, value)`` with ``line`` None for a whole document, or a
    BadRecord for a line or document that is not JSON. JSON lines are streamed
    when the first line is a whole object; a document is read whole.
    """
    head = source.head()
    if _first_line_is_object(head):
        yield from _lines_values(source.lines(), source.max_line_bytes)
        return
    data = source.read_all()
    if not data.strip():
        return
    try:
        value = parse_json(data)
    except JSONInputError:
        pass
    else:  # located by JSON path: a line number would say nothing in a one-line file
        yield None, value
        return
    lines = list(_split_lines(data))
    if len(lines) > 1 and _is_object(lines[0][1]):
        # JSON lines whose first line is longer than the sniff window.
        yield from _lines_values(iter(lines), len(data))
        return
    yield _document_error(data)


class CallLedger:
    """The call ids a file has used: a call recorded twice is emitted once.

    ``admit`` answers whether to emit a call and with which id. The same id with
    the same tool and arguments is the same call seen again (skipped when
    ``skip_repeats``); an id reused for a different call is no identity, so the
    call is emitted without it (else the brake would take it for a re-delivery).
    """

    def __init__(self, skip_repeats: bool = True) -> None:
        self.skip_repeats = skip_repeats
        self._ids: dict[Any, bytes | None] = {}

    def admit(self, call_id: Any, tool: str, args: Any) -> tuple[bool, Any]:
        if call_id is None or call_id == "":
            return True, None
        if isinstance(call_id, bool) or not isinstance(call_id, (str, int)):
            return True, None
        try:
            digest: bytes | None = call_digest(tool, args)
        except (JSONInputError, TypeError, ValueError):
            digest = None
        if call_id not in self._ids:
            self._ids[call_id] = digest
            return True, call_id
        if self.skip_repeats and digest is not None and self._ids[call_id] == digest:
            return False, None
        return True, None


def make_call(
    ledger: CallLedger,
    tool: Any,
    raw_args: Any,
    session: str,
    call_id: Any,
    line: int | None,
    path: str,
    *,
    raw_string: bool = False,
) -> Record | None:
    """One located ToolCall (or BadRecord), or None when it repeats an earlier record."""
    if not isinstance(tool, str) or not tool:
        what = "missing" if tool is None else "not a non-empty string"
        return BadRecord(f"tool name {what}", line, path)
    if raw_string and isinstance(raw_args, str):
        args, unparsed = raw_args, False
    else:
        args, unparsed = parse_arguments(raw_args)
    emit, call_id = ledger.admit(call_id, tool, args)
    if not emit:
        return None
    return ToolCall(tool, args, session, call_id, line, path, unparsed)


def tool_call_records(
    tool_call: Any, ledger: CallLedger, session: str, line: int | None, path: str
) -> Record | None:
    """One ``tool_calls[]`` entry (function or custom) as a record."""
    if not isinstance(tool_call, dict):
        return BadRecord("tool call is not an object", line, path)
    call_id = tool_call.get("id")
    custom = tool_call.get("custom")
    if tool_call.get("type") == "custom" and isinstance(custom, dict):
        return make_call(
            ledger, custom.get("name"), custom.get("input"), session, call_id, line, path,
            raw_string=True,
        )  # fmt: skip
    function = tool_call.get("function")
    if not isinstance(function, dict):
        return BadRecord("tool call has no function object", line, path)
    return make_call(
        ledger, function.get("name"), function.get("arguments"), session, call_id, line, path
    )


def message_calls(
    message: Any, ledger: CallLedger, session: str, line: int | None, parts: tuple[str | int, ...]
) -> Iterator[Record]:
    """The calls of one chat message located at ``parts`` (nothing for other roles)."""
    if not isinstance(message, dict):
        yield BadRecord("message is not an object", line, json_path(*parts))
        return
    if message.get("role") not in (None, "assistant"):
        return
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for index, tool_call in enumerate(tool_calls):
            path = json_path(*parts, "tool_calls", index)
            record = tool_call_records(tool_call, ledger, session, line, path)
            if record is not None:
                yield record
    elif tool_calls is not None:
        yield BadRecord("tool_calls is not a list", line, json_path(*parts, "tool_calls"))
    function_call = message.get("function_call")
    if isinstance(function_call, dict):
        path = json_path(*parts, "function_call")
        record = make_call(
            ledger, function_call.get("name"), function_call.get("arguments"), session, None,
            line, path,
        )  # fmt: skip
        if record is not None:
            yield record


def messages_calls(
    messages: list[Any],
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The calls of a list of chat messages located at ``parts``."""
    for index, message in enumerate(messages):
        yield from message_calls(message, ledger, session, line, (*parts, index))


def response_calls(
    response: dict[str, Any],
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The calls of a completion response: ``choices[].message``."""
    choices = response.get("choices")
    if not isinstance(choices, list):
        return
    for index, choice in enumerate(choices):
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            yield from message_calls(
                choice["message"], ledger, session, line, (*parts, "choices", index, "message")
            )


# ---------------------------------------------------------------------------
# The adapter


def sniff(head: bytes) -> bool:
    """Chat messages (a ``tool_calls`` key or a chat role) and no other format's markers."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or foreign(body):
        return False
    if _ANTHROPIC_BLOCK.search(body):
        return False
    return bool(_TOOL_CALLS.search(body) or _ROLE.search(body))


def _value_calls(
    value: Any, ledger: CallLedger, session: str, line: int | None
) -> Iterator[Record]:
    if isinstance(value, list):
        yield from messages_calls(value, ledger, session, line, ())
    elif isinstance(value, dict) and isinstance(value.get("messages"), list):
        yield from messages_calls(value["messages"], ledger, session, line, ("messages",))
        if isinstance(value.get("response"), dict):  # a logged request with its response
            yield from response_calls(value["response"], ledger, session, line, ("response",))
    elif isinstance(value, dict) and isinstance(value.get("choices"), list):
        yield from response_calls(value, ledger, session, line, ())
    elif isinstance(value, dict) and ("role" in value or "tool_calls" in value):
        yield from message_calls(value, ledger, session, line, ())
    else:
        yield BadRecord("not a chat message, a message list or an object with messages", line)


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool call of the file's conversation, in order."""
    session = file_session(source)
    ledger = CallLedger()
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        yield from _value_calls(value, ledger, session, line)
