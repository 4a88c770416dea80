"""The agent's stdout as it comes: passed through unchanged, judged, and when to end the run.

The bytes are read from the agent's pipe in chunks and written through, each
chunk as soon as it is read, to stdout or ``--output FILE``: the agent's own
stream, byte for byte (the only place a tool's arguments may appear, because
the agent wrote them). The same bytes feed the format's adapter
(``formats/``: the headless streams ``filter`` reads), whose records are judged
by an in-memory brake with the run's maxRepeats and policy
(``readers/pipeline.judge``), the rule the injected hook applies, and counted by
the replay's ``Analyzer`` for the summary.

The run is ended (``Decision``) on:

* a policy ``[stop]`` verdict;
* ``stop_after`` denials the agent ignored: a denied call whose session's
  previous verdict was a denial of the same call (the agent was told, and made
  it again). With the hook injected the agent is told at the first denial; where
  it cannot be (OpenCode, or a hook that failed open or never ran) each repeat is
  ignored too, so the run still ends, ``stop_after`` calls later;
* for an agent the hook cannot reach at all, the first denial (nothing else
  would stop the call).

A reader that goes away (stdout closed, ``| head``) ends the agent too, as
the broken pipe would have ended it without the run in between.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..core.brake import LoopBrake
from ..core.records import Record, ToolCall
from ..core.verdicts import Verdict

__all__ = ["Decision", "Passthrough", "Watch"]

CHUNK = 1 << 16
HOLD_MAX = 1 << 20
"""The longest unfinished line ``whole_lines`` holds; a longer one is written as it comes."""


class Passthrough:
    """Where the agent's bytes go; a closed reader is remembered, never raised.

    ``whole_lines``: a chunk's last, unfinished line is held until its end comes (or
    the stream's, ``finish``), so the stream shares a terminal with our lines without
    one of ours landing inside one of the agent's; the bytes are the same."""

    def __init__(
        self, out: BinaryIO, on_closed: Callable[[], None], whole_lines: bool = False
    ) -> None:
        self.out = out
        self.closed = False
        self.error: str | None = None
        self.on_closed = on_closed
        self.whole_lines = whole_lines
        self._held = b""

    def write(self, data: bytes) -> None:
        if self.closed or not data:
            return
        if self.whole_lines:
            data = self._held + data
            end = data.rfind(b"\n") + 1
            if len(data) - end > HOLD_MAX:
                end = len(data)
            data, self._held = data[:end], data[end:]
            if not data:
                return
        self._write(data)

    def finish(self) -> None:
        """The stream ended: what is held (an unfinished last line) is written."""
        held, self._held = self._held, b""
        if held and not self.closed:
            self._write(held)

    def _write(self, data: bytes) -> None:
        try:
            self.out.write(data)
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            self.on_closed()
        except (OSError, ValueError) as exc:
            self.closed = True
            self.error = getattr(exc, "strerror", None) or exc.__class__.__name__
            self.on_closed()


class _Tee:
    """A raw reader of the agent's pipe whose every chunk is first passed through."""

    def __init__(self, fd: int, through: Passthrough, on_chunk: Callable[[], None]) -> None:
        self.fd = fd
        self.through = through
        self.on_chunk = on_chunk

    def read1(self, size: int = CHUNK) -> bytes:
        data = os.read(self.fd, size)
        if data:
            self.through.write(data)
        else:
            self.through.finish()
        self.on_chunk()
        return data

    read = read1

    def close(self) -> None:
        pass


@dataclass
class Decision:
    """Why the run ended the agent: ``kind`` ``stop`` (a policy stop), ``ignored``
    (``--stop-after`` ignored denials), ``unreachable`` (a denial the agent could not
    be told), ``output`` (the reader went away) or ``interrupted``; the call that
    decided it (tool, hash prefix, session; none for output and interrupted)."""

    kind: str
    tool: str | None = None
    prefix: str | None = None
    session: str | None = None
    count: int = 0

    def text(self) -> str:
        call = f"{self.tool} {self.prefix}" if self.tool else ""
        if self.kind == "stop":
            return f"the policy stops the run at {call} (session {self.session})"
        if self.kind == "ignored":
            return (
                f"{self.count} denial(s) the agent ignored, the last of {call} "
                f"(session {self.session})"
            )
        if self.kind == "unreachable":
            return (
                f"{call} was denied and the hook cannot reach this agent (session {self.session})"
            )
        if self.kind == "output":
            return "standard output was closed"
        return "interrupted"


@dataclass
class Watch:
    """Judges the stream's calls and decides when the run ends."""

    brake: LoopBrake
    analyzer: Any
    stop_after: int
    reachable: bool
    on_call: Callable[[ToolCall, Verdict], None]
    on_decision: Callable[[Decision], None]
    session_key: str | None = None
    decision: Decision | None = None
    ignored: int = 0
    sessions: dict[str, tuple[bool, str]] = field(default_factory=dict)
    stopped_sessions: set[str] = field(default_factory=set)

    def records(self, records: Iterator[Record]) -> Iterator[Record]:
        """``records`` with every session named ``session_key`` (``--session``): the
        agent's own id replaced, a subagent's suffix kept."""
        key = self.session_key
        if key is None:
            yield from records
            return
        for record in records:
            session = getattr(record, "session", None)
            if isinstance(session, str):
                _, slash, rest = session.partition("/")
                record.session = key + slash + rest  # type: ignore[union-attr]
            yield record

    def see(self, record: Record, verdict: Verdict | None) -> None:
        self.analyzer.add(record, verdict)
        if verdict is None or record.__class__ is not ToolCall:
            return
        self.on_call(record, verdict)  # type: ignore[arg-type]
        if verdict.duplicate:
            return
        session = verdict.session_id
        previous = self.sessions.get(session)
        self.sessions[session] = (verdict.denied, verdict.hash_prefix)
        if not verdict.denied or self.decision is not None:
            return
        if verdict.stop:
            self.decide(Decision("stop", verdict.tool_name, verdict.hash_prefix, session))
            return
        if not self.reachable:
            self.decide(Decision("unreachable", verdict.tool_name, verdict.hash_prefix, session))
            return
        if previous is not None and previous == (True, verdict.hash_prefix):
            self.ignored += 1
        if self.ignored >= self.stop_after and (self.ignored or self.stop_after == 0):
            self.decide(
                Decision("ignored", verdict.tool_name, verdict.hash_prefix, session, self.ignored)
            )

    def decide(self, decision: Decision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        if decision.session is not None:
            self.stopped_sessions.add(decision.session)
        self.on_decision(decision)
