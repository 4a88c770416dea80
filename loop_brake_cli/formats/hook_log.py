"""Logs of agent hook inputs: one hook input object per line, of any agent.

Claude Code, Codex, Gemini CLI and Cursor hand every hook a JSON object on
stdin; a logging hook that appends those objects (as the fasthooks sample
does) leaves a file like::

    {"ts":"…","session_id":"c45a…","event":"PreToolUse","tool_name":"Bash",
     "tool_input":{"command":"ls -la"}}

Each line is read exactly as the live ``loop-brake hook`` reads its stdin: the
agent is detected per line (``agents.detect``) and the line decoded by that
agent's own decoder. A pre-tool event (``PreToolUse``, ``BeforeTool``,
``beforeMCPExecution``/``preToolUse``) is one tool call, about to run: that is
the call the brake would judge. A post-tool event (``PostToolUse``,
``AfterTool``, Cursor's ``postToolUse``/``afterMCPExecution``) is not a call but
its result (``ToolResult``, for the progress mode of a policy; without one it
changes nothing), decoded as the live hook decodes it. A user-turn event
(``UserPromptSubmit``, ``BeforeAgent``, ``beforeSubmitPrompt``) is a ``UserTurn``
only under a policy's ``reset_on_user_turn`` (``Source.user_turns``), as the
live hook resets the session then; the other events (``Stop``…) hold nothing. The event name is
``hook_event_name`` as the agents send it, or ``event`` as some loggers rename
it. Nothing is de-duplicated here: a repeated
``tool_use_id`` reaches the streak step, which marks it a duplicate, as the
hook's store does. The format keeps its first name, ``claude-hooks``. This is
not the session transcript (``claude-code``): the transcript holds
``tool_use`` blocks, the hook log holds events.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import agents
from ..core.records import BadRecord, Record, UserTurn, line_too_long
from ..readers.reader import TOO_LONG, Source
from . import FormatInfo
from ._common import load_json_line
from ._sniff import UNICODE_ESCAPE, head_objects, mentions

INFO = FormatInfo(
    name="claude-hooks",
    description="agent hook-input logs: Claude Code, Codex, Gemini CLI, Cursor "
    "(one hook input per line; a pre-tool event = a call)",
    line_based=True,
    patterns=("*.jsonl",),
)

_KNOWN_EVENTS = frozenset(event for agent in agents.AGENTS for event in agent.ALL_EVENTS)
_SESSION_FIELDS = ("session_id", "conversation_id")
# A head without one of these bytes holds no session field: no line need be parsed.
_SESSION_WORDS = (b'session_id"', b'conversation_id"', UNICODE_ESCAPE)


def sniff(head: bytes) -> bool:
    """A line that is a hook input: an agent's event name and a string session id."""
    if not mentions(head, _SESSION_WORDS):
        return False
    for obj in head_objects(head):
        event = agents.event_of(obj)
        if event.__class__ is str and event in _KNOWN_EVENTS:
            if any(isinstance(obj.get(field), str) for field in _SESSION_FIELDS):
                return True
    return False


def parse(source: Source) -> Iterator[Record]:
    """Stream the pre-tool calls and post-tool results (and the user turns, when asked),
    one per hook input line, as each line arrives."""
    user_turns = source.user_turns
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        obj, error = load_json_line(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        if not isinstance(obj, dict):
            yield BadRecord("not a JSON object", number)
            continue
        record = agents.detect(obj).decode(obj, number)
        if record is not None and (user_turns or record.__class__ is not UserTurn):
            yield record
