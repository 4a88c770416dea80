"""What every agent module shares: reading a hook input's call, and the install record.

A hook input is the JSON object an agent writes to a hook's stdin at one point
of its loop. The agents differ in their event names, where the session id is
and how a denial is written; the call itself is read alike, with the edge
rules of ``wire.fields``:

* the event name is ``hook_event_name`` (as the agents send it) or ``event``
  (as some loggers store it). An input with a pre-tool event name, or with no
  event name at all, is a call; a post-tool event (``PostToolUse``,
  ``AfterTool``...) is the call's result (``decode_result``); any other event
  (``Stop``...) is neither, and decodes to None;
* ``tool_name`` must be a string (``""`` included);
* the session is the first non-null of the agent's session fields, ``??``
  style (``""`` is a session of its own, a number is an error), joined with
  ``agent_id`` as ``<session>/<agent_id>`` where the agent names subagents;
* ``tool_use_id`` is the call id (a string or an integer); a repeated one is
  left to the streak step, never dropped here;
* ``tool_input`` is an object by specification, so a JSON string is parsed
  (``canonical.parse_arguments``); missing or ``null`` is ``{}``.

A user-turn event (Claude Code's and Codex's ``UserPromptSubmit``, Gemini CLI's
``BeforeAgent``, Cursor's ``beforeSubmitPrompt``: the agent's ``USER_TURNS``) is
a ``UserTurn`` of the session (the same session rule; the prompt is never
read), which ends the session's streaks under a policy's
``reset_on_user_turn``. One whose session cannot be read is no user turn, never
an error (as a post-tool event without a readable result): a user's prompt is
never refused because of the brake.

A post-tool event is a ``ToolResult`` for the progress mode of a policy: the
same session (and subagent) rule, ``tool_use_id`` as the call id that pairs it
with its call (none: the session's latest call), and the result as the field
the agent's module names (``RESULTS``: event -> field). A post-tool event that
cannot be read as a result (a wrong session or id type, no result field) is no
result, never an error: the call it follows then counts as the seed counts
it, and without a progress policy a post-tool event changes nothing at all
(as before results were read).

Errors name the field, never its value. Cheap to import: the hook runs this.
"""

from __future__ import annotations

from ..core.canonical import JSONInputError, parse_arguments, parse_json
from ..core.records import BadRecord, Record, ToolCall, ToolResult, UserTurn
from ..readers.wire.fields import FieldError, call_id_of, session_of, tool_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ..core._namedtuple import NamedTuple

__all__ = [
    "Install",
    "decode_input",
    "event_of",
    "pre_tool_use_deny",
    "pre_tool_use_stop",
    "system_message",
]


class Install(NamedTuple):
    """Where ``hook install`` puts the hook entry for one agent.

    ``project`` is relative to the project directory, ``user`` to the home
    directory; ``user_dir_env`` names an environment variable that, when set,
    replaces the user file's directory (Codex's ``$CODEX_HOME``). The entry is
    one matcher group appended to ``hooks.<event>``; ``matcher`` None leaves the
    key out (every tool), and ``handler_fields`` are extra keys of the handler.
    ``result_events`` are the post-tool events that get the same entry when the
    policy in effect uses progress (their inputs carry the results);
    ``user_turn_events`` the user-turn events that get the entry, without a
    matcher, when it has ``reset_on_user_turn``.
    """

    event: str
    project: str
    user: str
    matcher: str | None = None
    handler_fields: tuple[tuple[str, str], ...] = ()
    user_dir_env: str | None = None
    result_events: tuple[str, ...] = ()
    user_turn_events: tuple[str, ...] = ()


def event_of(payload: dict[str, Any]) -> Any:
    """The event name: ``hook_event_name``, else the ``event`` some loggers write."""
    name = payload.get("hook_event_name")
    return payload.get("event") if name is None else name


