"""Claude Code ``PreToolUse`` hooks (https://code.claude.com/docs/en/hooks).

stdin::

    {"session_id": "...", "transcript_path": "...", "cwd": "...",
     "permission_mode": "default", "hook_event_name": "PreToolUse",
     "tool_name": "Bash", "tool_input": {"command": "ls"},
     "tool_use_id": "toolu_01...", "agent_id": "..."}

``agent_id`` is present only inside a subagent, whose calls get their own
streak (``<session_id>/<agent_id>``). Deny: exit 0, stdout
``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
"deny", "permissionDecisionReason": "..."}}``; the reason is shown to Claude.
Exit codes other than 0 and 2 are non-blocking. Allow is exit 0 and no output:
an explicit "allow" would skip the user's own permission prompts.

Stop (policy ``[stop]``): the common JSON fields ``"continue": false`` (Claude
stops after the hooks run) with ``stopReason`` (shown to the user, not to
Claude), sent together with the deny above so the call does not run either.

Warning (policy ``warn_at``): ``{"hookSpecificOutput": {"hookEventName":
"PreToolUse", "additionalContext": "..."}}``, exit 0: the text is added to
Claude's context before the tool runs; no ``permissionDecision``, so the
call goes through the user's permission rules as if nothing were printed.

Fail-open notice (the hook could not judge a call): ``{"systemMessage": "..."}``
("Optional warning message shown to the user"), no decision: the call goes
through the user's permission rules; once per session (``hook/notice.py``).

Install: ``.claude/settings.json`` (project) or ``~/.claude/settings.json``
(user), ``hooks.PreToolUse``; matcher ``*`` is every tool. Under a policy that
uses progress, the same entry in ``hooks.PostToolUse`` and
``hooks.PostToolUseFailure`` too.

Results (policy ``progress``): ``PostToolUse`` carries the tool's output as
``tool_response`` (an object for the built-in tools, e.g. Bash's ``stdout``,
``stderr``, ``interrupted``), ``PostToolUseFailure`` the failure as ``error``;
both carry the ``tool_use_id`` of their call. Neither can deny the call (it
has run); the hook only records the result's digest and prints nothing.

User turns (policy ``reset_on_user_turn``): ``UserPromptSubmit`` (``session_id``,
``prompt``; no matcher) ends the session's streaks. The hook answers it with
exit 0 and nothing on stdout (whatever it printed would be added to Claude's
context, and exit 2 would erase the user's prompt), even when it fails; the
install adds the entry (without a matcher) to ``hooks.UserPromptSubmit`` when
the policy in effect has the key.

Detection: the fallback. Claude Code sends nothing the others lack, so a
payload no other agent claims is read as Claude Code's (registered last).
"""

from __future__ import annotations

from ..core.records import Record
from ._common import Install, decode_input, pre_tool_use_deny, pre_tool_use_stop, system_message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

NAME = "claude-code"
EVENTS = ("PreToolUse",)
ALL_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
)
RESULTS = (("PostToolUse", "tool_response"), ("PostToolUseFailure", "error"))
USER_TURNS = ("UserPromptSubmit",)
INSTALL = Install(
    event="PreToolUse",
    project=".claude/settings.json",
    user=".claude/settings.json",
    matcher="*",
    result_events=("PostToolUse", "PostToolUseFailure"),
    user_turn_events=USER_TURNS,
)


def matches(payload: dict[str, Any]) -> bool:
    """Every payload: Claude Code's shape is what the other agents extend."""
    return True


def decode(payload: Any, line: int | None = None) -> Record | None:
    return decode_input(payload, line, EVENTS, results=RESULTS, user_turns=USER_TURNS)


deny_output = pre_tool_use_deny

STOPS = True

stop_output = pre_tool_use_stop


def warn_output(message: str) -> dict[str, Any]:
    """``additionalContext`` without a decision: Claude reads the warning, the call runs."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": message}}


notice_output = system_message
