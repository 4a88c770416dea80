"""The edge rules every decoder applies, written once (docs/semantics.md).

* **Tool name**: a string (the empty string included); anything else is an
  error for that call, never coerced.
* **Session**: ``session ?? agent ?? "default"`` (JavaScript's ``??``): ``null``
  and absent fall through, the empty string is a session of its own. Session
  and agent ids must be strings; a number or anything else is an error, not a
  session name. A subagent of a hook input is ``"<session>/<agent>"``.
* **Call id**: absent or ``null`` is no id; a string, or an integral number
  within +-2**53 (``7.0`` is ``7``), is an id; anything else is an error.
  A repeated id is decided by the streak step (``streak.step``), never dropped
  by a decoder.
* **Arguments**: absent or ``null`` is ``{}``. In an event line any JSON value
  is hashed as given (the plugin's rule). In wire shapes whose arguments are an
  object by specification (a hook's ``tool_input``, MCP ``params.arguments``)
  a string is an encoding: ``canonical.parse_arguments`` parses it (an empty
  string is ``{}``, one that does not parse is hashed as the string).
"""

from __future__ import annotations

from ...core.records import session_key, subagent_session_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = ["FieldError", "call_id_of", "session_of", "tool_of"]

_MAX_SAFE = 2**53


class FieldError(ValueError):
    """A field of the wrong type; the message names the field, never its value."""


def tool_of(value: Any, label: str = "tool name") -> str:
    if isinstance(value, str):
        return value
    raise FieldError(f"{label} {'missing' if value is None else 'not a string'}")


def _id_text(value: Any, label: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise FieldError(f"{label} is not a string")


def session_of(
    session: Any,
    agent: Any = None,
    *,
    subagent: bool = False,
    session_label: str = "sessionId",
    agent_label: str = "agentId",
) -> str:
    """The session key. ``subagent``: the agent id names a subagent of the session
    (hook inputs) rather than standing in for a missing session (event lines)."""
    session = _id_text(session, session_label)
    agent = _id_text(agent, agent_label)
    if subagent:
        return subagent_session_key(session_key(session), agent)
    return session_key(session, agent)


def call_id_of(value: Any, label: str = "callId") -> Any:
    """The id as the brake compares it: a string or an int, or None."""
    if value is None or value.__class__ is str:
        return value
    if isinstance(value, bool):
        raise FieldError(f"{label} is not a string or an integer")
    if isinstance(value, int) and -_MAX_SAFE <= value <= _MAX_SAFE:
        return value
    if isinstance(value, float) and value.is_integer() and -_MAX_SAFE <= value <= _MAX_SAFE:
        return int(value)
    raise FieldError(f"{label} is not a string or an integer")