def decode_input(
    payload: Any,
    line: int | None,
    events: tuple[str, ...],
    session_fields: tuple[str, ...] = ("session_id",),
    agent_field: str | None = "agent_id",
    results: tuple[tuple[str, str], ...] = (),
    encoded: frozenset[str] = frozenset(),
    user_turns: tuple[str, ...] = (),
) -> Record | None:
    """One hook input as a call, a located BadRecord, a ToolResult for a post-tool
    event (``results``: (event, result field) pairs; a field in ``encoded`` holds
    the result as JSON text, parsed as ``tool_input`` is), a UserTurn for a
    user-turn event (``user_turns``), or None for any other event."""
    if not isinstance(payload, dict):
        return BadRecord("not a JSON object", line)
    event = event_of(payload)
    if event is not None and event not in events:  # a tuple: == membership never raises
        for name, field in results:
            if event == name:
                return _result(payload, line, field, field in encoded, session_fields, agent_field)
        if event in user_turns:
            try:
                return UserTurn(_session_key(payload, session_fields, agent_field), line)
            except FieldError:
                return None
        return None
    try:
        tool = tool_of(payload.get("tool_name"), "tool_name")
        key, call_id = _keys(payload, session_fields, agent_field)
    except FieldError as exc:
        return BadRecord(str(exc), line)
    args, unparsed = parse_arguments(payload.get("tool_input"))
    return ToolCall(tool, args, key, call_id, line, None, unparsed)


def _keys(
    payload: dict[str, Any], session_fields: tuple[str, ...], agent_field: str | None
) -> tuple[str, Any]:
    """The session key and call id of a hook input, pre-tool or post-tool alike, so a
    result pairs with its call; ``FieldError`` for a wrong type."""
    key = _session_key(payload, session_fields, agent_field)
    return key, call_id_of(payload.get("tool_use_id"), "tool_use_id")


def _session_key(
    payload: dict[str, Any], session_fields: tuple[str, ...], agent_field: str | None
) -> str:
    """The session key of any hook input (``<session>/<agent_id>`` in a subagent)."""
    label, session = _session_field(payload, session_fields)
    return session_of(
        session,
        payload.get(agent_field) if agent_field else None,
        subagent=True,
        session_label=label,
        agent_label=agent_field or "agent_id",
    )


def _session_field(payload: dict[str, Any], fields: tuple[str, ...]) -> tuple[str, Any]:
    """The first non-null of the session fields, and its name (for errors)."""
    for field in fields:
        session = payload.get(field)
        if session is not None:
            return field, session
    return fields[0], None


def _result(
    payload: dict[str, Any],
    line: int | None,
    field: str,
    encoded: bool,
    session_fields: tuple[str, ...],
    agent_field: str | None,
) -> ToolResult | None:
    """A post-tool event's result, or None when it has none that can be read."""
    if field not in payload:
        return None
    result = payload[field]
    if encoded and isinstance(result, str):
        try:
            result = parse_json(result)
        except JSONInputError:
            pass  # hashed as the text it is
    try:
        key, call_id = _keys(payload, session_fields, agent_field)
    except FieldError:
        return None
    # a failure event's field is the error itself (Claude Code's PostToolUseFailure)
    return ToolResult(key, call_id, result, None, line, None, True if field == "error" else None)


def pre_tool_use_deny(message: str) -> dict[str, Any]:
    """Claude Code's ``PreToolUse`` deny, which Codex's output schema repeats field for field."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": message,
        }
    }


def pre_tool_use_stop(message: str) -> dict[str, Any]:
    """That deny, plus ``continue: false`` and ``stopReason``: the agent stops."""
    return {"continue": False, "stopReason": message, **pre_tool_use_deny(message)}


def system_message(message: str) -> dict[str, Any]:
    """The common ``systemMessage`` output field alone (Codex, Gemini CLI): no decision,
    so the call goes on as without an answer; the agent shows it to the user."""
    return {"systemMessage": message}
