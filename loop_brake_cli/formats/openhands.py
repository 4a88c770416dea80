"""OpenHands: LLM completion logs, ``output.jsonl`` records, and event-stream trajectories.

Three shapes, one format:

* **Completion log** (``llm_completions/<instance>/*.json``): one request and
  its response. The calls are in ``fncall_messages`` (Chat Completions
  ``tool_calls``) plus ``fncall_response.choices[0].message``; ``messages`` and
  ``response`` hold the same calls again, rendered as prompt text, so only the
  ``fncall_*`` pair is read (``messages``/``response`` when there is no
  ``fncall_messages``: native function-calling logs). The last call of a log is
  only in the response: the real 30-call loop's 30th call is there. A plain
  ``{"messages": [...]}`` is read the same way. Session: the file.
* **output.jsonl**: one instance per line, ``{"instance_id", "history": [...]}``.
  Session: ``instance_id``. Older versions wrote ``history`` as
  ``[action, observation]`` pairs: both halves are read the same way.
* **Event stream** (``tests/runtime/trajs/*.json``): a JSON array of events.
  Session: the file.

In ``history`` and event streams a call is an event with an ``action`` and a
``tool_call_metadata``::

    {"id": 3, "source": "agent", "action": "edit", "args": {...},
     "tool_call_metadata": {"function_name": "str_replace_editor", "tool_call_id": "toolu_01",
       "model_response": {"choices": [{"message": {"tool_calls": [...]}}]}}}

The observation answering it carries the same metadata and is not counted.
The tool is ``function_name``, the call id ``tool_call_id``. The arguments are
the ``function.arguments`` of the ``model_response`` tool call with that id:
that is what the model sent and what a harness hashes. The action's ``args``
are OpenHands' translation (with ``thought``, ``impl_source``…), so they are
used only when the model response is missing or lacks that id. Actions without
``tool_call_metadata`` (user messages, ``system``, ``recall``) are not calls.

**Older output** (before function calling: OpenDevin/OpenHands 2024, the bulk
of published SWE-bench runs) has no ``tool_call_metadata`` anywhere in the
history: the event list is the agent's actions and their observations,
flat or as ``[action, observation]`` pairs. An action is either serialized
(``{"id", "source", "message", "action": "run", "args": {...}}``) or written
flat, its fields beside ``action`` (``{"command": "ls", "thought": "...",
"action": "run", "is_confirmed": "confirmed"}``, as the resolver's
``output.jsonl`` holds it). There an action is a call when it is a tool use,
``run``, ``run_ipython``, ``read``, ``write``, ``edit``, ``browse``,
``browse_interactive``, ``delegate``, ``kill``, ``call_tool_mcp``, ``push``,
``send_pr`` (``message``, ``finish``, ``reject``, ``think``, ``recall``,
``system``, ``null``, ``change_agent_state``, the task and condensation
actions are the agent talking or OpenHands' own bookkeeping), and its
``source`` is ``agent`` or absent (a user's or the environment's action is
not the model's call). The tool is the action's name, there is no call id,
and the arguments are ``args`` (or the flat fields) without those OpenHands
adds itself: ``thought`` (the model's reasoning, which changes while the call
repeats), ``is_confirmed``/``confirmation_state`` (user confirmation),
``security_risk``/``action_risk`` (the security analyzer's rating),
``blocking``, ``hidden``, ``is_static``, ``keep_prompt`` (runtime flags),
``kernel_init_code`` and ``include_extra`` (added to every ``run_ipython``),
``impl_source`` and ``translated_ipython_code`` (which implementation ran it).
Observations are never calls. A history with any ``tool_call_metadata`` is
read by the metadata alone, as above. Session: ``instance_id``; the
resolver's records have none and are ``owner/repo#number`` of their
``issue``.

The agent SDK (OpenHands V1) writes ``{"kind": "ActionEvent", "tool_name",
"tool_call_id", "tool_call": {"name", "arguments"}, "action": {...}}`` events,
in a ``history``, an array, or one event per file under
``<conversation>/events/`` (session: the conversation folder). The call's
``tool_call.arguments`` are used, else the ``action`` object without its
``kind``. Written from the SDK's field names: no real V1 file was at hand.

**Results.** An observation answering a call is a ``ToolResult`` of its
``content`` (an ``ObservationEvent``'s ``observation``, an ``AgentErrorEvent``'s
``error``), paired by its ``tool_call_metadata.tool_call_id`` (the SDK's
``tool_call_id``); in an older history (no metadata) an observation whose
``cause`` is a call's event id, or the observation half of a pair whose action
half was a call, answers the session's latest call. A completion log's
``tool`` messages are results as in ``openai_chat``.

**Errors** (``ToolResult.error``, for a policy's ``[same_error]``): a result is
an error where the observation itself records a failure, never read from its
text: an ``ErrorObservation`` (``"observation": "error"``), or a command's
observation (``run``) whose exit code is neither 0 nor -1
(``extras.metadata.exit_code``; older versions: ``extras.exit_code``; -1 is
OpenHands' "no exit code yet", a command still running or timed out); in
the agent SDK (V1), an ``ObservationEvent`` whose ``observation`` has
``"is_error": true``, or an ``AgentErrorEvent`` (the scaffold's error answering
a ``tool_call_id``: its ``error`` is the result). Every other result leaves
the flag unset (no error). A completion log's ``tool`` messages record no
failure (``ERROR:`` in their text is text).

**User turns** (only when the reader asks: ``Source.user_turns``, a policy's
``reset_on_user_turn``): in a ``history`` or an event stream, a ``message``
action whose ``source`` is ``user`` (the SDK's ``MessageEvent`` from the user);
a ``recall`` the user's message triggers is OpenHands' own. A completion log's
user messages are read as in ``openai_chat``. The message is never read.

**Usage.** Each action's ``tool_call_metadata.model_response`` carries that
response's own ``usage`` (the same response is repeated on every action and
observation it produced): one turn per ``model_response.id``, reported before
its first call (figures as ``openai_chat.chat_usage``: LiteLLM's
``prompt_tokens`` include the cache reads and writes). The ``llm_metrics`` of
an action and a record's ``metrics`` hold running totals
(``accumulated_token_usage``), not a turn's figures, and are not read: the sum
of the turns equals their last total where every response produced a call. A
completion log records the usage of its one ``response`` only, before that
response's calls; its earlier calls, in ``messages``, have no usage.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolCall, ToolResult, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import (
    CallLedger,
    TurnUsage,
    file_session,
    json_path,
    make_call,
    never_raises,
    values_calls,
)
from ._sniff import head_text, mentions
from .openai_chat import messages_calls, response_calls, response_usage

INFO = FormatInfo(
    name="openhands",
    description="OpenHands completion logs, output.jsonl history, event-stream trajectories",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

# Each key pattern starts with its quote and looks behind after it (a quote not preceded
# by a backslash, as in formats/_sniff.py), so re scans for the quote's byte instead of
# trying every position; the sniff first asks for the literals a pattern needs.
_MARKER = re.compile(
    rb'"(?<!\\")(?:(fncall_messages|fncall_response|tool_call_metadata)"\s*:'
    rb'|kind"\s*:\s*"(ActionEvent|ObservationEvent|MessageEvent|SystemPromptEvent)")'
)
_MARKER_WORDS = (b"fncall_", b'tool_call_metadata"', b'kind"')
# Prompt-style function calling, as OpenHands renders calls into ``messages`` text.
_PROMPT_CALL = re.compile(rb"<(function|parameter)=[A-Za-z_][\w-]*>")
_MESSAGES = re.compile(rb'^\{\s*"messages"\s*:\s*\[')
_INSTANCE = re.compile(rb'"(?<!\\")instance_id"\s*:')
_HISTORY = re.compile(rb'"(?<!\\")history"\s*:\s*\[')
_INSTRUCTION = re.compile(rb'"(?<!\\")(instruction|test_result)"\s*:')
_EVENT = re.compile(
    rb'"(?<!\\")(?:source"\s*:\s*"(user|agent|environment)"'
    rb'[^\n]{0,4096}?"(?<!\\")(action|observation)"\s*:\s*"'
    rb'|(action|observation)"\s*:\s*"[a-z_]*"[^\n]{0,4096}?"(?<!\\")source"\s*:\s*"'
    rb'(user|agent|environment)")',
    re.DOTALL,
)
# Older (pre-function-calling) events: an OpenHands action beside a field only OpenHands writes.
_OLDER_ACTION = re.compile(
    rb'"(?<!\\")action"\s*:\s*"(run|run_ipython|read|write|edit|browse|browse_interactive'
    rb'|delegate|kill|message|finish|reject|think|recall|system|null)"'
)
_OLDER_FIELD = re.compile(
    rb'"(?<!\\")(is_confirmed|confirmation_state|action_risk|security_risk|keep_prompt'
    rb'|kernel_init_code|wait_for_response|image_urls|images_urls)"\s*:'
)

# Agent-SDK (V1) events that answer a tool call.
_SDK_RESULTS = ("ObservationEvent", "AgentErrorEvent")
# Older actions that are tool uses (the others are the agent talking, or bookkeeping).
_TOOL_ACTIONS = frozenset(
    {"run", "run_ipython", "read", "write", "edit", "browse", "browse_interactive", "delegate",
     "kill", "call_tool_mcp", "push", "send_pr"}
)  # fmt: skip
# Fields OpenHands adds to an action itself: not what the model asked for.
_BOOKKEEPING = frozenset(
    {"thought", "is_confirmed", "confirmation_state", "security_risk", "action_risk", "blocking",
     "hidden", "is_static", "keep_prompt", "kernel_init_code", "include_extra", "impl_source",
     "translated_ipython_code"}
)  # fmt: skip
# A serialized event's envelope: never a flat action's arguments.
_ENVELOPE = frozenset(
    {"action", "args", "id", "timestamp", "source", "message", "cause", "timeout", "llm_metrics",
     "tool_call_metadata"}
)  # fmt: skip


def sniff(head: bytes) -> bool:
    """OpenHands-only keys, an instance with a history, prompt-style calls, OpenHands events,
    or an older history: an OpenHands action name beside a field only OpenHands writes.

    A completion log starts with ``messages``, whose text renders the calls as
    ``<function=…>``/``<parameter=…>``; its ``fncall_messages`` come after.
    """
    body = head_text(head)
    if not body.startswith((b"[", b"{")):
        return False
    if mentions(body, _MARKER_WORDS) and _MARKER.search(body):
        return True
    if (
        b'"instance_id"' in body
        and _INSTANCE.search(body)
        and (_HISTORY.search(body) or _INSTRUCTION.search(body))
    ):
        return True  # an output.jsonl record (its history may start beyond the head)
    if _MESSAGES.match(body) and _PROMPT_CALL.search(body):
        return True  # a completion log whose fncall_* keys lie beyond the head
    if (
        b'"action"' in body
        and (body.startswith(b"[") or _HISTORY.search(body))
        and _OLDER_ACTION.search(body)
    ):
        return _OLDER_FIELD.search(body) is not None  # older output: no tool_call_metadata
    if body.startswith(b"[") and b'"source"' in body:
        window = body[:16384].replace(b"\n", b" ")
        return _EVENT.search(window) is not None
    return False


def _model_arguments(metadata: dict[str, Any], call_id: Any) -> tuple[bool, Any]:
    """The arguments of the model's tool call with ``call_id``: (found, arguments)."""
    response = metadata.get("model_response")
    if not isinstance(response, dict) or call_id is None:
        return False, None
    choices = response.get("choices")
    if not isinstance(choices, list):
        return False, None
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        tool_calls = message.get("tool_calls") if isinstance(message, dict) else None
        if not isinstance(tool_calls, list):
            continue
        for tool_call in tool_calls:
            if not isinstance(tool_call, dict) or tool_call.get("id") != call_id:
                continue
            function = tool_call.get("function")
            if isinstance(function, dict) and "arguments" in function:
                return True, function["arguments"]
    return False, None


