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
* Results: a ``tool`` message is a ``ToolResult`` of its ``content`` (as
  recorded), paired by ``tool_call_id`` (once per id: requests repeat the
  conversation); a legacy ``function`` message has no id and answers the
  latest call. The API records no failure of a ``tool`` message (its
  ``content`` is whatever the caller sent back), so no result is an error for
  a policy's ``[same_error]`` (``ToolResult.error`` unset; an ``Error:`` in the
  text is text).
* User turns (only when the reader asks: ``Source.user_turns``, a policy's
  ``reset_on_user_turn``): a ``user`` message (results are ``tool`` messages,
  never user ones); in a log of requests, each repeating the conversation, only
  a user message past the furthest one already reported (``CallLedger.spoke``).
  Its content is never read.
* Usage: a completion response's ``usage`` (``chat_usage``), reported before
  the response's calls, the turn named by the response ``id``. A message list
  records none. ``prompt_tokens`` include the cached part
  (``prompt_tokens_details.cached_tokens``, or LiteLLM's
  ``cache_read_input_tokens``) and LiteLLM's ``cache_creation_input_tokens``:
  input is what remains; reasoning is ``completion_tokens_details.reasoning_tokens``
  (a part of the output).

The Chat Completions ``tool_calls`` shape is shared by OpenHands completion
logs, SWE-agent trajectories and recorded API responses, so those adapters
reuse ``message_calls``, ``messages_calls`` and ``response_calls`` from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import CallLedger, file_calls, json_path, make_call, never_raises, tokens
from ._sniff import foreign, head_text, mentions

INFO = FormatInfo(
    name="openai-chat",
    description="OpenAI Chat Completions messages (array, {messages}, or JSONL)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

# A key written by JSON itself, not one quoted inside a string value (those are \"escaped\").
# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_TOOL_CALLS = re.compile(rb'"(?<!\\")tool_calls"\s*:')
_ROLE = re.compile(rb'"(?<!\\")role"\s*:\s*"(assistant|user|system|tool|developer|function)"')
_ANTHROPIC_BLOCK = re.compile(
    rb'"(?<!\\")type"\s*:\s*"(tool_use|tool_result|server_tool_use|mcp_tool_use|thinking)"'
)
_KEYS = (b'"tool_calls"', b'"role"')  # one of them, or the sniff says no


# ---------------------------------------------------------------------------
# The chat shape, shared with the adapters that embed it


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
    role = message.get("role")
    if role == "tool" or role == "function":
        call_id = message.get("tool_call_id") if role == "tool" else None
        if role == "function" or (
            isinstance(call_id, str) and call_id and not ledger.answered(call_id)
        ):
            yield ToolResult(
                session, call_id, message.get("content"), None, line, json_path(*parts)
            )
        return
    if role == "user" and ledger.user_turns and ledger.spoke(parts):
        yield UserTurn(session, line, json_path(*parts))
        return
    if role is not None and role != "assistant":
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
    """The usage and calls of a completion response: ``usage``, ``choices[].message``."""
    usage = response_usage(response, session, line, parts)
    if usage is not None:
        yield usage
    choices = response.get("choices")
    if not isinstance(choices, list):
        return
    for index, choice in enumerate(choices):
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            yield from message_calls(
                choice["message"], ledger, session, line, (*parts, "choices", index, "message")
            )


def response_usage(
    response: dict[str, Any], session: str, line: int | None, parts: tuple[str | int, ...]
) -> Usage | None:
    """A completion response's ``usage`` as one turn (None when it records none)."""
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    record = response_turn(response, session, line, parts)
    chat_usage(record, usage)
    return record


def response_turn(
    response: dict[str, Any], session: str, line: int | None, parts: tuple[str | int, ...]
) -> Usage:
    """A response's turn with no figures yet: its id and model (the Chat Completions and
    Responses APIs name both alike), located at its ``usage``."""
    turn, model = response.get("id"), response.get("model")
    return Usage(
        session,
        turn if isinstance(turn, str) and turn else None,
        model if isinstance(model, str) and model else None,
        line=line,
        path=json_path(*parts, "usage"),
    )


def _detail(usage: dict[str, Any], key: str, name: str) -> int | None:
    details = usage.get(key)
    return tokens(details.get(name)) if isinstance(details, dict) else None


def chat_usage(record: Usage, usage: dict[str, Any]) -> None:
    """Set ``record``'s figures from a Chat Completions (or LiteLLM) ``usage`` object."""
    prompt = tokens(usage.get("prompt_tokens"))
    cache_read = tokens(usage.get("cache_read_input_tokens"))
    if cache_read is None:
        cache_read = _detail(usage, "prompt_tokens_details", "cached_tokens")
    cache_write = tokens(usage.get("cache_creation_input_tokens"))
    if prompt is not None:
        rest = prompt - (cache_read or 0) - (cache_write or 0)
        record.input_tokens = rest if rest >= 0 else prompt
    record.output_tokens = tokens(usage.get("completion_tokens"))
    record.cache_read_tokens = cache_read
    record.cache_write_tokens = cache_write
    record.reasoning_tokens = _detail(usage, "completion_tokens_details", "reasoning_tokens")


# ---------------------------------------------------------------------------
# The adapter


def sniff(head: bytes) -> bool:
    """Chat messages (a ``tool_calls`` key or a chat role) and no other format's markers."""
    body = head_text(head)
    if not body.startswith((b"[", b"{")) or not mentions(body, _KEYS) or foreign(body):
        return False
    if b'"type"' in body and _ANTHROPIC_BLOCK.search(body):
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
    """Every tool call, result and usage of the file's conversation, in order."""
    yield from file_calls(source, _value_calls)
