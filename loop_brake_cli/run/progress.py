"""Live progress on stderr: the run's events counted, and shown by a view.

Events: each call judged (tool, hash prefix, session, verdict and count), each
new reason the hook failed open, and the decision that ended the run. Without
a view (a pipe, a CI log, ``TERM=dumb``) every event is one plain line prefixed
``loop-brake run:``, so it can be grepped; on a terminal the command passes a
view drawn by ``render/run_view.py`` (coloured lines, or a live panel), so this
module imports no rich. Identifiers go through ``render.visible``: a tool or
session name cannot forge a line or move the cursor.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from ..core.records import ToolCall
from ..core.verdicts import Verdict
from ..render.run_view import CallEvent, RunTally, call_text
from ..render.visible import visible

__all__ = ["Progress"]

PROG = "loop-brake run"


def _kind(verdict: Verdict) -> str:
    if verdict.stop:
        return "stop"
    if verdict.denied:
        return "deny"
    return "warn" if verdict.warn_at is not None else "pass"


class Progress:
    """Counts the run's calls and shows them; ``quiet`` leaves only notes and the decision.

    ``view`` (``render/run_view.py``) has ``start``, ``call``, ``note``, ``decision``
    and ``close``; None writes plain lines."""

    def __init__(self, quiet: bool = False, view: Any = None) -> None:
        self.quiet = quiet
        self.view = view
        self.calls = 0
        self.passes = 0
        self.warnings = 0
        self.denied = 0
        self.ignored: Callable[[], int] = lambda: 0
        self._lock = threading.Lock()

    @property
    def whole_lines(self) -> bool:
        """Whether the agent's stream must be passed through whole lines at a time (it
        shares the view's terminal)."""
        return bool(getattr(self.view, "whole_lines", False))

    @property
    def owns_terminal(self) -> bool:
        """Whether the view redraws the terminal: then nothing else may write there, and
        the agent's stderr comes to ``agent_line`` through a pipe."""
        return bool(getattr(self.view, "owns_terminal", False))

    def agent_line(self, line: bytes) -> None:
        """One line the agent (or a hook it ran) wrote to its stderr."""
        if self.view is not None:
            self.view.agent_line(line)

    def start(self, agent: str, stop_after: int, ignored: Callable[[], int]) -> None:
        """The run's agent is known and its stream about to be read."""
        self.ignored = ignored
        if self.view is not None:
            self.view.start(agent, stop_after)

    def tally(self) -> RunTally:
        return RunTally(self.calls, self.passes, self.warnings, self.denied, self.ignored())

    def _line(self, text: str) -> None:
        with self._lock:
            try:
                sys.stderr.write(f"{PROG}: {text}\n")
                sys.stderr.flush()
            except (OSError, ValueError, AttributeError):
                pass  # stderr gone: the run goes on, its summary files still written

    def call(self, call: ToolCall, verdict: Verdict) -> None:
        self.calls += 1
        kind = _kind(verdict)
        if verdict.denied:
            self.denied += 1
        elif kind == "warn":
            self.warnings += 1
        else:
            self.passes += 1
        if self.quiet or verdict.duplicate:
            return
        limit = verdict.limit if verdict.limit is not None else verdict.max_repeats
        event = CallEvent(
            self.calls,
            kind,
            verdict.tool_name,
            verdict.hash_prefix,
            verdict.session_id,
            verdict.count,
            limit,
            verdict.denied,
            self.denied,
        )
        if self.view is not None:
            self.view.call(event, self.tally())
        else:
            self._line(call_text(event))

    def note(self, text: str, style: str | None = "yellow") -> None:
        """A line that is always shown (a hook failure, the outcome)."""
        if self.view is not None:
            self.view.note(visible(text, lines=True), style)
        else:
            self._line(visible(text, lines=True))

    def decision(self, text: str) -> None:
        """Why the run is ending the agent: always shown."""
        if self.view is not None:
            self.view.decision(visible(text, lines=True))
        else:
            self._line(f"ending the agent: {visible(text, lines=True)}")

    def close(self, outcome: str | None = None) -> None:
        """The agent is gone: a view draws its last frame (``outcome``: how it ended)."""
        if self.view is not None:
            self.view.close(self.tally(), outcome)
