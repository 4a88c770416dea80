"""The four hook dialects: what each agent sends on stdin and how it is denied.

Allow is always the same: exit 0 and print nothing. An explicit "allow" would
skip the user's own permission prompts, so the hook never says it.

Claude Code ``PreToolUse`` (https://code.claude.com/docs/en/hooks):
  stdin ``{"session_id", "transcript_path", "cwd", "permission_mode",
  "hook_event_name": "PreToolUse", "tool_name", "tool_input", "tool_use_id",
  "agent_id"?}``; ``agent_id`` is present only inside a subagent.
  Deny: exit 0, stdout ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "deny", "permissionDecisionReason": "..."}}``; the
  reason is shown to Claude. Exit codes other than 0 and 2 are non-blocking.

Codex ``PreToolUse`` (https://developers.openai.com/codex/hooks and the output
schema codex-rs/hooks/schema/generated/pre-tool-use.command.output.schema.json
in https://github.com/openai/codex):
  stdin as Claude Code plus ``turn_id`` (and ``agent_id``/``agent_type`` in a
  subagent). The output schema has ``additionalProperties: false`` at both
  levels, so the deny object carries exactly ``hookEventName``,
  ``permissionDecision`` and ``permissionDecisionReason``.

Gemini CLI ``BeforeTool`` (https://geminicli.com/docs/hooks/reference):
  stdin ``{"session_id", "transcript_path", "cwd", "hook_event_name":
  "BeforeTool", "timestamp", "tool_name", "tool_input", "mcp_context"?}``.
  Deny: exit 0, stdout ``{"decision": "deny", "reason": "..."}``; the reason is
  sent to the agent as the tool's error. "Silence is mandatory": nothing but
  that JSON may be printed on stdout.

Cursor ``beforeMCPExecution`` / ``preToolUse`` (https://cursor.com/docs/hooks; the
official page is not in the reference corpus this was written from, so the shape
is the issue's, cross-checked with https://cupcake.eqtylab.io/reference/harnesses/cursor
and https://pivanov.github.io/agent-hooks-bridge/adapters/cursor.html, which agree):
  stdin ``{"conversation_id", "generation_id", "hook_event_name", "tool_name",
  "tool_input", ...}`` where ``tool_input`` may be a JSON *string*; it is parsed
  before hashing. Deny: stdout ``{"permission": "deny", "agent_message": "...",
  "user_message": "..."}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..brake import DEFAULT_SESSION, subagent_session_key
from ..canonical import JSONInputError, parse_arguments, parse_json

__all__ = [
    "AGENTS",
    "HookCall",
    "HookInputError",
    "deny_output",
    "detect",
    "read_call",
]

AGENTS = ("claude-code", "codex", "gemini", "cursor")

_CURSOR_EVENTS = frozenset({"beforeMCPExecution", "preToolUse"})


class HookInputError(ValueError):
    """Hook input that is not a tool call; the message never quotes the input."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """One tool call as the hook sees it: arguments already parsed for hashing."""

    agent: str
    tool: str
    args: Any
    session: str
    call_id: str | None


def detect(payload: dict[str, Any]) -> str:
    """Which agent sent this payload, from fields only that agent sends.

    Cursor is the only one with ``conversation_id``; Gemini names its event
    ``BeforeTool``; Codex adds ``turn_id`` to the Claude Code shape.
    """
    event = payload.get("hook_event_name")
    if "conversation_id" in payload or event in _CURSOR_EVENTS:
        return "cursor"
    if event == "BeforeTool":
        return "gemini"
    if "turn_id" in payload:
        return "codex"
    return "claude-code"


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise HookInputError(f"hook input field {key!r} is not a string")


def read_call(data: bytes, agent: str | None = None) -> HookCall:
    """Parse the hook's stdin into a call, detecting the dialect unless given."""
    if not data.strip():
        raise HookInputError("hook input is empty (expected one JSON object on stdin)")
    try:
        payload = parse_json(data)
    except JSONInputError as exc:
        raise HookInputError(f"hook input is {exc}") from None
    if not isinstance(payload, dict):
        raise HookInputError("hook input is not a JSON object")
    agent = agent or detect(payload)
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise HookInputError("hook input has no tool_name (is this a pre-tool-use event?)")
    if agent == "cursor":
        session = _text(payload, "conversation_id") or _text(payload, "session_id")
        call_id = _text(payload, "tool_use_id")
        agent_id = None
    else:
        session = _text(payload, "session_id")
        call_id = _text(payload, "tool_use_id")
        agent_id = _text(payload, "agent_id")
    key = subagent_session_key(session or DEFAULT_SESSION, agent_id)
    return HookCall(agent, tool, parse_arguments(payload.get("tool_input"))[0], key, call_id)


def deny_output(agent: str, message: str) -> dict[str, Any]:
    """The documented deny object for one agent (printed as one JSON line)."""
    if agent in ("claude-code", "codex"):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": message,
            }
        }
    if agent == "gemini":
        return {"decision": "deny", "reason": message}
    if agent == "cursor":
        return {"permission": "deny", "agent_message": message, "user_message": message}
    raise ValueError(f"unknown agent {agent!r}")
