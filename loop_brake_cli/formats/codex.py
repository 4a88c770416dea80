"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``.

Every line is an envelope ``{timestamp, type, payload}``; calls are the
``response_item`` lines whose payload is a call::

    {"timestamp":"…","type":"response_item","payload":{"type":"function_call",
     "name":"exec_command","arguments":"{\\"cmd\\":\\"ls\\"}","call_id":"call_…"}}

* ``function_call``: ``arguments`` is a JSON string, parsed before hashing (a
  string that does not parse is hashed as itself and counted as unparseable).
  A ``namespace`` is prefixed to the name exactly as recorded, so MCP tools
  read ``namespace:"mcp__node_repl__", name:"js"`` become ``mcp__node_repl__js``
  (the flattened name Codex itself shows).
* ``custom_tool_call`` (``apply_patch``): ``input`` is free text by design, not
  JSON; the text itself is hashed and it is not counted as unparseable.
* ``local_shell_call``: tool ``local_shell``, args the ``action`` object;
  ``call_id`` may be null.
* ``event_msg`` lines (``exec_command_end``, ``mcp_tool_call_end``…) echo calls
  already recorded and are never counted; other line types hold no calls. A
  call id seen again (a resumed or repeated record) is not counted twice.
* The session is the first ``session_meta``'s ``payload.id`` (a resumed or
  forked rollout keeps the id it started with); calls before any are "default".
* Legacy rollouts (first line ``{id, timestamp, instructions}``, then bare
  response items, ``{"record_type":"state"}`` lines) are read the same way.
* Results: ``function_call_output`` (which also answers ``local_shell_call``)
  and ``custom_tool_call_output``, each a ``ToolResult`` paired by ``call_id``;
  the result is ``output`` as recorded (a string; older versions wrote a JSON
  string ``{"output", "metadata"}``, kept as that string). When the reader wants
  no results (``Source.results`` False: no progress mode), they are left out and
  a line holding only an output is not parsed, as before results were read (so
  one that is not JSON, yet looks like a whole object, is then not reported).
* Errors (``ToolResult.error``, for a policy's ``[same_error]``): an output is
  an error where Codex recorded a failure in a field of its own, never read from
  what the command printed: an exit code other than 0 in the JSON output of
  older versions (``{"output", "metadata": {"exit_code"}}``, also
  ``apply_patch``'s), or in the header Codex writes above ``Output:`` (``Process
  exited with code N`` of unified exec, ``Exit code: N`` of the shell tool; only
  a header whose every line is one of Codex's own), or an ``event_msg`` written
  for the same ``call_id`` before the output: ``exec_command_end`` with a
  non-zero ``exit_code`` or ``"status": "failed"``, ``patch_apply_end`` with
  ``"success": false``, ``mcp_tool_call_end`` whose ``result`` is ``Err`` or has
  ``isError: true``. An end event after the output (a command that went on
  running in the background) does not change it. Other outputs are no error.
* User turns (only when the reader asks: ``Source.user_turns``, a policy's
  ``reset_on_user_turn``): ``event_msg`` ``user_message`` events, one per
  message the user typed. The ``response_item`` messages of role ``user`` are
  not read: Codex also writes its AGENTS.md instructions and environment
  context as such messages, which are not the user speaking, and the typed
  message is there twice. The message is never read.
* Usage: ``event_msg`` ``token_count`` events. ``info.total_token_usage`` is the
  session's running total and ``info.last_token_usage`` the latest model
  response's own figures; Codex writes the same event more than once (the total
  unchanged), so an event is a new turn only when the total changed, and the
  turn's figures are ``last_token_usage`` (the change of the total where it is
  missing). OpenAI's ``input_tokens`` include ``cached_input_tokens``: input is
  reported as their difference, the cached part as cache reads; reasoning is
  ``reasoning_output_tokens`` (a part of the output); no cache writes are
  recorded. The model is the latest ``turn_context``'s ``payload.model``.
* Attribution: the event follows the calls of its response, so once a rollout
  has shown a ``token_count`` event, the first call of each turn (the first
  since the last event) is preceded by a ``Usage`` with no figures yet, which
  the turn's event fills in place (``records.Usage``: figures are read when the
  session's next ``Usage`` arrives or the input ends). An event with no open
  turn (a response without calls) is a ``Usage`` of its own. Calls before a
  rollout's first ``token_count`` event have no turn (their cost is unknown):
  a rollout of a version without the events then reports no usage at all,
  never a turn of zeros.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ..core.records import DEFAULT_SESSION, BadRecord, Record, ToolCall, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import RecentIds, fill_codex_usage, parse_arguments, tokens
from ._sniff import UNICODE_ESCAPE, head_objects, mentions
from ._stream_lines import event_lines

INFO = FormatInfo(
    name="codex",
    description="OpenAI Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl)",
    line_based=True,
    patterns=("*.jsonl",),
)

