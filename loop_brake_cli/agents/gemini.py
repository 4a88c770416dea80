"""Gemini CLI ``BeforeTool`` hooks (https://geminicli.com/docs/hooks/reference).

stdin::

    {"session_id": "...", "transcript_path": "...", "cwd": "...",
     "hook_event_name": "BeforeTool", "timestamp": "...",
     "tool_name": "run_shell_command", "tool_input": {...}, "mcp_context": {...}}

Gemini CLI sends no call id. Deny: exit 0, stdout ``{"decision": "deny",
"reason": "..."}``; the reason is sent to the agent as the tool's error.
"Silence is mandatory": nothing but that JSON may be printed on stdout.

Stop (policy ``[stop]``): the common output fields ``"continue": false``
("immediately terminates the agent loop for this turn") and ``stopReason``
(shown to the user), with the deny decision and reason.

Warning (policy ``warn_at``): ``{"systemMessage": "..."}`` ("displayed
immediately to the user in the terminal"), no decision: the call runs.
``BeforeTool`` has no field that adds text to the model's context (its
``hookSpecificOutput`` only overrides ``tool_input``), so under Gemini CLI the
user sees the warning, the model does not.

Fail-open notice: ``systemMessage`` too ("displayed immediately to the user"),
no decision.

Install: ``.gemini/settings.json`` (project) or ``~/.gemini/settings.json``
(user), ``hooks.BeforeTool``; the matcher is a regex and is left out (every
tool); the handler carries a ``name`` and a ``description``.

Results (policy ``progress``): ``AfterTool`` carries the tool's output as
``tool_response`` (an object: ``llmContent``, ``returnDisplay``, ``error``) and,
like ``BeforeTool``, no call id: a result pairs with the session's latest call.
The install adds the same entry to ``hooks.AfterTool`` when the policy in
effect uses progress.

User turns (policy ``reset_on_user_turn``): ``BeforeAgent`` ("after the user
submits a prompt, before agent planning begins"; ``session_id``, ``prompt``) ends
the session's streaks; the hook answers exit 0 with nothing on stdout (exit 2
would block the turn), and the install adds the entry to ``hooks.BeforeAgent``
when the policy in effect has the key.

Detection: the event name ``BeforeTool``, ``AfterTool`` or ``BeforeAgent``.
"""

from __future__ import annotations

from ..core.records import Record
from ._common import Install, decode_input, event_of, system_message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

NAME = "gemini"
EVENTS = ("BeforeTool",)
ALL_EVENTS = (
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "Notification",
)
RESULTS = (("AfterTool", "tool_response"),)
USER_TURNS = ("BeforeAgent",)
INSTALL = Install(
    event="BeforeTool",
    result_events=("AfterTool",),
    user_turn_events=USER_TURNS,
    project=".gemini/settings.json",
    user=".gemini/settings.json",
    handler_fields=(
        ("name", "loop-brake"),
        ("description", "Deny the Nth identical consecutive tool call (loop-brake)"),
    ),
)


def matches(payload: dict[str, Any]) -> bool:
    event = event_of(payload)
    return event == "BeforeTool" or event == "AfterTool" or event == "BeforeAgent"


def decode(payload: Any, line: int | None = None) -> Record | None:
    return decode_input(payload, line, EVENTS, results=RESULTS, user_turns=USER_TURNS)


def deny_output(message: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": message}


STOPS = True


def stop_output(message: str) -> dict[str, Any]:
    """The deny, plus ``continue: false`` and the reason: the agent loop ends."""
    return {**deny_output(message), "continue": False, "stopReason": message}


warn_output = system_message

notice_output = system_message