def _sdk_action_call(
    event: dict[str, Any], ledger: CallLedger, session: str, line: int | None, path: str
) -> Record | None:
    """An agent-SDK (V1) ``ActionEvent``: ``tool_name``, ``tool_call_id``, ``tool_call``."""
    tool_call = event.get("tool_call")
    name = event.get("tool_name")
    found, arguments = False, None
    if isinstance(tool_call, dict):
        function = tool_call.get("function")
        source = function if isinstance(function, dict) else tool_call
        if name is None:
            name = source.get("name")
        if "arguments" in source:
            found, arguments = True, source["arguments"]
    if not found:
        action = event.get("action")
        if isinstance(action, dict):
            arguments = {key: value for key, value in action.items() if key != "kind"}
    return make_call(ledger, name, arguments, session, event.get("tool_call_id"), line, path)


def _older_call(
    event: dict[str, Any], ledger: CallLedger, session: str, line: int | None, path: str
) -> Record | None:
    """An older (pre-function-calling) action: a call when it is the agent's tool use."""
    action = event.get("action")
    if not isinstance(action, str) or action not in _TOOL_ACTIONS:
        return None
    if event.get("source") not in (None, "agent"):
        return None  # a user's or the environment's action, not the model's call
    if "args" in event:
        arguments = event["args"]
        if isinstance(arguments, dict):
            arguments = {k: v for k, v in arguments.items() if k not in _BOOKKEEPING}
    else:  # written flat: the action's fields beside "action"
        arguments = {k: v for k, v in event.items() if k not in _ENVELOPE and k not in _BOOKKEEPING}
    return make_call(ledger, action, arguments, session, None, line, path)


