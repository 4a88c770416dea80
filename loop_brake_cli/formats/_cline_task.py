"""What Cline's and Roo Code's task folders share (the ``cline``, ``roo-code`` and
``cline-ui`` formats).

Cline keeps each task in a folder, ``…/globalStorage/saoudrizwan.claude-dev/tasks/<task id>/``;
Roo Code, its fork, in ``…/globalStorage/rooveterinaryinc.roo-cline/tasks/<task id>/``
(Roo's forks, Kilo Code and IBM Bob, alike). Both folders hold the same two files:

* ``api_conversation_history.json``: the conversation as sent to the model, an array
  of Anthropic messages (Cline adds ``modelInfo`` and ``metrics`` to each assistant
  message; Roo adds ``ts`` to every message, and Cline does too since February 2026);
* ``ui_messages.json``: what the panel showed, an array of ``{"ts", "type": "say"|"ask",
  "say"|"ask", "text", …}``, where each API request is a ``say: "api_req_started"``
  whose ``text`` is JSON: ``{"request"?, "tokensIn", "tokensOut", "cacheWrites",
  "cacheReads", "cost", "apiProtocol"? (Roo), "cancelReason"?}`` (Cline's
  ``ClineApiReqInfo``; a legacy ``api_req_finished`` after it completes it, as Cline's
  ``combineApiRequests`` merges them). Cline numbers each UI message with the history's
  length when it was said (``conversationHistoryIndex``); Roo does not.

This module reads a task history (``read_history``), with the usage of its requests
from the ``ui_messages.json`` beside it when there is one (``folder_requests``), tells
Cline's history from Roo's (``agent``), and turns a request into a ``Usage``
(``request_usage``).

**Which agent.** Decided from the head (the first 64 KiB) of the history, in this
order: a message array that does not open as a task history is neither; a history with
Cline's ``"modelInfo"`` is Cline's; one that opens with Roo's ``<user_message>`` (Roo
since January 2026) or holds Roo's mode line in its environment details
(``# Current Mode`` then ``<slug>…</slug>``, Roo since February 2025) is Roo Code's;
any other (Cline's ``ACT MODE``/``PLAN MODE`` mode line, or a history older than both
markers) is Cline's.

**Which request is which turn.** A request's usage is yielded before the assistant
message that answered it, so its calls are that turn's: with ``conversationHistoryIndex``
on every request (Cline) the first assistant message after that index; else, with a
``ts`` on every request and every assistant message (Roo), the first assistant message
written at or after the request began; else the requests and the assistant messages in
order, one for one. A request no assistant message answered (a failure, a retry) is a
turn with no call of its own; the last request before an assistant message owns its
calls.

**Tokens.** ``tokensOut`` is the output, ``cacheReads`` and ``cacheWrites`` the cache
read and written. ``tokensIn`` is the input as the provider reported it: without the
cache for Anthropic's API and most of Cline's providers, with it for OpenAI-style ones
and in Roo Code since 3.30 (October 2025, whatever the provider). So when the cache
(reads and writes) is no larger than ``tokensIn``, ``tokensIn`` is read as including it
and the input is the rest; when larger, ``tokensIn`` is the input as it is. The one
misreading: an uncached input larger than a non-zero cache, reported without it, is
read as including it (the input is then short by the cache). ``cost`` is not read.
Cline's ``deleted_api_reqs`` and Roo's ``api_req_deleted`` (the totals of requests a
checkpoint restore removed with their messages) and Cline's ``subagent_usage`` are no
turn of the history: not read.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolCall, ToolResult, Usage, UserTurn
from ..readers.reader import Source, open_source
from ._common import CallLedger, json_path, read_values, tokens
from ._sniff import head_text, mentions
from .anthropic import content_calls

HISTORY = "api_conversation_history.json"
UI_LOG = "ui_messages.json"

# Quote first, look-behind after it (as in formats/_sniff.py): re scans for the quote's byte.
_TASK = re.compile(
    rb'^\[\s*\{\s*"role"\s*:\s*"user"\s*,\s*"content"\s*:\s*\[\s*\{\s*"type"\s*:\s*"text"'
    rb'\s*,\s*"text"\s*:\s*"<(task|user_message)>'
)
_MODEL_INFO = re.compile(rb'"(?<!\\")modelInfo"\s*:\s*\{\s*"modelId"')
_ROO_MODE = re.compile(rb"# Current Mode\\n<slug>")
_RESULT = re.compile(r"^\[[^\]\n]{1,200}\] Result:")
_ENV_MODEL = re.compile(r"\n<model>([^<\n]{1,200})</model>")


def agent(head: bytes) -> str | None:
    """``"cline"``, ``"roo-code"`` or None: whose task history the head opens (module
    docstring, "Which agent")."""
    body = head_text(head)
    if not body.startswith(b"[") or not mentions(
        body, (b"<task>", b"<user_message>", b'"modelInfo"')
    ):
        return None
    opening = _TASK.match(body)
    if _MODEL_INFO.search(body):
        return "cline"
    if opening is None:
        return None
    if opening.group(1) == b"user_message" or _ROO_MODE.search(body):
        return "roo-code"
    return "cline"


def task_session(name: str) -> str:
    """The task id (the folder of a task's ``api_conversation_history.json`` or
    ``ui_messages.json``), else the file."""
    if os.path.basename(name) in (HISTORY, UI_LOG):
        folder = os.path.basename(os.path.dirname(os.path.abspath(name)))
        if folder:
            return folder
    return name


def beside(path: str, name: str) -> str:
    """The file ``name`` in the folder of ``path``."""
    return os.path.join(os.path.dirname(path), name)


class Request:
    """One API request of a UI log (``api_req_started``): where it was and its figures."""

    __slots__ = ("index", "ts", "history_index", "model", "info")

    def __init__(self, index: int, message: dict[str, Any], info: dict[str, Any]) -> None:
        self.index = index
        ts = message.get("ts")
        self.ts = ts if ts.__class__ is int else None
        history_index = message.get("conversationHistoryIndex")
        self.history_index = history_index if history_index.__class__ is int else None
        model_info = message.get("modelInfo")
        model = model_info.get("modelId") if isinstance(model_info, dict) else None
        self.model = model if isinstance(model, str) and model else None
        self.info = info


def ui_requests(messages: list[Any]) -> tuple[list[Request], list[tuple[int, str]]]:
    """The requests of a UI log in order, and its problems as (record index, what). A
    legacy ``api_req_finished`` completes the request before it (Cline's
    ``combineApiRequests``)."""
    requests: list[Request] = []
    problems: list[tuple[int, str]] = []
    open_request: Request | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("type") != "say":
            continue
        say = message.get("say")
        if say != "api_req_started" and say != "api_req_finished":
            continue
        info = request_info(message.get("text"))
        if info is None:
            problems.append((index, f"{say} text is not a JSON object"))
            info = {}
        if say == "api_req_started":
            open_request = Request(index, message, info)
            requests.append(open_request)
        elif open_request is not None:
            open_request.info = {**open_request.info, **info}
            open_request = None
    return requests, problems


def request_info(text: Any) -> dict[str, Any] | None:
    """A request's ``text`` read as its JSON object (None: not one; no text: empty)."""
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        return None
    try:
        value = parse_json(text.encode("utf-8", "surrogatepass"))
    except (JSONInputError, UnicodeError):
        return None
    return value if isinstance(value, dict) else None


