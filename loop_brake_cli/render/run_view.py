"""``loop-brake run``'s live progress, drawn: coloured lines, or a live panel on a terminal.

``run/progress.py`` counts the run's events and hands each to a view; this
module holds the views that need rich (imported only when one is built), and
the one wording of a call's line that every view shares (``call_text``), so the
plain lines of a CI log, the coloured lines and the panel say the same thing.

* ``StyledLines``: the plain line, its verdict coloured (a terminal whose own
  screen the agent's stream also writes to, or ``-q``);
* ``RunPanel``: a rich ``Live`` panel on stderr: the agent, the elapsed time,
  calls, passes, warnings, denials, ignored denials against ``--stop-after``,
  the last few verdicts, and at the end the decision. Only when the agent's
  stream does not go to the same terminal (``pick_view``): a live display
  redraws by moving the cursor up over its last frame, and a line the agent
  writes in between would be overwritten or torn.

A call is shown by tool name, the 12-hex hash prefix and its count against the
limit, never by an argument; every identifier goes through ``visible``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple

from .visible import visible

__all__ = ["CallEvent", "RunPanel", "RunTally", "StyledLines", "call_text", "pick_view"]

PROG = "loop-brake run"
STYLES = {"pass": "green", "warn": "yellow", "deny": "bold red", "stop": "bold red"}
RECENT = 5
"""How many of the last verdicts the panel lists."""


class CallEvent(NamedTuple):
    """One judged call as people see it: never its arguments."""

    number: int
    kind: str  # pass, warn, deny, stop
    tool: str
    prefix: str
    session: str
    count: int
    limit: int | None
    denied: bool
    denied_so_far: int


class RunTally(NamedTuple):
    """The run's counts so far."""

    calls: int
    passes: int
    warnings: int
    denials: int
    ignored: int


def call_text(event: CallEvent) -> str:
    """The line a call is shown as (without the ``loop-brake run:`` prefix)."""
    text = (
        f"call {event.number}: {visible(event.tool)} {event.prefix} "
        f"session {visible(event.session)}: {event.kind} {event.count}/{event.limit}"
    )
    if event.denied:
        text += f" ({event.denied_so_far} denied so far)"
    return text


def _same_terminal(a: int, b: int) -> bool:
    try:
        return os.path.samestat(os.fstat(a), os.fstat(b))
    except OSError:
        return False


def pick_view(
    quiet: bool, stream_to_stdout: bool, env: Mapping[str, str], stderr_fd: int = 2
) -> Any:
    """The view for a run, or None for plain lines.

    Plain lines unless stderr is a terminal and ``TERM`` is not ``dumb``. On a
    terminal: coloured lines under ``-q`` (notes and the decision only) or when the
    agent's stream goes to the same terminal (stdout on it, no ``--output``);
    otherwise the live panel. ``NO_COLOR`` is rich's own: a panel without colour."""
    try:
        terminal = os.isatty(stderr_fd)
    except (OSError, ValueError):
        terminal = False
    if not terminal or env.get("TERM", "") == "dumb":
        return None
    shared = stream_to_stdout and _same_terminal(1, stderr_fd)
    if quiet or shared:
        return StyledLines(shared)
    return RunPanel()


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


class StyledLines:
    """The plain lines, with the verdict coloured.

    ``whole_lines``: the agent's stream goes to this same terminal, so it is written
    through a line at a time (``run/watch.Passthrough``): a line of ours never lands
    in the middle of one of the agent's."""

    def __init__(self, whole_lines: bool = False) -> None:
        self.whole_lines = whole_lines
        self.console = _console()
        self._lock = threading.Lock()

    def start(self, agent: str, stop_after: int) -> None:
        pass

    def _print(self, text: str, style: str | None, word: str | None) -> None:
        from rich.markup import escape

        body = escape(text)
        if word is not None and style is not None:
            body = body.replace(escape(word), f"[{style}]{escape(word)}[/]", 1)
        with self._lock:
            try:
                self.console.print(f"[dim]{PROG}:[/] {body}")
            except (OSError, ValueError):
                pass  # stderr gone: the run goes on, its summary files still written

    def call(self, event: CallEvent, tally: RunTally) -> None:
        word = f"{event.kind} {event.count}/{event.limit}"
        self._print(call_text(event), STYLES[event.kind], word)

    def note(self, text: str, style: str | None) -> None:
        self._print(text, style, text if style else None)

    def decision(self, text: str) -> None:
        self.note(f"ending the agent: {text}", "bold red")

    def close(self, tally: RunTally, outcome: str | None) -> None:
        pass


