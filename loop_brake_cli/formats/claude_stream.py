"""Claude Code headless output: ``claude -p --output-format stream-json --verbose``.

One JSON object per line on the agent's stdout, as it works (also what the Claude
Agent SDK yields; Amp's ``--stream-json`` is said to write the same shapes, not
checked on a recording of it). A tool
call is a ``tool_use`` block of an ``assistant`` line, as in a session transcript
(format ``claude-code``), but the keys around it are the SDK's::

    {"type":"system","subtype":"init","session_id":"46c5…","tools":[…],"model":"…"}
    {"type":"assistant","message":{"id":"msg_01…","content":[{"type":"tool_use",
      "id":"toolu_01…","name":"Bash","input":{"command":"ls"}}],"usage":{…}},
     "parent_tool_use_id":null,"session_id":"46c5…","uuid":"…"}
    {"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_01…",
      "content":"…"}]},"parent_tool_use_id":null,"session_id":"46c5…"}
    {"type":"result","subtype":"success","num_turns":9,"usage":{…},"session_id":"46c5…"}

* The session is ``session_id`` (snake case; every line carries it). A subagent's
  lines (a Task or Agent call's) carry ``parent_tool_use_id``, the id of that call:
  their calls get their own streak, ``"<session_id>/<parent_tool_use_id>"``, so a
  subagent polling never counts against its parent or the other way round.
* One API response is written over several lines sharing ``message.id`` (one
  content block each, ``usage`` repeated): each ``tool_use`` is emitted once, by its
  ``id``, and the turn's usage once, at its first line, before its calls; the larger
  figures of its later lines are merged into it (as in ``claude-code``).
* Results: the ``tool_result`` blocks of ``user`` lines, paired by ``tool_use_id``
  (``{"content", "isError"}``; the line's ``tool_use_result`` is the harness's view,
  ignored).
* ``system`` lines (``init``, hooks, task progress), ``stream_event`` partial
  messages (``--include-partial-messages``: the whole message follows as an
  ``assistant`` line), ``rate_limit_event`` and the final ``result`` (the run's
  totals, already counted turn by turn) hold no call and are skipped.

Each line is read as it arrives (``filter`` prints each verdict when its call
arrives, not at the end of the run). The lines are decoded by the ``claude-code``
reader with this format's keys (``claude_code.stream_session``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import Record
from ..readers.reader import Source
from . import FormatInfo, claude_code
from ._sniff import UNICODE_ESCAPE, head_objects, mentions

INFO = FormatInfo(
    name="claude-stream",
    description="Claude Code headless output (claude -p --output-format stream-json)",
    line_based=True,
    patterns=("*.jsonl", "*.json"),
)

# A line too long for the sniff window (the init line lists every tool) still starts so.
_PREFIX = re.compile(rb'^\s*\{"type":"system","subtype":"init","cwd":"[^"]*","session_id":"')
# A head without one of these bytes names no session_id: no line need be parsed.
_KEY_WORDS = (b'"session_id"', UNICODE_ESCAPE)
_MESSAGES = ("assistant", "user")  # a tuple: ==, never hash


def _looks_like_stream(obj: dict[str, Any]) -> bool:
    """A line only the stream writes: an SDK message with its snake-case session id."""
    if obj.get("session_id").__class__ is not str:
        return False
    kind = obj.get("type")
    if kind in _MESSAGES:
        return "parent_tool_use_id" in obj and obj.get("message").__class__ is dict
    if kind == "system":
        return obj.get("subtype") == "init" and obj.get("tools").__class__ is list
    if kind == "result":
        return "num_turns" in obj and obj.get("subtype").__class__ is str
    return False


def sniff(head: bytes) -> bool:
    """A ``system`` init, an ``assistant``/``user`` message with ``parent_tool_use_id``
    or a ``result`` line, each with its ``session_id``."""
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if _looks_like_stream(obj):
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


def parse(source: Source) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read."""
    return claude_code.parse(source, stream=True)
