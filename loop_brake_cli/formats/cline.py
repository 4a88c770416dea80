"""Cline task histories: a task's ``api_conversation_history.json``.

Cline keeps each task in a folder of its own (Roo Code, its fork, keeps the same
files; its histories are read alike where they have this shape, but no Roo Code
file was at hand to test on),
``…/globalStorage/<extension>/tasks/<task id>/``: ``api_conversation_history.json``
is the conversation as sent to the model, an array of Anthropic messages, each
assistant message with what Cline adds (``modelInfo``, ``metrics``)::

    [{"role": "user", "content": [{"type": "text", "text": "<task>\\nFix the build\\n</task>"}]},
     {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01…",
       "name": "read_file", "input": {"path": "build.sh"}}],
      "modelInfo": {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic"},
      "metrics": {"tokens": {"prompt": 10, "completion": 595, "cached": 9573}}}, ...]

* Calls: ``tool_use`` blocks of assistant messages (as the ``anthropic`` format reads
  them: ``name``, ``input``, ``id``). A history written before Cline used native tool
  calls holds its tools as XML tags in the assistant's text: not read (no call; the
  replay says so, with the file's assistant messages).
* Session: the task id, the folder the file is in when it is named
  ``api_conversation_history.json`` (so a replay of ``tasks/`` is one session per
  task); the file otherwise.
* Results: ``tool_result`` blocks by ``tool_use_id``; Cline writes a result as text
  blocks of the next user message instead (``[read_file for 'x'] Result:``), which
  then answers the latest call (its content, never printed, only hashed). No result
  records a failure apart from its text: none is an error for ``[same_error]``.
* Usage: each assistant message's ``metrics.tokens`` is one turn before its calls:
  ``completion`` the output; ``cached`` the cache reads (Cline records one cached
  figure; with Anthropic models it is reads and writes together, so the cache
  writes are not told apart and count as reads); ``prompt`` the input, less
  ``cached`` when it includes it (Cline's own definition: prompt counts the cached
  part; Anthropic's figures, where ``cached`` is the larger, are kept as they are).
  The model is ``modelInfo.modelId``. A history without ``metrics`` records no usage
  (the task's ``ui_messages.json`` has it per request, ``api_req_started``: not read).
* User turns (only when asked): a user message with text and no result, as in
  ``anthropic``; Cline's own result messages (text starting ``[<tool> …] Result:``)
  are not the user speaking.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolCall, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import CallLedger, json_path, never_raises, read_values, tokens
from ._sniff import head_text, mentions
from .anthropic import content_calls

INFO = FormatInfo(
    name="cline",
    description="Cline and Roo Code task histories (api_conversation_history.json)",
    line_based=False,
    patterns=("api_conversation_history.json",),
)

HISTORY = "api_conversation_history.json"

# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_TASK = re.compile(
    rb'^\[\s*\{\s*"role"\s*:\s*"user"\s*,\s*"content"\s*:\s*\[\s*\{\s*"type"\s*:\s*"text"'
    rb'\s*,\s*"text"\s*:\s*"<task>'
)
_MODEL_INFO = re.compile(rb'"(?<!\\")modelInfo"\s*:\s*\{\s*"modelId"')
_RESULT = re.compile(r"^\[[^\]\n]{1,200}\] Result:")


def sniff(head: bytes) -> bool:
    """A message array opening with Cline's ``<task>`` message, or holding an assistant
    message with Cline's ``modelInfo``."""
    body = head_text(head)
    if not body.startswith(b"[") or not mentions(body, (b"<task>", b'"modelInfo"')):
        return False
    return bool(_TASK.match(body) or _MODEL_INFO.search(body))


def task_session(name: str) -> str:
    """The task id (the folder of ``api_conversation_history.json``), else the file."""
    if os.path.basename(name) == HISTORY:
        folder = os.path.basename(os.path.dirname(os.path.abspath(name)))
        if folder:
            return folder
    return name


class _Task:
    def __init__(self, source: Source, line: int | None) -> None:
        self.session = task_session(source.name)
        self.source = source
        self.line = line
        self.ledger = CallLedger()
        self.ledger.user_turns = source.user_turns
        self.open = False  # the last assistant message made a call not yet answered

    def message(self, message: Any, index: int) -> Iterator[Record]:
        parts = (index,)
        if not isinstance(message, dict):
            yield BadRecord("message is not an object", self.line, json_path(*parts))
            return
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            self.source.model_turns += 1
            usage = self.usage(message, index)
            if usage is not None:
                yield usage
            self.open = False
            for record in content_calls(
                content, self.ledger, self.session, self.line, (index, "content")
            ):
                self.open = self.open or record.__class__ is ToolCall
                yield record
            return
        if role != "user":
            return
        answered = False
        for record in content_calls(
            content, self.ledger, self.session, self.line, (index, "content"), calls=False
        ):
            answered = True
            yield record
        if self.open and not answered and _results_text(content):
            answered = True
            yield ToolResult(self.session, None, content, None, self.line, json_path(*parts))
        self.open = False
        if not answered and self.ledger.user_turns and _spoken(content):
            yield UserTurn(self.session, self.line, json_path(*parts))

    def usage(self, message: dict[str, Any], index: int) -> Usage | None:
        metrics = message.get("metrics")
        figures = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(figures, dict):
            return None
        info = message.get("modelInfo")
        model = info.get("modelId") if isinstance(info, dict) else None
        prompt, cached = tokens(figures.get("prompt")), tokens(figures.get("cached"))
        record = Usage(
            self.session,
            None,
            model if isinstance(model, str) and model else None,
            output_tokens=tokens(figures.get("completion")),
            cache_read_tokens=cached,
            line=self.line,
            path=json_path(index, "metrics", "tokens"),
        )
        if prompt is not None:
            record.input_tokens = (
                prompt - cached if cached is not None and cached <= prompt else prompt
            )
        return record


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]


def _results_text(content: Any) -> bool:
    """A user message holding Cline's written results (``[tool for 'x'] Result:``)."""
    return any(_RESULT.match(text) for text in _texts(content))


def _spoken(content: Any) -> bool:
    """The user speaking: text that is not one of Cline's result messages."""
    texts = _texts(content)
    return bool(texts) and not any(_RESULT.match(text) for text in texts)


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool_use of the task, in order, with results, usage and user turns."""
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, list):
            yield BadRecord("not a task history: a list of messages", line)
            continue
        task = _Task(source, line)
        for index, message in enumerate(value):
            yield from task.message(message, index)
