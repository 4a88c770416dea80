"""mini-swe-agent trajectories (``*.traj.json``): one JSON document per run.

mini-swe-agent saves a run as ``{"info": {...}, "messages": [...],
"trajectory_format": ...}``; ``info`` holds ``mini_version``, the run's config and
its totals, ``messages`` the whole conversation::

    {"info": {"mini_version": "1.15.0", "model_stats": {"api_calls": 44}, ...},
     "messages": [{"role": "assistant", "content": "THOUGHT: ...\\n\\n```bash\\nls -R\\n```",
                   "extra": {"response": {"id": "gen-…", "usage": {...}}}}, ...],
     "trajectory_format": "mini-swe-agent-1"}

**The call is the command the agent executed**, by mini-swe-agent's own rule:

* ``mini-swe-agent-1`` (v1.x): an assistant message's ``content`` is matched with the
  run's ``action_regex`` (``info.config.agent.action_regex``; by default
  ```` ```bash\\s*\\n(.*?)\\n``` ````, dot matching newlines). Exactly one match is the
  action, stripped of surrounding whitespace, and is executed; zero or several is a
  format error: nothing ran, no call. The regexes mini-swe-agent ships (the
  ```` ```bash ````, ``<bash_code>``, ```` ```mswea_bash_command ```` and
  ``<mswea_bash_command>`` forms) are matched as it matched them; any other recorded
  regex needs the RE2 engine (the ``re2`` extra: it runs in linear time, so no
  pattern written in a file can stall a replay), else it is one located error.
* ``mini-swe-agent-1.1`` (v2.x, and any newer ``trajectory_format``): mini-swe-agent
  records the actions it parsed in ``extra.actions`` of the model's message (a
  Chat Completions message, or a Responses API response object, ``object:
  "response"``): each ``{"command": ...}`` there is one call, with its
  ``tool_call_id`` as the call id when the model used tool calling. A format error
  adds no model message (only the error, as a ``user`` message), so it is no call.
  A command the user typed (interactive ``human`` mode) is a ``user`` message with
  ``extra.actions``: the user's, not the model's, so no call. Any message with
  ``extra.actions`` is read this way in a v1 file too.

Each call is tool ``bash`` with arguments ``{"command": <the command>}`` (the
arguments of mini-swe-agent's own ``bash`` tool), so the same command is the same
call whichever way the model gave it. Located at the message's ``content``
(``$.messages[7].content``) or its action (``$.messages[7].extra.actions[0]``).
The session is the file.

**Results.** A ``tool`` message (``tool_call_id``) or a Responses
``function_call_output`` (``call_id``) answers its call; otherwise the ``user``
message that follows a model message's call is its observation (the command's
output, a timeout notice, or the submission). An observation whose ``extra``
records a non-zero ``returncode`` or an ``exception_info`` is an error for a
policy's ``[same_error]``; a v1 observation records neither apart from its text,
so it is no error (``ToolResult.error`` unset).

**Usage.** Each model message's ``extra.response.usage`` (LiteLLM's Chat Completions
usage: ``openai_chat.chat_usage``), or a response object's own ``usage`` (the
Responses API), as one turn before the calls it produced, named by the response
id; a format error's turn (its response kept in the error message's ``extra``)
is a turn without calls. ``info.model_stats`` holds the run's cost only, no
tokens. The model is the response's, else ``info.config.model.model_name``.

**User turns** (only when asked: ``Source.user_turns``): a ``user`` message that is
neither an observation nor a format error: the task (before any model message),
and in v2 a message the user typed (``extra.interrupt_type`` ``UserInterruption``,
``UserNewTask`` or ``UserRejection``, or a command of theirs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import CallLedger, file_session, json_path, make_call, never_raises, read_values
from ._sniff import head_text, mentions

INFO = FormatInfo(
    name="mini-swe-agent",
    description="mini-swe-agent trajectories (*.traj.json): the bash command of each step",
    line_based=False,
    patterns=("*.traj.json",),
)

V1 = "mini-swe-agent-1"

DEFAULT_ACTION_REGEX = r"```bash\s*\n(.*?)\n```"
"""v1's ``AgentConfig.action_regex``, used where the trajectory records none."""

