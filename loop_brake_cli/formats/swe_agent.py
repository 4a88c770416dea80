"""SWE-agent trajectories (``*.traj``): one JSON document per run.

Function-calling runs keep the model's calls in ``history[].tool_calls`` (the
Chat Completions shape); those are read when present::

    {"trajectory": [...], "history": [{"role": "assistant", "action": "ls -F",
      "tool_calls": [{"id": "call_…", "function": {"name": "bash",
      "arguments": "{\\"command\\":\\"ls -F\\"}"}}]}]}

**The final step.** Each step of the run is a ``trajectory`` entry, and the
assistant message that made it carries the same ``action`` text (SWE-agent
renders the tool call as a command line and writes that string to both). In
some saved runs the last action, usually ``submit``, is only in
``trajectory[-1]`` (SWE-agent's own test trajectory
``6e44b9__sweagenttestrepo-1c2844.traj``: 5 steps, 4 tool calls in the
history); in others the history holds it too (the marshmallow-1867 function
calling demonstration). Step counts cannot tell them apart: a step the model
had to redo (a format error, a blocked command) is in the trajectory only,
never in the history. So the text decides: let
A be the last step's action, and count how many steps at the end of the
trajectory have action A, and how many tool-call messages at the end of the
history have action A. When the trajectory has more, its last step is
missing from the history and counts as one more call, located at
``$.trajectory[N]``, without an id. Its tool and arguments are those of the
latest history call with the same action text (same text, same call: a repeated
``submit flag{x}`` continues its streak), else the text form below. An empty
action (an exit on a cost limit or an error ran nothing) is not a call, and a
history whose messages record no ``action`` text is read alone. Steps the
model redid are not counted (the history does not hold them either).

Text-action runs have no structured calls, only ``trajectory[].action``, a
shell-style command string. Each step is then one call whose tool is the
command's first word (when it is a plain command name; ``bash`` otherwise,
since an assignment or a path in that place can carry a secret, and the tool
name is printed) and whose arguments are ``{"action": <the whole action
string, exactly as recorded>}``: ``"submit flag{x}\\n"`` is tool ``submit``,
args ``{"action": "submit flag{x}\\n"}``. So two steps are the same call only
when their whole command text is the same, and the tool names stay readable.
An empty action (no command was run) is not a call.

* A demonstration may hold its history alone, ``{"history": [...]}`` with no
  trajectory (SWE-agent's ``trajectories/demonstrations/function_calling_simple.traj``,
  5 calls): its tool calls are read as above. It is told from a chat message list
  by the ``message_type`` SWE-agent writes on each message.
* Demonstration messages (``is_demo: true``) in ``history`` are examples shown
  to the model, not its calls, and are skipped.
* The session is the file.
* Demonstration trajectories reuse call ids for different calls; such a reused
  id is dropped from the later call (it names nothing), the call still counts.

**Results.** A function-calling history's ``tool`` message answers the call
its ``tool_call_ids`` names (one id; ``tool_call_id`` as in Chat Completions);
the final step read from the trajectory, and each step of a text-action run,
is answered by its step's ``observation`` (the session's latest call).
A trajectory records no exit code or failure of a step (the observation is
the command's text), so no result is an error for a policy's ``[same_error]``
(``ToolResult.error`` unset).

**Usage.** ``info.model_stats`` holds the run's totals only (``tokens_sent``,
``tokens_received``, ``api_calls``): no step records its own. The run is then
reported as one ``Usage`` before its first call (input ``tokens_sent``, output
``tokens_received``, no cache or reasoning figures; the model is
``replay_config.agent.model.name`` where present): the session's total is
right, and since that one turn produced every call, no waste can be
attributed to a turn. A run that made no API call (``api_calls`` 0: a
demonstration) or counted no token (a replay writes zeros) reports none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeGuard

from ..core.records import BadRecord, Record, ToolCall, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import (
    CallLedger,
    file_session,
    json_path,
    make_call,
    never_raises,
    read_values,
    tokens,
)
from ._sniff import head_text
from .openai_chat import message_calls

INFO = FormatInfo(
    name="swe-agent",
    description="SWE-agent trajectories (*.traj): history tool_calls, else trajectory actions",
    line_based=False,
    patterns=("*.traj",),
)

# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_TRAJECTORY = re.compile(rb'"(?<!\\")trajectory"\s*:\s*\[')
_STEP = re.compile(rb'"(?<!\\")(action|observation|history|environment)"\s*:')
_HISTORY = re.compile(rb'"(?<!\\")history"\s*:\s*\[')
_MESSAGE_TYPE = re.compile(rb'"(?<!\\")message_type"\s*:\s*"')


def sniff(head: bytes) -> bool:
    """An object with a ``trajectory`` list of steps, or a ``history`` of SWE-agent's
    messages alone (each names its ``message_type``, a key no chat format writes: the
    demonstrations such as ``function_calling_simple.traj`` hold nothing else). A bytes
    search for the keys first: most heads sniffed here are other formats', without them."""
    body = head_text(head)
    if not body.startswith(b"{"):
        return False
    if b'"trajectory"' in body and _TRAJECTORY.search(body) and _STEP.search(body):
        return True
    return b'"message_type"' in body and bool(_HISTORY.search(body) and _MESSAGE_TYPE.search(body))


def _is_call_message(message: Any) -> bool:
    """A message of the run (not a demonstration) with tool calls."""
    return (
        isinstance(message, dict)
        and not message.get("is_demo")
        and isinstance(message.get("tool_calls"), list)
        and bool(message["tool_calls"])
    )


