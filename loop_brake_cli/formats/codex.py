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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..brake import DEFAULT_SESSION
from ..reader import TOO_LONG, Source
from ..records import BadRecord, Record, ToolCall, line_too_long
from . import FormatInfo
from ._common import RecentIds, load_json_line, parse_arguments
from ._sniff import head_objects

INFO = FormatInfo(
    name="codex",
    description="OpenAI Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl)",
    line_based=True,
    patterns=("*.jsonl",),
)

# Tuples, not sets: membership by ==, so a list or object "type" never raises.
_ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_PREFIX = re.compile(rb'^\s*\{"timestamp":"[^"]*","type":"(session_meta|response_item|event_msg)"')


def _is_legacy_meta(obj: dict[str, Any]) -> bool:
    return "type" not in obj and "id" in obj and "timestamp" in obj and "instructions" in obj


def sniff(head: bytes) -> bool:
    """A rollout envelope line (or a legacy rollout's first line) in the head."""
    for obj in head_objects(head):
        if obj.get("type") in _ENVELOPES and isinstance(obj.get("payload"), dict):
            return True
        if _is_legacy_meta(obj) or obj.get("record_type") == "state":
            return True
    return bool(_PREFIX.match(head.lstrip(b"\xef\xbb\xbf")))


class _Reader:
    """The state a rollout needs between lines: the session and the ids already counted."""

    def __init__(self) -> None:
        self.session: str | None = None
        self.seen = RecentIds()

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
            if payload.get("type") in _CALLS:
                yield from self.call(payload, number, "$.payload")
        elif kind in _CALLS and "payload" not in obj:  # legacy: a bare response item
            yield from self.call(obj, number, None)

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
        session = DEFAULT_SESSION if self.session is None else self.session
        yield ToolCall(name, args, session, call_id, number, None, unparsed)


# A line that holds a call or the session id contains one of these.
_NEEDED = (b'_call"', b'"session_meta"', b'"instructions"')


def _skippable(raw: bytes) -> bool:
    """No call or session id in it, and the outline of a whole object (else parse and report)."""
    if any(needle in raw for needle in _NEEDED):
        return False
    stripped = raw.strip()
    return stripped[:1] == b"{" and stripped[-1:] == b"}"


def parse(source: Source) -> Iterator[Record]:
    """Stream the calls: each one is yielded as soon as its line is read.

    Lines that cannot hold a call or the session id (outputs, reasoning,
    ``event_msg`` echoes: most of a rollout's bytes) are not parsed unless
    they look truncated or garbled, which is reported.
    """
    reader = _Reader()
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if _skippable(raw):
            continue
        obj, error = load_json_line(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        yield from reader.line(obj, number)