SHIPPED_REGEXES = frozenset(
    (
        DEFAULT_ACTION_REGEX,
        r"<bash_code>(.*?)</bash_code>",
        r"```mswea_bash_command\s*\n(.*?)\n```",
        r"<mswea_bash_command>(.*?)</mswea_bash_command>",
    )
)
"""The action regexes mini-swe-agent's configs ship, matched with Python's ``re``
exactly as mini-swe-agent itself matched each message (so no worse than the run
that wrote the file); any other needs RE2."""

_USER_SPOKE = frozenset(("UserInterruption", "UserNewTask", "UserRejection"))

# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_FORMAT = re.compile(rb'"(?<!\\")trajectory_format"\s*:\s*"mini-swe-agent')
_VERSION = re.compile(rb'"(?<!\\")mini_version"\s*:\s*"')
_KEYS = (b'"trajectory_format"', b'"mini_version"')
# How mini-swe-agent opens a saved run: ``info`` first, its first key exit_status (v1) or
# model_stats (v2), whatever follows (a patch of 150 kB can push the rest past the head).
_OPENING = re.compile(rb'\{\s*"info"\s*:\s*\{\s*"(?:exit_status|model_stats)"\s*:')


def sniff(head: bytes) -> bool:
    """An object naming mini-swe-agent's ``trajectory_format`` or holding its
    ``mini_version`` (the format key comes last, ``mini_version`` in ``info``), or one
    that opens as mini-swe-agent writes a run (``_OPENING``): a long submission in
    ``info`` can push both keys past the head."""
    body = head_text(head)
    if not body.startswith(b"{"):
        return False
    if _OPENING.match(body):
        return True
    return mentions(body, _KEYS) and bool(_FORMAT.search(body) or _VERSION.search(body))


