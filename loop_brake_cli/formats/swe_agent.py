"""SWE-agent trajectories (``*.traj``): one JSON document per run.

Function-calling runs keep the model's calls in ``history[].tool_calls`` (the
Chat Completions shape); those are read when present::

    {"trajectory": [...], "history": [{"role": "assistant", "tool_calls": [{"id": "call_…",
      "function": {"name": "bash", "arguments": "{\\"command\\":\\"ls -F\\"}"}}]}]}

Text-action runs have no structured calls, only ``trajectory[].action``, a
shell-style command string. Each step is then one call whose tool is the
command's first word (when it is a plain command name; ``bash`` otherwise,
since an assignment or a path in that place can carry a secret, and the tool
name is printed) and whose arguments are ``{"action": <the whole action
string, exactly as recorded>}``: ``"submit flag{x}\\n"`` is tool ``submit``,
args ``{"action": "submit flag{x}\\n"}``. So two steps are the same call only
when their whole command text is the same, and the tool names stay readable.
An empty action (no command was run) is not a call.

* Demonstration messages (``is_demo: true``) in ``history`` are examples shown
  to the model, not its calls, and are skipped.
* The session is the file.
* Demonstration trajectories reuse call ids for different calls; such a reused
  id is dropped from the later call (it names nothing), the call still counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..reader import Source
from ..records import BadRecord, Record, ToolCall
from . import FormatInfo
from ._common import CallLedger, file_session, json_path, never_raises, read_values
from ._sniff import head_text
from .openai_chat import message_calls

INFO = FormatInfo(
    name="swe-agent",
    description="SWE-agent trajectories (*.traj): history tool_calls, else trajectory actions",
    line_based=False,
    patterns=("*.traj",),
)

_TRAJECTORY = re.compile(rb'(?<!\\)"trajectory"\s*:\s*\[')
_STEP = re.compile(rb'(?<!\\)"(action|observation|history|environment)"\s*:')


def sniff(head: bytes) -> bool:
    """An object with a ``trajectory`` list of steps."""
    body = head_text(head)
    return body.startswith(b"{") and bool(_TRAJECTORY.search(body) and _STEP.search(body))


def _history_has_calls(history: Any) -> bool:
    if not isinstance(history, list):
        return False
    return any(
        isinstance(message, dict)
        and not message.get("is_demo")
        and isinstance(message.get("tool_calls"), list)
        and message["tool_calls"]
        for message in history
    )


def _history_calls(history: list[Any], session: str, line: int | None) -> Iterator[Record]:
    ledger = CallLedger(skip_repeats=False)
    for index, message in enumerate(history):
        if isinstance(message, dict) and message.get("is_demo"):
            continue
        yield from message_calls(message, ledger, session, line, ("history", index))


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


_COMMAND_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")


def command_word(word: str) -> str:
    """The tool name of a text action: its first word when that is a plain command
    name (``open``, ``find_file``, ``python3``), else ``bash``.

    The name is printed in every verdict, so it must never be free text: an
    assignment (``API_KEY=secret ./deploy.sh``) or a path can carry a secret."""
    return word if _COMMAND_WORD.fullmatch(word) else "bash"


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """The run's calls: the history's tool_calls when it has any, else the actions."""
    session = file_session(source)
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, dict):
            yield BadRecord("not a trajectory object", line)
            continue
        history = value.get("history")
        if _history_has_calls(history):
            yield from _history_calls(history, session, line)
            continue
        trajectory = value.get("trajectory")
        if not isinstance(trajectory, list):
            yield BadRecord("no trajectory list and no history tool_calls", line)
            continue
        yield from _action_calls(trajectory, session, line)