class RunPanel:
    """A live panel on stderr, redrawn on each event and four times a second.

    It owns the terminal (``owns_terminal``): the agent's stderr, its hooks' notes
    among it, reaches the panel through a pipe (``agent_line``) and is printed above
    it, its colours kept and any other control sequence dropped (``Text.from_ansi``),
    so no write of the agent's lands inside a frame."""

    owns_terminal = True

    def __init__(self) -> None:
        self.console = _console()
        self._lock = threading.Lock()
        self.agent = ""
        self.stop_after = 0
        self.started = time.monotonic()
        self.tally = RunTally(0, 0, 0, 0, 0)
        self.recent: deque[CallEvent] = deque(maxlen=RECENT)
        self.ended: str | None = None
        self.live: Any = None

    def start(self, agent: str, stop_after: int) -> None:
        from rich.live import Live

        self.agent = visible(agent)
        self.stop_after = stop_after
        self.started = time.monotonic()
        self.live = Live(
            get_renderable=self.render,
            console=self.console,
            refresh_per_second=4,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        try:
            self.live.start()
        except (OSError, ValueError):
            self.live = None

    def _refresh(self) -> None:
        if self.live is not None:
            try:
                self.live.refresh()
            except (OSError, ValueError):
                pass

    def call(self, event: CallEvent, tally: RunTally) -> None:
        with self._lock:
            self.tally = tally
            self.recent.append(event)
        self._refresh()

    def note(self, text: str, style: str | None) -> None:
        """Printed above the panel, which stays at the bottom."""
        from rich.markup import escape

        body = f"[{style}]{escape(text)}[/]" if style else escape(text)
        try:
            self.console.print(f"[dim]{PROG}:[/] {body}")
        except (OSError, ValueError):
            pass

    def agent_line(self, line: bytes) -> None:
        from rich.text import Text

        text = Text.from_ansi(line.decode("utf-8", "replace").rstrip("\r\n"))
        try:
            self.console.print(text)
        except (OSError, ValueError):
            pass

    def decision(self, text: str) -> None:
        with self._lock:
            self.ended = f"ending the agent: {text}"
        self._refresh()

    def close(self, tally: RunTally, outcome: str | None) -> None:
        """The last frame, with the final counts and how the run ended, left on the screen."""
        with self._lock:
            self.tally = tally
            if self.ended is None and outcome is not None:
                self.ended = outcome
        if self.live is not None:
            try:
                self.live.stop()
            except (OSError, ValueError):
                pass
            self.live = None

    def render(self) -> Any:
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            tally, recent, ended = self.tally, list(self.recent), self.ended
        elapsed = int(time.monotonic() - self.started)
        counts = Table.grid(padding=(0, 2))
        for _ in range(6):
            counts.add_column(justify="right")
        counts.add_row("calls", "passes", "warnings", "denials", "ignored", "elapsed")
        counts.add_row(
            str(tally.calls),
            Text(str(tally.passes), "green"),
            Text(str(tally.warnings), "yellow" if tally.warnings else ""),
            Text(str(tally.denials), "bold red" if tally.denials else ""),
            Text(f"{tally.ignored}/{self.stop_after}", "bold red" if tally.ignored else ""),
            f"{elapsed // 60}:{elapsed % 60:02d}",
        )
        verdicts = Table.grid(padding=(0, 2))
        for event in recent:
            verdicts.add_row(
                Text(f"#{event.number}", "dim"),
                Text(f"{event.kind} {event.count}/{event.limit}", STYLES[event.kind]),
                Text(visible(event.tool), overflow="ellipsis", no_wrap=True),
                Text(event.prefix, "dim"),
            )
        body = Table.grid()
        body.add_row(counts)
        body.add_row(verdicts if recent else Text("no call yet", "dim"))
        if ended is not None:
            body.add_row(Text(visible(ended, lines=True), "bold red" if tally.denials else "bold"))
        return Panel(body, title=f"{PROG} · {self.agent}", title_align="left", expand=False)