def _dict(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


class _Matcher:
    """The v1 rule: a message's actions by the run's ``action_regex`` (module docstring)."""

    def __init__(self, pattern: Any) -> None:
        self.error: str | None = None
        self.regex: Any = None
        if not isinstance(pattern, str):
            pattern = DEFAULT_ACTION_REGEX
        if pattern in SHIPPED_REGEXES:
            self.regex = re.compile(pattern, re.DOTALL)
            return
        try:
            import re2  # the ``re2`` extra (google-re2): linear time for any pattern
        except ImportError:
            self.error = (
                "action_regex is not one mini-swe-agent ships; reading it needs the RE2 "
                "engine: pip install 'loop-brake-cli[re2]'"
            )
            return
        options = re2.Options()
        options.log_errors = False
        options.dot_nl = True
        try:
            regex = re2.compile(pattern, options)
        except re2.error:
            self.error = "action_regex is not a valid regular expression (RE2 syntax)"
            return
        if regex.groups > 1:  # mini-swe-agent would fail on each match too
            self.error = "action_regex has more than one group"
            return
        self.regex = regex

    def actions(self, content: Any) -> list[str]:
        if self.regex is None or not isinstance(content, str):
            return []
        return [str(found).strip() for found in self.regex.findall(content)]


class _Run:
    """One trajectory read in order: its calls, their results, usage and user turns."""

    def __init__(self, value: dict[str, Any], source: Source, line: int | None) -> None:
        self.session = file_session(source)
        self.line = line
        self.source = source
        self.ledger = CallLedger()
        info = _dict(value, "info")
        config = _dict(info, "config")
        model = _dict(config, "model").get("model_name")
        self.model = model if isinstance(model, str) and model else None
        self.v1 = value.get("trajectory_format", V1) == V1
        self.matcher = _Matcher(_dict(config, "agent").get("action_regex")) if self.v1 else None
        self.unanswered = 0  # calls of the last model message without an id, not yet answered
        self.spoke = False  # a model message was seen (the task comes before any)

    def messages(self, messages: list[Any]) -> Iterator[Record]:
        if self.matcher is not None and self.matcher.error is not None:
            yield BadRecord(self.matcher.error, self.line, "$.info.config.agent.action_regex")
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                yield BadRecord("message is not an object", self.line, json_path("messages", index))
                continue
            if message.get("role") == "assistant" or message.get("object") == "response":
                yield from self.model_message(message, index)
            else:
                yield from self.other_message(message, index)

    def model_message(self, message: dict[str, Any], index: int) -> Iterator[Record]:
        self.source.model_turns += 1
        self.spoke = True
        extra = _dict(message, "extra")
        usage = self.usage(message if message.get("object") == "response" else extra, index)
        if usage is not None:
            yield usage
        self.unanswered = 0
        actions = extra.get("actions")
        if isinstance(actions, list):
            for number, action in enumerate(actions):
                yield from self.action(action, (index, "extra", "actions", number))
        elif self.matcher is not None:
            found = self.matcher.actions(message.get("content"))
            if len(found) == 1:  # else a format error: nothing ran
                path = json_path("messages", index, "content")
                self.unanswered = 1
                yield from self.call(found[0], None, path)

    def action(self, action: Any, parts: tuple[str | int, ...]) -> Iterator[Record]:
        path = json_path("messages", *parts)
        command = action.get("command") if isinstance(action, dict) else None
        if not isinstance(command, str):
            yield BadRecord("action without a string command", self.line, path)
            return
        call_id = action.get("tool_call_id")
        if not (isinstance(call_id, str) and call_id):
            call_id = None
            self.unanswered += 1
        yield from self.call(command, call_id, path)

    def call(self, command: str, call_id: str | None, path: str) -> Iterator[Record]:
        record = make_call(
            self.ledger, "bash", {"command": command}, self.session, call_id, self.line, path
        )
        if record is not None:
            yield record

    def other_message(self, message: dict[str, Any], index: int) -> Iterator[Record]:
        path = json_path("messages", index)
        extra = _dict(message, "extra")
        role, kind = message.get("role"), message.get("type")
        if role == "tool" or kind == "function_call_output":
            call_id = message.get("tool_call_id" if role == "tool" else "call_id")
            if isinstance(call_id, str) and call_id and not self.ledger.answered(call_id):
                content = message.get("content" if role == "tool" else "output")
                yield ToolResult(
                    self.session, call_id, content, None, self.line, path, _failed(extra)
                )
            return
        if role != "user":
            return  # the system prompt, the exit message
        if extra.get("interrupt_type") == "FormatError":
            usage = self.usage(extra, index)
            if usage is not None:
                yield usage
            return
        said = extra.get("interrupt_type")
        if self.unanswered and said is None and "actions" not in extra:
            self.unanswered -= 1
            content = message.get("content")
            yield ToolResult(self.session, None, content, None, self.line, path, _failed(extra))
            return
        if self.source.user_turns and self._user_spoke(said, extra):
            yield UserTurn(self.session, self.line, path)

    def _user_spoke(self, said: Any, extra: dict[str, Any]) -> bool:
        """A user message of the user's own (module docstring), not an observation."""
        if not self.spoke:
            return True  # the task
        return not self.v1 and (said in _USER_SPOKE or "actions" in extra)

    def usage(self, holder: dict[str, Any], index: int) -> Usage | None:
        """The usage of the model response ``holder`` is or keeps (``extra.response``)."""
        if holder.get("object") == "response":
            from .openai_responses import response_usage as responses_usage

            parts: tuple[str | int, ...] = ("messages", index)
            record = responses_usage(holder, self.session, self.line, parts)
        else:
            response = holder.get("response")
            if not isinstance(response, dict):
                return None
            parts = ("messages", index, "extra", "response")
            if response.get("object") == "response":
                from .openai_responses import response_usage as responses_usage

                record = responses_usage(response, self.session, self.line, parts)
            else:
                from .openai_chat import response_usage as chat_usage

                record = chat_usage(response, self.session, self.line, parts)
        if record is not None and record.model is None:
            record.model = self.model
        return record


def _failed(extra: dict[str, Any]) -> bool | None:
    """An observation's own record of failure (v2 ``extra``): True, or None (not said)."""
    code = extra.get("returncode")
    if (code.__class__ is int and code != 0) or extra.get("exception_info"):
        return True
    return None


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every command the run executed, in order, with its result and each turn's usage."""
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            yield BadRecord("not a trajectory: no messages list", line)
            continue
        yield from _Run(value, source, line).messages(value["messages"])