def event_call(
    event: Any,
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
    older: bool = False,
) -> Record | None:
    """One history event as a call, or None when it is not one. ``older``: the
    history has no ``tool_call_metadata``, so its tool-use actions are the calls."""
    path = json_path(*parts)
    if not isinstance(event, dict):
        return BadRecord("event is not an object", line, path)
    if event.get("kind") == "ActionEvent":
        return _sdk_action_call(event, ledger, session, line, path)
    if "action" not in event:
        return None
    metadata = event.get("tool_call_metadata")
    if metadata is None:
        return _older_call(event, ledger, session, line, path) if older else None
    if not isinstance(metadata, dict):
        return BadRecord("tool_call_metadata is not an object", line, path)
    call_id = metadata.get("tool_call_id")
    found, arguments = _model_arguments(metadata, call_id)
    if not found:
        arguments = event.get("args")
    return make_call(ledger, metadata.get("function_name"), arguments, session, call_id, line, path)


def events_calls(
    events: list[Any],
    ledger: CallLedger,
    session: str,
    line: int | None,
    parts: tuple[str | int, ...],
) -> Iterator[Record]:
    """The usage, calls and results of a list of events located at ``parts``."""
    history = _History(ledger, session, line, not _has_metadata(events), TurnUsage())
    for index, event in enumerate(events):
        if isinstance(event, list):  # older output.jsonl: [action, observation] pairs
            for inner, half in enumerate(event):
                yield from history.event(half, (*parts, index, inner))
            continue
        yield from history.event(event, (*parts, index))