def _history_has_calls(history: Any) -> TypeGuard[list[Any]]:
    return isinstance(history, list) and any(_is_call_message(m) for m in history)


def _trailing(actions: list[Any], action: str) -> int:
    """How many of the last ``actions`` in a row equal ``action``."""
    count = 0
    for other in reversed(actions):
        if other != action:
            break
        count += 1
    return count


def _final_step_call(
    trajectory: Any, history: list[Any], ledger: CallLedger, session: str, line: int | None
) -> Record | None:
    """The trajectory's last step when the history lacks it, else None (module docstring)."""
    if not isinstance(trajectory, list) or not trajectory or not isinstance(trajectory[-1], dict):
        return None
    action = trajectory[-1].get("action")
    if not isinstance(action, str) or not action.split():
        return None
    messages = [m for m in history if _is_call_message(m)]
    if not any(isinstance(m.get("action"), str) for m in messages):
        return None  # no action text to match the steps against: the history stands
    steps = [step.get("action") if isinstance(step, dict) else None for step in trajectory]
    if _trailing(steps, action) <= _trailing([m.get("action") for m in messages], action):
        return None
    path = json_path("trajectory", len(trajectory) - 1)
    for message in reversed(messages):  # the latest call with this action text
        if message.get("action") != action:
            continue
        tool_call = message["tool_calls"][0] if len(message["tool_calls"]) == 1 else None
        function = tool_call.get("function") if isinstance(tool_call, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            name, arguments = function.get("name"), function["arguments"]
            return make_call(ledger, name, arguments, session, None, line, path)
        break
    word = command_word(action.split(None, 1)[0])
    return ToolCall(word, {"action": action}, session, None, line, path)


def _history_calls(
    history: list[Any], trajectory: Any, session: str, line: int | None
) -> Iterator[Record]:
    ledger = CallLedger(skip_repeats=False)
    for index, message in enumerate(history):
        if isinstance(message, dict) and message.get("is_demo"):
            continue
        yield from message_calls(message, ledger, session, line, ("history", index))
        if isinstance(message, dict) and message.get("role") == "tool":
            ids = message.get("tool_call_ids")
            if isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], str) and ids[0]:
                path = json_path("history", index)
                yield ToolResult(session, ids[0], message.get("content"), None, line, path)
    final = _final_step_call(trajectory, history, ledger, session, line)
    if final is not None:
        yield final
        if final.__class__ is ToolCall:
            yield _step_result(trajectory, len(trajectory) - 1, session, line)


def _step_result(trajectory: list[Any], index: int, session: str, line: int | None) -> Record:
    """A step's observation, as the result of the call that step made."""
    path = json_path("trajectory", index, "observation")
    return ToolResult(session, None, trajectory[index].get("observation"), None, line, path)


def _run_usage(run: dict[str, Any], session: str, line: int | None) -> Usage | None:
    """The run's ``model_stats`` as one Usage (module docstring), or None."""
    info = run.get("info")
    stats = info.get("model_stats") if isinstance(info, dict) else None
    if not isinstance(stats, dict) or tokens(stats.get("api_calls")) == 0:
        return None
    sent, received = tokens(stats.get("tokens_sent")), tokens(stats.get("tokens_received"))
    if not sent and not received:
        return None  # not counted (a replay writes zeros however many calls it made)
    model = None
    config = run.get("replay_config")
    agent = config.get("agent") if isinstance(config, dict) else None
    described = agent.get("model") if isinstance(agent, dict) else None
    if isinstance(described, dict) and isinstance(described.get("name"), str):
        model = described["name"]
    path = json_path("info", "model_stats")
    return Usage(session, None, model, sent, received, line=line, path=path)


def _action_calls(trajectory: list[Any], session: str, line: int | None) -> Iterator[Record]:
    for index, step in enumerate(trajectory):
        path = json_path("trajectory", index)
        if not isinstance(step, dict):
            yield BadRecord("step is not an object", line, path)
            continue
        action = step.get("action")
        if not isinstance(action, str):
            what = "missing" if action is None else "not a string"
            yield BadRecord(f"action {what}", line, path)
            continue
        words = action.split(None, 1)
        if not words:
            continue
        yield ToolCall(command_word(words[0]), {"action": action}, session, None, line, path)
        if "observation" in step:
            yield _step_result(trajectory, index, session, line)


_COMMAND_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")


def command_word(word: str) -> str:
    """The tool name of a text action: its first word when that is a plain command
    name (``open``, ``find_file``, ``python3``), else ``bash``.

    The name is printed in every verdict, so it must never be free text: an
    assignment (``API_KEY=secret ./deploy.sh``) or a path can carry a secret."""
    return word if _COMMAND_WORD.fullmatch(word) else "bash"


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """The run's usage, then its calls and their results: the history's tool_calls when it
    has any, else the actions."""
    session = file_session(source)
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, dict):
            yield BadRecord("not a trajectory object", line)
            continue
        usage = _run_usage(value, session, line)
        if usage is not None:
            yield usage
        history = value.get("history")
        if _history_has_calls(history):
            yield from _history_calls(history, value.get("trajectory"), session, line)
            continue
        trajectory = value.get("trajectory")
        if not isinstance(trajectory, list):
            yield BadRecord("no trajectory list and no history tool_calls", line)
            continue
        yield from _action_calls(trajectory, session, line)
