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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..reader import Source
from ..records import BadRecord, Record
from . import FormatInfo
from ._common import CallLedger, file_session, json_path, make_call, never_raises, values_calls
from ._sniff import head_text

INFO = FormatInfo(
    name="gemini-cli",
    description="Gemini CLI chat recordings (session-*.json, session-*.jsonl)",
    line_based=False,
    patterns=("session-*.json", "session-*.jsonl"),
)

_SESSION = re.compile(rb'(?<!\\)"sessionId"\s*:')
_MARKER = re.compile(
    rb'(?<!\\)"(projectHash|toolCalls|\$rewindTo|\$set)"\s*:|(?<!\\)"type"\s*:\s*"gemini"'
)


def sniff(head: bytes) -> bool:
    """A ``sessionId`` with a Gemini CLI marker (``projectHash``, ``toolCalls``, a gemini turn)."""
    body = head_text(head)
    return body.startswith(b"{") and bool(_SESSION.search(body) and _MARKER.search(body))


class _Recording:
    """What a recording needs across JSON lines: its session and the call ids already seen."""

    def __init__(self, fallback: str) -> None:
        self.session = fallback
        self.ledger = CallLedger()
        self.seen: set[Any] = set()

    def adopt_session(self, value: Any) -> None:
        if isinstance(value, str) and value:
            self.session = value

    def message(
        self, message: Any, line: int | None, parts: tuple[str | int, ...]
    ) -> Iterator[Record]:
        if not isinstance(message, dict):
            yield BadRecord("message is not an object", line, json_path(*parts))
            return
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
                if call_id in self.seen:
                    continue  # the same call, rewritten by a later record
                self.seen.add(call_id)
            record = make_call(
                self.ledger, call.get("name"), call.get("args"), self.session, call_id, line, path
            )
            if record is not None:
                yield record

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


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool call of the recording, each once, in the order it first appears."""
    recording = _Recording(file_session(source))
    yield from values_calls(source, recording.value)
