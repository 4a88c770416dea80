"""One dataset row as the records of its run: the two layouts public trajectory datasets use.

* **Chat messages with structured calls** (OpenHands datasets such as
  ``nebius/SWE-rebench-openhands-trajectories`` and
  ``nvidia/SWE-Zero-openhands-trajectories``: ``instance_id``, ``trajectory`` a
  list of ``{role, content, tool_calls: [{id, type, function: {name,
  arguments}}], tool_call_id, name}``; datasets with a ``messages`` column in
  the same shape): each assistant message's ``tool_calls`` are its calls, read
  as the ``openai-chat`` format reads them (``formats/openai_chat.py``), and a
  ``tool`` message is a call's result.
* **SWE-agent text actions** (``nebius/SWE-agent-trajectories``: ``instance_id``,
  ``trajectory`` a list of ``{role: system|user|ai, text, mask, ...}``): the
  model's command is the last fenced code block of each ``ai`` message, and it
  is read as SWE-agent's own text actions are (``formats/swe_agent.py``): tool
  the command's first word when it is a plain name (else ``bash``), arguments
  ``{"action": <the command>}``. An ``ai`` message with no code block ran
  nothing and is not a call.

A run list stored as a JSON string (some exports do) is parsed first. Each row
is its own run and its own session, ``<instance_id>#<row>`` (a task is often
attempted by many runs); a row without an ``instance_id`` is ``#<row>``. Calls
are located at ``$[<row>].<column>[<message>]...``, on the row's line for JSON
lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolCall
from ..formats._common import CallLedger, json_path
from ..formats.openai_chat import messages_calls
from ..formats.swe_agent import command_word
from .rows import ID_COLUMNS, RUN_COLUMNS, Row

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)


def session_of(row: Row) -> str:
    """The row's session: its instance id and its number (one run per row)."""
    columns = row.columns
    for key in ID_COLUMNS:
        value = columns.get(key)
        if isinstance(value, str) and value:
            return f"{value}#{row.number}"
    return f"#{row.number}"


def row_records(row: Row) -> Iterator[Record]:
    """The row's calls (and results), in order; a row that holds no run is a BadRecord."""
    where = json_path(row.number)
    columns = row.columns
    if not isinstance(columns, dict):
        yield BadRecord("row is not an object", row.line, where)
        return
    column = next((key for key in RUN_COLUMNS if columns.get(key) is not None), None)
    if column is None:
        yield BadRecord("row has no trajectory or messages list", row.line, where)
        return
    messages = columns[column]
    if isinstance(messages, str):
        try:
            messages = parse_json(messages)
        except JSONInputError as exc:
            yield BadRecord(f"{column} is a string that is not JSON: {exc}", row.line, where)
            return
    if not isinstance(messages, list):
        yield BadRecord(f"{column} is not a list", row.line, json_path(row.number, column))
        return
    session = session_of(row)
    if _is_text_actions(messages):
        yield from _text_actions(messages, session, row, column)
    else:
        yield from messages_calls(messages, CallLedger(), session, row.line, (row.number, column))


def _is_text_actions(messages: list[Any]) -> bool:
    """SWE-agent's layout: its model speaks as ``ai`` with ``text``, never ``tool_calls``."""
    return any(
        isinstance(message, dict) and message.get("role") == "ai" and "text" in message
        for message in messages
    )


def _text_actions(messages: list[Any], session: str, row: Row, column: str) -> Iterator[Record]:
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            yield BadRecord(
                "message is not an object", row.line, json_path(row.number, column, index)
            )
            continue
        if message.get("role") != "ai":
            continue
        text = message.get("text")
        if not isinstance(text, str):
            path = json_path(row.number, column, index, "text")
            yield BadRecord("text is not a string", row.line, path)
            continue
        blocks = _FENCE.findall(text)
        if not blocks:
            continue  # no command: the model's answer ran nothing
        action = blocks[-1].strip()
        words = action.split(None, 1)
        if not words:
            continue
        path = json_path(row.number, column, index)
        yield ToolCall(command_word(words[0]), {"action": action}, session, None, row.line, path)
