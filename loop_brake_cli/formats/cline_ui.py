"""Cline's and Roo Code's UI logs: a task's ``ui_messages.json`` read on its own.

What the agent's panel showed, one record a message, in order (the same shape in
Cline and in Roo Code)::

    [{"ts": 1765000000001, "type": "say", "say": "text", "text": "Fix the build"},
     {"ts": 1765000000002, "type": "say", "say": "api_req_started",
      "text": "{\\"request\\":\\"…\\",\\"tokensIn\\":10,\\"tokensOut\\":200,
               \\"cacheWrites\\":12000,\\"cacheReads\\":0,\\"cost\\":0.05}"},
     {"ts": 1765000000003, "type": "say", "say": "tool",
      "text": "{\\"tool\\":\\"readFile\\",\\"path\\":\\"build.sh\\",
               \\"content\\":\\"/src/build.sh\\"}"},
     {"ts": 1765000000004, "type": "ask", "ask": "command", "text": "npm run build"}, ...]

A task folder is read through its ``api_conversation_history.json`` (``cline``,
``roo-code``), with this file's usage: beside one, this file is its companion
(skipped without a word in a directory, and with one line when named; ``--format
cline-ui`` reads it alone all the same). This format reads a UI log with no history
beside it.

* Usage: each ``api_req_started`` (a legacy ``api_req_finished`` completing it), one
  record per API request, as for the history (``_cline_task``, "Tokens"): the cache
  read and written apart, the model the record's ``modelInfo`` names (Cline) or none.
* Calls: the UI keeps one record for each tool the agent ran or asked to run, and
  that is what is read, not the model's calls: the agent runs one tool a message
  (Cline drops the model's others, which only the history keeps), and the record names
  what the panel shows, not the tool (``editedExistingFile`` stands for Cline's
  ``write_to_file`` and ``replace_in_file`` alike). So the calls are the UI's, under
  its names: a ``tool`` record (said or asked) is a call of its ``tool`` field
  (``readFile``, ``newFileCreated``, ``appliedDiff``…) with the record's object as
  arguments; ``command`` of ``{"command"}`` (less Cline's ``REQ_APP`` mark of a command
  that asks approval); ``use_mcp_server`` of its ``toolName`` (``access_mcp_resource``
  for a resource) with the record's object; ``browser_action_launch`` of ``{"url"}``;
  the asked ``followup``, ``plan_mode_respond`` and ``new_task``, and the said
  ``completion_result`` (its ask is the same call waiting for the user), under those
  names. A record still being written (``partial``) is no call. No call id.
* Session: the task id, the folder the file is in when it is named
  ``ui_messages.json``; the file otherwise.
* Results: not read (the UI's ``command_output`` and the like name no call).
* User turns (only when asked): the task (the log's first record, said ``text`` or
  ``task``) and each ``user_feedback``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._cline_task import UI_LOG, request_info, request_usage, task_session, ui_requests
from ._common import CallLedger, json_path, make_call, never_raises, read_values
from ._sniff import head_text

INFO = FormatInfo(
    name="cline-ui",
    description="Cline and Roo Code UI logs (ui_messages.json) with no task history beside",
    line_based=False,
    patterns=(UI_LOG,),
)

_UI = re.compile(rb'^\[\s*\{\s*"ts"\s*:\s*\d+\s*,\s*"type"\s*:\s*"(?:say|ask)"')
_NAMED = ("followup", "plan_mode_respond", "new_task")
_REQUIRES_APPROVAL = "REQ_APP"


def sniff(head: bytes) -> bool:
    """An array whose first record is a UI message (``ts``, then ``type`` say or ask)."""
    return _UI.match(head_text(head)) is not None


class _Log:
    def __init__(self, source: Source, line: int | None) -> None:
        self.session = task_session(source.name)
        self.source = source
        self.line = line
        self.ledger = CallLedger()

    def usage(self, messages: list[Any]) -> dict[int, list[Record]]:
        """By record index: a request's problem (its text is no JSON object) and usage."""
        found: dict[int, list[Record]] = {}
        requests, problems = ui_requests(messages)
        for index, what in problems:
            found[index] = [BadRecord(what, self.line, json_path(index, "text"))]
        for request in requests:
            usage = request_usage(request, self.session, None, self.line, json_path(request.index))
            found.setdefault(request.index, []).append(usage)
        return found

    def call(self, message: dict[str, Any], index: int) -> Record | None:
        kind = message.get("type")
        name = message.get(kind) if kind in ("say", "ask") else None
        text = message.get("text")
        if message.get("partial") is True or not isinstance(name, str):
            return None
        path = json_path(index)
        if name == "tool" or name == "use_mcp_server":
            info = request_info(text)
            if not info:
                return BadRecord(f"{name} text is not a JSON object", self.line, path)
            tool = info.get("tool")
            if name == "use_mcp_server":
                tool = info.get("toolName") if info.get("type") == "use_mcp_tool" else None
                tool = tool or "access_mcp_resource"
            return make_call(self.ledger, tool, info, self.session, None, self.line, path)
        if not isinstance(text, str):
            text = ""
        if name == "command":
            command = text.removesuffix(_REQUIRES_APPROVAL)
            return make_call(
                self.ledger, name, {"command": command}, self.session, None, self.line, path
            )
        if name == "browser_action_launch":
            return make_call(self.ledger, name, {"url": text}, self.session, None, self.line, path)
        if (kind == "ask" and name in _NAMED) or (kind == "say" and name == "completion_result"):
            args = request_info(text) or {"text": text}
            return make_call(self.ledger, name, args, self.session, None, self.line, path)
        return None

    def records(self, messages: list[Any]) -> Iterator[Record]:
        usage = self.usage(messages)
        turns = self.source.user_turns
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                yield BadRecord("message is not an object", self.line, json_path(index))
                continue
            found = usage.get(index)
            if found is not None:
                if found[-1].__class__ is Usage:
                    self.source.model_turns += 1
                yield from found
                continue
            if (
                turns
                and message.get("type") == "say"
                and (
                    message.get("say") == "user_feedback"
                    or (index == 0 and message.get("say") in ("text", "task"))
                )
            ):
                yield UserTurn(self.session, self.line, json_path(index))
                continue
            call = self.call(message, index)
            if call is not None:
                yield call


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every request's usage and every tool the UI recorded, in order."""
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, list):
            yield BadRecord("not a UI log: a list of messages", line)
            continue
        yield from _Log(source, line).records(value)