# Tuples, not sets: membership by ==, so a list or object "type" never raises.
_ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_PREFIX = re.compile(rb'^\s*\{"timestamp":"[^"]*","type":"(session_meta|response_item|event_msg)"')
# A head without one of these bytes has no ``type``, ``record_type`` or ``instructions``
# key (nor the prefix): no line need be parsed.
_KEY_WORDS = (b'type"', b'instructions"', UNICODE_ESCAPE)
# The events that end a call and say whether it failed (read only when results are).
_ENDS = ("exec_command_end", "patch_apply_end", "mcp_tool_call_end")
# The lines Codex writes above ``Output:`` in an output string: a header made only of
# these is Codex's own (what the command printed comes after ``Output:``).
_HEADER_LINE = re.compile(
    r"(?:Chunk ID: \S+|Wall time: [0-9.]+ seconds|Process running with session ID \d+"
    r"|Original token count: \d+|Total output lines: \d+"
    r"|Process exited with code (-?\d+)|Exit code: (-?\d+))"
)
_HEADER_LINES = 8  # a header longer than Codex writes is not one
_FAILED_KEPT = 1024  # failed calls whose output has not come yet, at most


def _is_legacy_meta(obj: dict[str, Any]) -> bool:
    return "type" not in obj and "id" in obj and "timestamp" in obj and "instructions" in obj


def sniff(head: bytes) -> bool:
    """A rollout envelope line (or a legacy rollout's first line) in the head."""
    if not mentions(head, _KEY_WORDS):
        return False
    for obj in head_objects(head):
        if obj.get("type") in _ENVELOPES and isinstance(obj.get("payload"), dict):
            return True
        if _is_legacy_meta(obj) or obj.get("record_type") == "state":
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


class _Reader:
    """The state a rollout needs between lines: the session and the ids already counted."""

    def __init__(self, results: bool = True, user_turns: bool = False) -> None:
        self.results = results  # ToolResult records wanted
        self.user_turns = user_turns  # UserTurn records wanted
        self.session: str | None = None
        self.seen = RecentIds()
        self.model: str | None = None
        self.counting = False  # a token_count event was seen: turns are reported
        self.total: Any = None  # the running total of the last token_count event
        self.open: Usage | None = None  # the turn whose calls await its event
        self.failed: dict[str, None] = {}  # call ids an end event said failed, output pending

    def line(self, obj: Any, number: int) -> Iterator[Record]:
        if not isinstance(obj, dict):
            yield BadRecord("not a JSON object", number)
            return
        kind = obj.get("type")
        if kind == "session_meta" or _is_legacy_meta(obj):
            meta = obj.get("payload") if kind == "session_meta" else obj
            session = meta.get("id") if isinstance(meta, dict) else None
            if not isinstance(session, str):
                yield BadRecord("session_meta without a string payload.id", number)
            elif self.session is None:
                self.session = session
            return
        if kind == "response_item":
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                yield BadRecord("response_item without a payload object", number, "$.payload")
                return
            item = payload.get("type")
            if item in _CALLS:
                yield from self.call(payload, number, "$.payload")
            elif item in _OUTPUTS and self.results:
                yield from self.result(payload, number, "$.payload")
        elif kind == "event_msg":
            payload = obj.get("payload")
            event = payload.get("type") if isinstance(payload, dict) else None
            if event == "token_count":
                # an event: payload is a dict
                yield from self.token_count(payload.get("info"), number)  # type: ignore[union-attr]
            elif event == "user_message" and self.user_turns:
                yield UserTurn(self._session(), number)
            elif event in _ENDS and self.results:
                self.end_event(payload)  # type: ignore[arg-type]  # an event: a dict
        elif kind == "turn_context":
            payload = obj.get("payload")
            model = payload.get("model") if isinstance(payload, dict) else None
            if isinstance(model, str):
                self.model = model
        elif kind in _CALLS and "payload" not in obj:  # legacy: a bare response item
            yield from self.call(obj, number, None)
        elif kind in _OUTPUTS and "payload" not in obj and self.results:
            yield from self.result(obj, number, None)

    def _session(self) -> str:
        return DEFAULT_SESSION if self.session is None else self.session

    def result(self, item: dict[str, Any], number: int, path: str | None) -> Iterator[Record]:
        """A call's output, paired by ``call_id`` (without a string id it cannot be: skipped)."""
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            output = item.get("output")
            failed = self.failed.pop(call_id, False) is None or _output_failed(output)
            yield ToolResult(
                self._session(), call_id, output, None, number, path, error=failed or None
            )

    def end_event(self, event: dict[str, Any]) -> None:
        """Remember a call an end event says failed, for its output to come (bounded)."""
        call_id = event.get("call_id")
        if isinstance(call_id, str) and _end_failed(event):
            failed = self.failed
            failed[call_id] = None
            if len(failed) > _FAILED_KEPT:
                del failed[next(iter(failed))]  # the oldest: its output never came

    def token_count(self, info: Any, number: int) -> Iterator[Record]:
        """A new turn's figures, into the turn its calls opened or as a turn of its own."""
        self.counting = True
        if not isinstance(info, dict):
            return  # info null: rate limits only, before the first response
        total = info.get("total_token_usage")
        if total is not None and total == self.total:
            return  # the same event written again
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            last = _difference(total, self.total)
        self.total = total
        usage = self.open
        self.open = None
        if usage is None:
            usage = Usage(self._session(), None, self.model)
            yield usage
        usage.line = number
        usage.path = "$.payload.info.last_token_usage"
        fill_codex_usage(usage, last)

    def call(self, item: dict[str, Any], number: int, path: str | None) -> Iterator[Record]:
        kind = item["type"]
        call_id = item.get("call_id")
        if call_id is not None and not isinstance(call_id, str):
            yield BadRecord(f"{kind} call_id is not a string", number, path)
            return
        unparsed = False
        if kind == "local_shell_call":
            name: Any = "local_shell"
            action = item.get("action")
            args: Any = {} if action is None else action
        else:
            name = item.get("name")
            if not isinstance(name, str):
                yield BadRecord(f"{kind} without a string name", number, path)
                return
            if kind == "function_call":
                namespace = item.get("namespace")
                if isinstance(namespace, str):
                    name = namespace + name
                elif namespace is not None:
                    yield BadRecord("function_call namespace is not a string", number, path)
                    return
                args, unparsed = parse_arguments(item.get("arguments"))
            else:  # custom_tool_call: free text by design, hashed as the text
                raw = item.get("input")
                args = "" if raw is None else raw
        if call_id is not None and self.seen.seen(call_id):
            return
        session = self._session()
        if self.counting and self.open is None:
            self.open = Usage(session, None, self.model, line=number, path=path)
            yield self.open
        yield ToolCall(name, args, session, call_id, number, None, unparsed)


