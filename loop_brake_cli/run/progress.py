"""Live progress on stderr: one line per event, styled by rich on a terminal.

Events: each call judged (tool, hash prefix, session, verdict and count), each
new reason the hook failed open, and the decision that ended the run. In a
pipe or a CI log every event is one plain line prefixed ``loop-brake run:``,
so it can be grepped; on a terminal the same line, with the verdict coloured.
Identifiers go through ``render.visible``: a tool or session name cannot
forge a line or move the cursor.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from ..core.records import ToolCall
from ..core.verdicts import Verdict
from ..render.visible import visible

__all__ = ["Progress"]

PROG = "loop-brake run"
_STYLES = {"pass": "green", "warn": "yellow", "deny": "bold red", "stop": "bold red"}


def _kind(verdict: Verdict) -> str:
    if verdict.stop:
        return "stop"
    if verdict.denied:
        return "deny"
    return "warn" if verdict.warn_at is not None else "pass"


class Progress:
    """Writes the run's events to stderr; ``quiet`` leaves only notes and the decision."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.calls = 0
        self.denied = 0
        self._lock = threading.Lock()
        self._console: Any = None
        try:
            terminal = sys.stderr is not None and os.isatty(sys.stderr.fileno())
        except (OSError, ValueError):
            terminal = False
        if terminal:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False, soft_wrap=True)

    def _line(self, text: str, style: str | None = None, word: str | None = None) -> None:
        with self._lock:
            try:
                if self._console is not None:
                    from rich.markup import escape

                    body = escape(text)
                    if word is not None and style is not None:
                        body = body.replace(escape(word), f"[{style}]{escape(word)}[/]", 1)
                    self._console.print(f"[dim]{PROG}:[/] {body}")
                else:
                    sys.stderr.write(f"{PROG}: {text}\n")
                    sys.stderr.flush()
            except (OSError, ValueError):
                pass  # stderr gone: the run goes on, its summary files still written

    def call(self, call: ToolCall, verdict: Verdict) -> None:
        self.calls += 1
        if verdict.denied:
            self.denied += 1
        if self.quiet or verdict.duplicate:
            return
        kind = _kind(verdict)
        limit = verdict.limit if verdict.limit is not None else verdict.max_repeats
        text = (
            f"call {self.calls}: {visible(verdict.tool_name)} {verdict.hash_prefix} "
            f"session {visible(verdict.session_id)}: {kind} {verdict.count}/{limit}"
        )
        if verdict.denied:
            text += f" ({self.denied} denied so far)"
        self._line(text, _STYLES[kind], f"{kind} {verdict.count}/{limit}")

    def note(self, text: str, style: str | None = "yellow") -> None:
        """A line that is always shown (a hook failure, the decision, the outcome)."""
        self._line(visible(text, lines=True), style, visible(text, lines=True) if style else None)