class _History:
    """One list of events: which event ids were calls, and the turns already reported."""

    def __init__(
        self, ledger: CallLedger, session: str, line: int | None, older: bool, turns: TurnUsage
    ) -> None:
        self.ledger, self.session, self.line, self.older = ledger, session, line, older
        self.turns = turns
        self.calls: set[Any] = set()  # ids of the events that were calls (older pairing)
        self.after_call = False  # the previous event was a call (flat events have no ids)

    def event(self, event: Any, parts: tuple[str | int, ...]) -> Iterator[Record]:
        """One event's records (usage and a call, or a result)."""
        after_call, self.after_call = self.after_call, False
        if self.ledger.user_turns and _user_spoke(event):
            yield UserTurn(self.session, self.line, json_path(*parts))
            return
        if isinstance(event, dict) and (
            "observation" in event or event.get("kind") in _SDK_RESULTS
        ):
            result = self.result(event, parts, after_call)
            if result is not None:
                yield result
            return
        if isinstance(event, dict):
            usage = self.usage(event, parts)
            if usage is not None:
                yield usage
        record = event_call(event, self.ledger, self.session, self.line, parts, self.older)
        if record is not None:
            if record.__class__ is ToolCall:
                self.after_call = True
                event_id = _hashable(event.get("id"))
                if event_id is not None:
                    self.calls.add(event_id)
            yield record

    def usage(self, event: dict[str, Any], parts: tuple[str | int, ...]) -> Record | None:
        """The usage of the response behind an action, the first time that response is seen."""
        metadata = event.get("tool_call_metadata")
        response = metadata.get("model_response") if isinstance(metadata, dict) else None
        if "action" not in event or not isinstance(response, dict):
            return None
        path = (*parts, "tool_call_metadata", "model_response")
        usage = response_usage(response, self.session, self.line, path)
        if usage is None or (
            usage.turn is not None and not self.turns.first((self.session, usage.turn), usage)
        ):
            return None
        return usage

    def result(
        self, event: dict[str, Any], parts: tuple[str | int, ...], follows_call: bool
    ) -> Record | None:
        """An observation as the result of the call it answers, or None when it answers none.
        ``follows_call``: the event before it (or its pair's action half) was a call."""
        path = json_path(*parts)
        kind = event.get("kind")
        if kind in _SDK_RESULTS:
            call_id = event.get("tool_call_id")
            if not (isinstance(call_id, str) and call_id):
                return None
            if kind == "AgentErrorEvent":
                return ToolResult(
                    self.session, call_id, event.get("error"), None, self.line, path, error=True
                )
            observation = event.get("observation")
            failed = isinstance(observation, dict) and observation.get("is_error") is True
            return ToolResult(
                self.session, call_id, observation, None, self.line, path, error=failed or None
            )
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, dict):
            call_id = metadata.get("tool_call_id")
            if isinstance(call_id, str) and call_id:
                return ToolResult(
                    self.session,
                    call_id,
                    event.get("content"),
                    None,
                    self.line,
                    path,
                    error=_observation_error(event),
                )
            return None
        cause = _hashable(event.get("cause"))
        if cause is None and "cause" not in event:
            answers = follows_call  # flat events: an observation follows its action
        else:
            answers = cause is not None and cause in self.calls
        if self.older and answers:
            return ToolResult(
                self.session,
                None,
                event.get("content"),
                None,
                self.line,
                path,
                error=_observation_error(event),
            )
        return None