def _end_failed(event: dict[str, Any]) -> bool:
    """Whether an ``*_end`` event records that its call failed (module docstring)."""
    kind = event["type"]
    if kind == "exec_command_end":
        code = event.get("exit_code")
        return event.get("status") == "failed" or (code.__class__ is int and code != 0)
    if kind == "patch_apply_end":
        return event.get("success") is False
    result = event.get("result")  # mcp_tool_call_end: {"Ok": CallToolResult} or {"Err": text}
    if not isinstance(result, dict):
        return False
    ok = result.get("Ok")
    return "Err" in result or (isinstance(ok, dict) and ok.get("isError") is True)


def _output_failed(output: Any) -> bool:
    """Whether an output records a non-zero exit code in Codex's own fields: the
    ``metadata`` of an older JSON output, or the header above ``Output:``."""
    if output.__class__ is not str:
        return False
    if output.startswith("{"):
        try:
            value = json.loads(output)
        except (ValueError, RecursionError):
            return False
        metadata = value.get("metadata") if isinstance(value, dict) else None
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        return code.__class__ is int and code != 0
    header, found, _ = output.partition("\nOutput:\n")
    if not found:
        return False
    lines = header.split("\n", _HEADER_LINES)
    if len(lines) > _HEADER_LINES:
        return False
    failed = False
    for line in lines:
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            return False  # not Codex's header: nothing is read from it
        code = match.group(1) or match.group(2)
        failed = failed or (code is not None and int(code) != 0)
    return failed


def _difference(total: Any, before: Any) -> dict[str, Any]:
    """``total`` minus ``before`` per key (an event without ``last_token_usage``)."""
    if not isinstance(total, dict):
        return {}
    if not isinstance(before, dict):
        return total
    out = {}
    for key, value in total.items():
        old = before.get(key, 0)
        if tokens(value) is not None and tokens(old) is not None and value >= old:
            out[key] = value - old
    return out


# A line that holds a call, a result, usage, the model or the session id contains one of these.
_NEEDED = (
    b'_call"',
    b'_output"',
    b'"token_count"',
    b'"turn_context"',
    b'"session_meta"',
    b'"instructions"',
    b'_end"',  # the events that end a call (``_ENDS``): whether it failed
)


# The same without results: an output line is then skipped like any other.
_NEEDED_NO_RESULTS = tuple(needle for needle in _NEEDED if needle not in (b'_output"', b'_end"'))
_USER_MESSAGE = b'"user_message"'  # with user turns, one needle more


def parse(source: Source) -> Iterator[Record]:
    """Stream the records: each one is yielded as soon as its line is read.

    Lines that cannot hold a record, the model or the session id (reasoning,
    messages, ``event_msg`` echoes) are not parsed unless they look truncated
    or garbled, which is reported.
    """
    reader = _Reader(source.results, source.user_turns)
    needed = _NEEDED if source.results else _NEEDED_NO_RESULTS
    if source.user_turns:
        needed += (_USER_MESSAGE,)
    return event_lines(source, needed, reader.line)
