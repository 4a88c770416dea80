"""TEMPLATE: copy this file to ``formats/<name>.py`` to read a new transcript format.

Not an adapter itself (its name starts with ``_``, so the registry and its test pass
it over); ``tests/test_formats_template.py`` reads the example below through it, so
the template stays a working adapter. Replace this docstring with the format's own:
what a line or document looks like (a real sample, shortened), then every choice the
adapter makes, since the docstring is the format's specification::

    {"event": "tool", "session": "s1", "id": "c1", "name": "ls", "input": {"path": "."}}
    {"event": "output", "session": "s1", "id": "c1", "output": "a.txt"}
    {"event": "usage", "session": "s1", "turn": "t1", "input_tokens": 10, "output_tokens": 2}

* The call: an ``event: "tool"`` line, tool ``name``, arguments ``input`` (a JSON
  string there is parsed: ``parse_arguments``), call id ``id`` (``""`` is no id).
* The session: ``session``, the file's name when a line has none (``file_session``).
* Results (``ToolResult``, only read when ``source.results``): an ``output`` line,
  paired with its call by ``id``; ``error: true`` is the format's own failure flag
  for a policy's ``[same_error]`` (never read from the text).
* Usage (``Usage``): a ``usage`` line, before the calls of its turn.
* User turns (``UserTurn``, only when ``source.user_turns``): a ``prompt`` line.
* Anything else is passed over; a line that is not JSON, or an event without what
  it needs, is a located ``BadRecord`` (line number, what), and the reading goes on.
  No message quotes input: a tool's arguments may hold secrets.

Then, to register it (``docs/DEVELOPING.md``, "formats/"):

1. ``FORMATS`` in ``formats/__init__.py``: the name, in detection order (before the
   chat-shaped formats, whose sniffs are the most general);
2. ``tests/fixtures/<name>/`` with its files (``SOURCES.md`` says where each came
   from: copied, cut from or written in the shape of which real file), and
   ``samples/formats/<name>.<ext>``, a small example of ours that ``detect`` knows;
3. ``tests/test_formats_<name>.py``: the calls of each fixture as a hand count
   (tool, arguments, id, location), results, usage, no argument in any output
   (``adapter_helpers.assert_canary_hidden``); ``bench/mutants.py`` breaks of its rules;
4. a row in docs/formats.md (its example command is run by the docs test) and in
   docs/policies.md's table of what each input records as an error;
5. ``python tests/test_sniff_decisions.py --record`` (the new column; no other file's
   decision may change).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.records import BadRecord, Record, ToolResult, Usage, UserTurn
from ..readers.reader import Source
from . import FormatInfo
from ._common import (
    CallLedger,
    file_session,
    make_call,
    never_raises,
    tokens,
)
from ._sniff import head_objects, head_text, mentions
from ._stream_lines import event_lines

INFO = FormatInfo(
    name="template",
    description="TEMPLATE: one event a line (tool, output, usage, prompt)",
    line_based=True,  # streamed: works on a live file (tail -f); False for whole documents
    patterns=("*.jsonl",),  # file names a directory replay picks up
)

# A sniff is run on the head (64 KiB) of every file that reaches it in detection order:
# a bytes search first (most heads are another format's), then a pattern that only
# matches a key JSON wrote (quote first, look-behind after: not a \"quoted\" one).
_KEYS = (b'"event"',)
_EVENT = re.compile(rb'"(?<!\\")event"\s*:\s*"(?:tool|output|usage|prompt)"')
# The bytes a line must hold to be worth parsing (``event_lines`` passes over the rest).
_NEEDED = (b'"tool"', b'"output"', b'"usage"', b'"prompt"')


def sniff(head: bytes) -> bool:
    """A line-based head whose first object is one of this format's events."""
    body = head_text(head)
    if not body.startswith(b"{") or not mentions(body, _KEYS) or not _EVENT.search(body):
        return False
    first = next(head_objects(head, limit=1), None)
    return first is not None and first.get("event") in ("tool", "output", "usage", "prompt")


class _Reader:
    """What reading needs across lines: the call ids seen (a call written twice is
    emitted once: ``CallLedger``), and what the run asked for."""

    def __init__(self, source: Source) -> None:
        self.fallback = file_session(source)
        self.ledger = CallLedger()
        self.results = source.results
        self.user_turns = source.user_turns

    def line(self, obj: Any, number: int) -> Iterator[Record]:
        if not isinstance(obj, dict):
            yield BadRecord("not a JSON object", number)
            return
        session = obj.get("session")
        if not (isinstance(session, str) and session):
            session = self.fallback
        event = obj.get("event")
        if event == "tool":
            record = make_call(
                self.ledger, obj.get("name"), obj.get("input"), session, obj.get("id"), number,
                None,
            )  # fmt: skip
            if record is not None:  # None: the same call written again
                yield record
        elif event == "output" and self.results:
            call_id = obj.get("id")
            if isinstance(call_id, str) and call_id and not self.ledger.answered(call_id):
                error = True if obj.get("error") is True else None
                yield ToolResult(session, call_id, obj.get("output"), None, number, None, error)
        elif event == "usage":
            turn = obj.get("turn")
            yield Usage(
                session,
                turn if isinstance(turn, str) and turn else None,
                input_tokens=tokens(obj.get("input_tokens")),
                output_tokens=tokens(obj.get("output_tokens")),
                line=number,
            )
        elif event == "prompt" and self.user_turns:
            yield UserTurn(session, number)


@never_raises  # an adapter never raises on input: a bug becomes one last BadRecord
def parse(source: Source) -> Iterator[Record]:
    """Every call of the file, in order, each once, with its results, usage and the
    user's turns (only as the run asks for them)."""
    yield from event_lines(source, _NEEDED, _Reader(source).line)