def _observation_error(event: dict[str, Any]) -> bool | None:
    """True when an observation records that its call failed (module docstring,
    **Errors**): an error observation, or a command's exit code other than 0 and -1.
    None otherwise: the result is then no error (``progress.result_error`` of text)."""
    if event.get("observation") == "error":
        return True
    extras = event.get("extras")
    if not isinstance(extras, dict):
        return None
    metadata = extras.get("metadata")
    code = metadata.get("exit_code") if isinstance(metadata, dict) else extras.get("exit_code")
    if code.__class__ is int and code not in (0, -1):
        return True
    return None


def _user_spoke(event: Any) -> bool:
    """A user's message event (module docstring), not OpenHands' own actions."""
    if not isinstance(event, dict) or event.get("source") != "user":
        return False
    return event.get("action") == "message" or event.get("kind") == "MessageEvent"


def _hashable(value: Any) -> Any:
    """An event id as a set member (ids are numbers; anything else matches nothing)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _has_metadata(events: list[Any]) -> bool:
    """Does any event (or half of a pair) come from function calling?"""
    for event in events:
        for half in event if isinstance(event, list) else (event,):
            if isinstance(half, dict) and (
                "tool_call_metadata" in half or half.get("kind") == "ActionEvent"
            ):
                return True
    return False


def _completion_calls(
    log: dict[str, Any], ledger: CallLedger, session: str, line: int | None
) -> Iterator[Record]:
    if isinstance(log.get("fncall_messages"), list):
        messages_key, response_key = "fncall_messages", "fncall_response"
    else:
        messages_key, response_key = "messages", "response"
    yield from messages_calls(log[messages_key], ledger, session, line, (messages_key,))
    response = log.get(response_key)
    if isinstance(response, dict):
        yield from response_calls(response, ledger, session, line, (response_key,))


def _ledger(ledgers: dict[str, CallLedger], key: str, user_turns: bool) -> CallLedger:
    ledger = ledgers.get(key)
    if ledger is None:
        ledger = ledgers[key] = CallLedger()
        ledger.user_turns = user_turns
    return ledger


def value_calls(
    value: Any,
    ledgers: dict[str, CallLedger],
    file_key: str,
    line: int | None,
    user_turns: bool = False,
) -> Iterator[Record]:
    """The calls of one JSON value in any of the three shapes.

    Ids are remembered per session: OpenHands makes up ``toolu_01``, ``toolu_02``…
    afresh for every instance of an ``output.jsonl``.
    """
    ledger = _ledger(ledgers, file_key, user_turns)
    if isinstance(value, list):
        yield from events_calls(value, ledger, file_key, line, ())
    elif isinstance(value, dict) and isinstance(value.get("history"), list):
        session = _record_session(value, file_key)
        ledger = _ledger(ledgers, session, user_turns)
        yield from events_calls(value["history"], ledger, session, line, ("history",))
    elif isinstance(value, dict) and (
        isinstance(value.get("fncall_messages"), list) or isinstance(value.get("messages"), list)
    ):
        yield from _completion_calls(value, ledger, file_key, line)
    elif isinstance(value, dict) and isinstance(value.get("kind"), str):
        # one agent-SDK event per file: <conversation>/events/event-*.json
        session = _conversation_of(file_key)
        ledger = _ledger(ledgers, session, user_turns)
        yield from _History(ledger, session, line, False, TurnUsage()).event(value, ())
    else:
        yield BadRecord("not an OpenHands completion log, output.jsonl record or event list", line)


def _record_session(record: dict[str, Any], file_key: str) -> str:
    """An output.jsonl record's session: ``instance_id``, the resolver's issue, or the file."""
    instance = record.get("instance_id")
    if isinstance(instance, str) and instance:
        return instance
    if isinstance(instance, int) and not isinstance(instance, bool):
        return str(instance)
    issue = record.get("issue")
    if isinstance(issue, dict):
        owner, repo, number = issue.get("owner"), issue.get("repo"), issue.get("number")
        if isinstance(owner, str) and owner and isinstance(repo, str) and repo:
            if isinstance(number, int) and not isinstance(number, bool):
                return f"{owner}/{repo}#{number}"
    return file_key


def _conversation_of(name: str) -> str:
    """An agent-SDK event file's session: its conversation folder (the parent of ``events/``)."""
    folder = os.path.dirname(name)
    if os.path.basename(folder) == "events" and os.path.dirname(folder):
        return os.path.dirname(folder)
    return name


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every call of the file once: one representation of each, never both."""
    file_key = file_session(source)
    ledgers: dict[str, CallLedger] = {}
    turns = source.user_turns
    yield from values_calls(
        source, lambda value, line: value_calls(value, ledgers, file_key, line, turns)
    )
