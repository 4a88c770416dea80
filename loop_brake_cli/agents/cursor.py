"""Cursor ``beforeMCPExecution`` / ``preToolUse`` hooks (https://cursor.com/docs/hooks).

The official page is not in the reference corpus this was written from, so the
shape is the issue's, cross-checked with
https://cupcake.eqtylab.io/reference/harnesses/cursor and
https://pivanov.github.io/agent-hooks-bridge/adapters/cursor.html, which agree.

stdin::

    {"conversation_id": "...", "generation_id": "...",
     "hook_event_name": "beforeMCPExecution", "workspace_roots": ["..."],
     "tool_name": "database_query", "tool_input": "{\\"query\\": \\"...\\"}"}

``tool_input`` may be a JSON *string*; it is parsed before hashing. The session
is ``conversation_id``, else ``session_id``; ``agent_id`` is not read (no
documented subagent field). Deny: stdout ``{"permission": "deny",
"agent_message": "...", "user_message": "..."}``. ``beforeShellExecution``
carries a ``command``, not a tool call, and is not counted.

Stop (policy ``[stop]``): none. Cursor's ``preToolUse`` and
``beforeMCPExecution`` answers have no field that stops the agent (``continue``
belongs to ``beforeSubmitPrompt``), so a stop is answered as a denial whose
message tells the agent to stop; ``STOPS`` is False.

Warning (policy ``warn_at``): none. An ``agent_message`` travels with a
``permission``, and ``"permission": "allow"`` would skip the user's own
approval of the call (as an explicit allow does in Claude Code); there is no
documented field for text beside an undecided call. The hook prints nothing,
as before; its ``--log`` line still carries the warning.

Fail-open notice: none, for the same reason (``notice_output`` is None): the
hook's stderr line only.

Install: not written by ``hook install`` (``INSTALL = None``): Cursor's
``hooks.json`` is another shape (``{"version": 1, "hooks": {"<event>":
[{"command": ...}]}}``, flat handlers, two events) that has not been checked
against the vendor's own documentation; docs/hook.md shows the entry to add.

Results (policy ``progress``): ``postToolUse`` carries the output as
``tool_output``, ``afterMCPExecution`` as ``result_json`` (JSON text, parsed as
``tool_input`` is). Neither is documented with a call id: a ``tool_use_id``, if
present, is read; otherwise a result pairs with the session's latest call.
``afterShellExecution`` follows ``beforeShellExecution``, which is not a call,
so its output is not a result either.

User turns (policy ``reset_on_user_turn``): ``beforeSubmitPrompt``
(``conversation_id``, ``prompt``) ends the conversation's streaks; the hook
answers exit 0 with nothing on stdout (the prompt goes on). docs/hook.md shows
the entry to add.

Detection: ``conversation_id`` (only Cursor sends it) or a Cursor event name.
"""

from __future__ import annotations

from ..core.records import Record
from ._common import decode_input, event_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

NAME = "cursor"
EVENTS = ("beforeMCPExecution", "preToolUse")
ALL_EVENTS = (
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
    "beforeSubmitPrompt",
    "afterShellExecution",
    "afterMCPExecution",
    "afterFileEdit",
    "afterAgentResponse",
    "afterAgentThought",
    "stop",
    "sessionStart",
    "sessionEnd",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "subagentStart",
    "subagentStop",
    "preCompact",
)
RESULTS = (("postToolUse", "tool_output"), ("afterMCPExecution", "result_json"))
USER_TURNS = ("beforeSubmitPrompt",)
_ENCODED = frozenset({"result_json"})
_DETECTED = EVENTS + tuple(event for event, _field in RESULTS) + USER_TURNS
INSTALL = None
NO_INSTALL = (
    "Cursor's hooks.json has its own shape (version 1, flat handlers, two events) "
    "not checked against Cursor's documentation; add the entry shown in docs/hook.md"
)


def matches(payload: dict[str, Any]) -> bool:
    return "conversation_id" in payload or event_of(payload) in _DETECTED


def decode(payload: Any, line: int | None = None) -> Record | None:
    return decode_input(
        payload,
        line,
        EVENTS,
        ("conversation_id", "session_id"),
        None,
        RESULTS,
        _ENCODED,
        USER_TURNS,
    )


def deny_output(message: str) -> dict[str, Any]:
    return {"permission": "deny", "agent_message": message, "user_message": message}


STOPS = False


def stop_output(message: str) -> dict[str, Any]:
    """No stop form in Cursor's pre-tool answer: the denial, carrying the stop message."""
    return deny_output(message)


def warn_output(message: str) -> None:
    """No warning form (see above): the call runs as if nothing were printed."""
    return None


def notice_output(message: str) -> None:
    """No field a person sees without a decision (see above): stderr only."""
    return None
