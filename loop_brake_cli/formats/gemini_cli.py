"""Gemini CLI chat recordings: ``~/.gemini/tmp/<projectHash>/chats/session-*.json`` (or ``.jsonl``).

A tool call is an entry of a ``gemini`` message's ``toolCalls``::

    {"sessionId": "5b95…", "projectHash": "907f…", "messages": [{"type": "gemini",
      "toolCalls": [{"id": "read_file-1764625560264-22036414d7d65", "name": "read_file",
                     "args": {"file_path": "/tmp/a.txt"}, "status": "success"}]}]}

* The session is the top-level ``sessionId`` (the file's name when absent).
* Newer versions write JSON lines instead: a metadata line, then message
  records that are rewritten whole each time their tool calls or results
  change, ``{"$set": {...}}`` patches (whose ``messages`` may repeat the
  history) and ``{"$rewindTo": id}`` markers. Each call is emitted once, the
  first time its ``id`` appears; a rewind does not un-make calls already made.
* ``args`` is an object; a JSON string there is parsed, as elsewhere.
* Results: a tool call's own ``result`` (the ``functionResponse`` parts sent
  back to the model) is a ``ToolResult`` paired by the call's ``id``, the first
  time it is recorded. The result is the list of the parts' ``response``
  objects: each part also names the call id, which differs for every call.
* User turns (only when the reader asks: ``Source.user_turns``, a policy's
  ``reset_on_user_turn``): a ``user`` message (what the user typed; tool
  results are inside the ``gemini`` message's calls, never a user message), the
  first time its ``id`` appears (a rewritten history does not repeat it). Its
  content is never read.
* Usage: a ``gemini`` message's ``tokens`` (``input``, ``output``, ``cached``,
  ``thoughts``, ``tool``, ``total``), one turn per message ``id`` (a
  rewritten record raises the figures of the turn already reported), before
  the message's calls. Gemini's ``input`` includes the ``cached`` part and its
  ``output`` excludes the ``thoughts``: input is ``input`` less ``cached`` plus
  ``tool`` (the tool-use prompt), cache reads ``cached``, output ``output``
  plus ``thoughts`` (billed as output), reasoning ``thoughts``. So the four
  billed kinds add up to ``total``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import (
    CallLedger,
    TurnUsage,
    file_session,
    json_path,
    make_call,
    never_raises,
    tokens,
    values_calls,
)
from ._sniff import head_text, mentions

INFO = FormatInfo(
    name="gemini-cli",
    description="Gemini CLI chat recordings (session-*.json, session-*.jsonl)",
    line_based=False,
    patterns=("session-*.json", "session-*.jsonl"),
)

# Each pattern starts with its quote and looks behind after it (a quote not preceded by
# a backslash, as in formats/_sniff.py), so re scans for the quote's byte; before them,
# bytes searches for the literals they need rule out most heads (an event file's) at once.
_SESSION = re.compile(rb'"(?<!\\")sessionId"\s*:')
_MARKER = re.compile(
    rb'"(?<!\\")(?:(projectHash|toolCalls|\$rewindTo|\$set)"\s*:|type"\s*:\s*"gemini")'
)
_MARKER_WORDS = (b'projectHash"', b'toolCalls"', b'$rewindTo"', b'$set"', b'"gemini"')


def sniff(head: bytes) -> bool:
    """A ``sessionId`` with a Gemini CLI marker (``projectHash``, ``toolCalls``, a gemini turn)."""
    body = head_text(head)
    if not body.startswith(b"{") or b'"sessionId"' not in body:
        return False
    if not mentions(body, _MARKER_WORDS):
        return False
    return bool(_SESSION.search(body) and _MARKER.search(body))


class _Recording:
    """What a recording needs across JSON lines: its session and the call ids already seen."""

    def __init__(self, fallback: str, user_turns: bool = False) -> None:
        self.session = fallback
        self.ledger = CallLedger()
        self.seen: set[Any] = set()
        self.turns = TurnUsage()
        self.user_turns = user_turns  # UserTurn records wanted
        self.spoken: set[str] = set()  # the ids of the user messages already reported

    def adopt_session(self, value: Any) -> None:
        if isinstance(value, str) and value:
            self.session = value

    def message(
        self, message: Any, line: int | None, parts: tuple[str | int, ...]
    ) -> Iterator[Record]:
        if not isinstance(message, dict):
            yield BadRecord("message is not an object", line, json_path(*parts))
            return
        if self.user_turns and message.get("type") == "user":
            said = message.get("id")
            if not isinstance(said, str) or said not in self.spoken:
                if isinstance(said, str):
                    self.spoken.add(said)
                yield UserTurn(self.session, line, json_path(*parts))
            return
        usage = self.usage(message, line, parts)
        if usage is not None:
            yield usage
        tool_calls = message.get("toolCalls")
        if tool_calls is None:
            return
        if not isinstance(tool_calls, list):
            yield BadRecord("toolCalls is not a list", line, json_path(*parts, "toolCalls"))
            return
        for index, call in enumerate(tool_calls):
            path = json_path(*parts, "toolCalls", index)
            if not isinstance(call, dict):
                yield BadRecord("tool call is not an object", line, path)
                continue
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                if call_id not in self.seen:
                    self.seen.add(call_id)
                    record = make_call(
                        self.ledger, call.get("name"), call.get("args"), self.session, call_id,
                        line, path,
                    )  # fmt: skip
                    if record is not None:
                        yield record
                # a later record of the same call may bring its result
                if call.get("result") is not None and not self.ledger.answered(call_id):
                    result = _responses(call["result"])
                    yield ToolResult(self.session, call_id, result, None, line, path)
                continue
            record = make_call(
                self.ledger, call.get("name"), call.get("args"), self.session, call_id, line, path
            )
            if record is not None:
                yield record

    def usage(
        self, message: dict[str, Any], line: int | None, parts: tuple[str | int, ...]
    ) -> Usage | None:
        """A gemini message's ``tokens`` as its turn, the first time the message is seen."""
        counts = message.get("tokens")
        if message.get("type") != "gemini" or not isinstance(counts, dict):
            return None
        turn, model = message.get("id"), message.get("model")
        usage = Usage(
            self.session,
            turn if isinstance(turn, str) and turn else None,
            model if isinstance(model, str) and model else None,
            line=line,
            path=json_path(*parts, "tokens"),
        )
        given, cached = tokens(counts.get("input")), tokens(counts.get("cached"))
        tool = tokens(counts.get("tool")) or 0
        if given is not None:
            usage.input_tokens = given - (cached or 0) + tool if (cached or 0) <= given else given
        usage.cache_read_tokens = cached
        output, thoughts = tokens(counts.get("output")), tokens(counts.get("thoughts"))
        if output is not None or thoughts is not None:
            usage.output_tokens = (output or 0) + (thoughts or 0)
        usage.reasoning_tokens = thoughts
        if usage.turn is not None and not self.turns.first((self.session, usage.turn), usage):
            return None
        return usage

    def messages(
        self, messages: Any, line: int | None, parts: tuple[str | int, ...]
    ) -> Iterator[Record]:
        if not isinstance(messages, list):
            yield BadRecord("messages is not a list", line, json_path(*parts))
            return
        for index, message in enumerate(messages):
            yield from self.message(message, line, (*parts, index))

    def value(self, value: Any, line: int | None) -> Iterator[Record]:
        if not isinstance(value, dict):
            yield BadRecord("not a JSON object", line)
            return
        if "$rewindTo" in value:
            return
        patch = value.get("$set")
        if isinstance(patch, dict):
            self.adopt_session(patch.get("sessionId"))
            if "messages" in patch:
                yield from self.messages(patch["messages"], line, ("$set", "messages"))
            return
        if "sessionId" in value:  # the whole recording, or its metadata line
            self.adopt_session(value.get("sessionId"))
            if "messages" in value:
                yield from self.messages(value["messages"], line, ("messages",))
            return
        if "type" in value or "toolCalls" in value:  # one message record
            yield from self.message(value, line, ())
            return
        yield BadRecord("not a recording, a message record, $set or $rewindTo", line)


def _responses(parts: Any) -> Any:
    """The ``response`` of each ``functionResponse`` part (the parts as recorded otherwise)."""
    if not isinstance(parts, list):
        return parts
    out = []
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            return parts
        out.append(response.get("response"))
    return out


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool call of the recording, each once, in the order it first appears, with
    its result and each turn's usage."""
    recording = _Recording(file_session(source), source.user_turns)
    yield from values_calls(source, recording.value)