def request_usage(
    request: Request, session: str, model: str | None, line: int | None, path: str | None
) -> Usage:
    """A request's ``Usage`` (module docstring, "Tokens")."""
    info = request.info
    usage = Usage(
        session,
        None,
        request.model or model,
        output_tokens=tokens(info.get("tokensOut")),
        cache_read_tokens=tokens(info.get("cacheReads")),
        cache_write_tokens=tokens(info.get("cacheWrites")),
        line=line,
        path=path,
    )
    sent = tokens(info.get("tokensIn"))
    cache = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    usage.input_tokens = sent - cache if sent is not None and cache <= sent else sent
    return usage


def folder_requests(name: str) -> tuple[list[Request], list[BadRecord]]:
    """The requests of the ``ui_messages.json`` beside the history ``name`` (none when it
    is not a task's history or there is no such file), and what was wrong with it, said
    with its name (never its content)."""
    if os.path.basename(name) != HISTORY:
        return [], []
    path = beside(name, UI_LOG)
    if not os.path.isfile(path):
        return [], []
    where = f"{UI_LOG} beside it"
    try:
        source = open_source(path)
    except OSError as exc:
        return [], [BadRecord(f"{where} cannot be read: {exc.strerror or 'error'}")]
    try:
        value = parse_json(source.read_all())
    except JSONInputError:
        return [], [BadRecord(f"{where} is not JSON: usage read from the history")]
    except OSError as exc:
        return [], [BadRecord(f"{where} cannot be read: {exc.strerror or 'error'}")]
    finally:
        source.close()
    if not isinstance(value, list):
        return [], [BadRecord(f"{where} is not a list of UI messages: usage read from the history")]
    requests, problems = ui_requests(value)
    return requests, [
        BadRecord(f"{where}, {json_path(index, 'text')}: {what}") for index, what in problems
    ]


def _answering(requests: list[Request], messages: list[Any]) -> dict[int, list[Request]]:
    """For each assistant message (by index; ``len(messages)``: after the last), the
    requests to yield before it (module docstring, "Which request is which turn")."""
    turns = [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    end = len(messages)
    plan: dict[int, list[Request]] = {}
    if all(r.history_index is not None for r in requests):
        for r in requests:
            # all() above: no history_index is None
            k = bisect.bisect_left(turns, r.history_index + 1)  # type: ignore[operator]
            plan.setdefault(turns[k] if k < len(turns) else end, []).append(r)
        return plan
    written = [messages[i].get("ts") for i in turns]
    if (
        all(r.ts is not None for r in requests)
        and all(ts.__class__ is int for ts in written)
        and all(a <= b for a, b in zip(written, written[1:], strict=False))
    ):
        for r in requests:
            k = bisect.bisect_left(written, r.ts)
            plan.setdefault(turns[k] if k < len(turns) else end, []).append(r)
        return plan
    for k, r in enumerate(requests):
        plan.setdefault(turns[k] if k < len(turns) else end, []).append(r)
    return plan


class _Task:
    """One task history: its calls, results, user turns, and the usage of each turn, from
    the UI log beside it (``requests``) or else from each assistant message's ``metrics``."""

    def __init__(
        self, source: Source, line: int | None, requests: list[Request], messages: list[Any]
    ) -> None:
        self.session = task_session(source.name)
        self.source = source
        self.line = line
        self.ledger = CallLedger()
        self.ledger.user_turns = source.user_turns
        self.open = False  # the last assistant message made a call not yet answered
        self.plan = _answering(requests, messages) if requests else None
        self.model: str | None = None  # the model Roo's environment details named last

    def requests(self, at: int, model: str | None) -> Iterator[Usage]:
        """The usage of the UI log's requests answered by the message at ``at``."""
        for request in self.plan.pop(at, ()) if self.plan else ():
            yield request_usage(request, self.session, model or self.model, self.line, None)

    def message(self, message: Any, index: int) -> Iterator[Record]:
        parts = (index,)
        if not isinstance(message, dict):
            yield BadRecord("message is not an object", self.line, json_path(*parts))
            return
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            self.source.model_turns += 1
            info = message.get("modelInfo")
            model = info.get("modelId") if isinstance(info, dict) else None
            model = model if isinstance(model, str) and model else None
            if self.plan is not None:
                yield from self.requests(index, model)
            elif (usage := self.metrics(message, index, model)) is not None:
                yield usage
            self.open = False
            for record in content_calls(
                content, self.ledger, self.session, self.line, (index, "content")
            ):
                self.open = self.open or record.__class__ is ToolCall
                yield record
            return
        if role != "user":
            return
        if self.plan is not None:
            self.model = _environment_model(content) or self.model
        answered = False
        for record in content_calls(
            content, self.ledger, self.session, self.line, (index, "content"), calls=False
        ):
            answered = True
            yield record
        if self.open and not answered and _results_text(content):
            answered = True
            yield ToolResult(self.session, None, content, None, self.line, json_path(*parts))
        self.open = False
        if not answered and self.ledger.user_turns and _spoken(content):
            yield UserTurn(self.session, self.line, json_path(*parts))

    def metrics(self, message: dict[str, Any], index: int, model: str | None) -> Usage | None:
        """Cline's own figures of a turn (``metrics.tokens``), where no UI log gives them:
        ``completion`` the output, ``cached`` the cache (reads and writes in one), ``prompt``
        the input, read as ``tokensIn`` is (module docstring, "Tokens")."""
        metrics = message.get("metrics")
        figures = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(figures, dict):
            return None
        prompt, cached = tokens(figures.get("prompt")), tokens(figures.get("cached"))
        record = Usage(
            self.session,
            None,
            model,
            output_tokens=tokens(figures.get("completion")),
            cache_read_tokens=cached,
            line=self.line,
            path=json_path(index, "metrics", "tokens"),
        )
        if prompt is not None:
            record.input_tokens = (
                prompt - cached if cached is not None and cached <= prompt else prompt
            )
        return record


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]


def _results_text(content: Any) -> bool:
    """A user message holding the agent's written results (``[tool for 'x'] Result:``)."""
    return any(_RESULT.match(text) for text in _texts(content))


def _spoken(content: Any) -> bool:
    """The user speaking: text that is not one of the agent's result messages."""
    texts = _texts(content)
    return bool(texts) and not any(_RESULT.match(text) for text in texts)


def _environment_model(content: Any) -> str | None:
    """The model Roo's environment details name (``<model>…</model>`` after its mode)."""
    for text in reversed(_texts(content)):
        if "<environment_details>" in text and "<model>" in text:
            found = _ENV_MODEL.findall(text)
            if found:
                return str(found[-1])
    return None


def read_history(source: Source) -> Iterator[Record]:
    """Every call of a task history, in order, with results, usage and user turns."""
    requests, problems = folder_requests(source.name)
    yield from problems
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, value = item
        if not isinstance(value, list):
            yield BadRecord("not a task history: a list of messages", line)
            continue
        task = _Task(source, line, requests, value)
        requests = []  # the UI log's requests are the first history's (a file holds one)
        for index, message in enumerate(value):
            yield from task.message(message, index)
        yield from task.requests(len(value), None)
