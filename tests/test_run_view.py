"""``loop-brake run``'s progress on a real terminal: a pseudo-terminal (``pty``).

The run's stderr is a pty's slave (its controlling terminal, so a Ctrl-C is the
terminal's own ^C); everything it writes there is drained from the master and
replayed on a small screen (``Screen``: the few control sequences rich's live
display uses; any other is an error, so a sequence it cannot read fails the test
instead of hiding a frame). The stand-in agents are tests/test_run.py's. The
non-terminal lines are pinned by tests/test_run.py itself. Nothing waits on
time: the tests wait for the run to end, or for the agent's stream.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from conftest import ROOT
from test_run import AGENTS, CANARY, Env, alive

COLS, ROWS = 120, 400
CSI = re.compile(rb"\x1b\[([0-9;?]*)([A-Za-z])")


class Screen:
    """A terminal screen: text, ``\\r``, ``\\n``, and rich's CSI sequences."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = [[]]
        self.row = 0
        self.col = 0

    def _put(self, char: str) -> None:
        line = self.rows[self.row]
        line.extend(" " * (self.col - len(line) + 1))
        line[self.col] = char
        self.col += 1

    def feed(self, data: bytes) -> Screen:
        text_at = 0
        for match in CSI.finditer(data):
            self._text(data[text_at : match.start()])
            text_at = match.end()
            params, final = match.group(1).decode(), match.group(2).decode()
            if final == "m" or (params == "?25" and final in "lh"):
                continue  # colours and styles; the cursor hidden or shown
            if final == "A":
                self.row = max(0, self.row - int(params or 1))
            elif final == "K" and params == "2":
                self.rows[self.row] = []
            elif final == "G":
                self.col = int(params or 1) - 1
            else:
                raise AssertionError(f"unexpected control sequence {match.group(0)!r}")
        self._text(data[text_at:])
        return self

    def _text(self, data: bytes) -> None:
        for char in data.decode("utf-8"):
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row += 1
                if self.row == len(self.rows):
                    self.rows.append([])
            else:
                assert char.isprintable(), repr(char)
                self._put(char)

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.rows]


class Terminal:
    """A pty whose master is drained in a thread until every slave is closed."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.data = bytearray()
        self.eof = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:  # EIO: no slave is open any more
                chunk = b""
            if not chunk:
                self.eof.set()
                return
            self.data += chunk

    def spawn(self, env: Env, args: list[str], stream: Path, stdout: int | None, **extra: str):
        """``loop-brake run ARGS`` with this terminal as its controlling terminal and stderr."""
        variables = env.env(stream, **extra)
        for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
            variables.pop(name, None)
        variables.setdefault("TERM", "xterm-256color")
        variables.update({k: v for k, v in extra.items() if k in ("TERM", "NO_COLOR")})
        proc = subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", "run", *args],
            stdin=self.slave,
            stdout=self.slave if stdout is None else stdout,
            stderr=self.slave,
            env=variables,
            cwd=env.tmp,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(self.slave)
        return proc

    def finish(self, proc: subprocess.Popen[bytes]) -> bytes:
        proc.wait(timeout=300)
        assert self.eof.wait(timeout=300), "the terminal was never closed"
        self.thread.join()
        os.close(self.master)
        return bytes(self.data)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def canary_stream(env: Env) -> Path:
    source = ROOT / "samples" / "formats" / "claude-stream.jsonl"
    stream = env.tmp / "canary-stream.jsonl"
    stream.write_text(source.read_text().replace("npm test", CANARY), encoding="utf-8")
    return stream


def panel_frame(lines: list[str]) -> list[str]:
    """The last frame of the panel left on the screen: from its title to its bottom."""
    top = max(i for i, line in enumerate(lines) if line.startswith("╭─ loop-brake run · "))
    bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("╰"))
    return lines[top : bottom + 1]


def test_the_panel_shows_the_run_on_a_terminal(env: Env) -> None:
    """The agent's stream to a file: stderr is the panel. Its last frame has the run's
    counts, the last verdicts by tool and hash prefix, and the decision; the canary,
    in every looping call's arguments, is nowhere on the terminal."""
    terminal = Terminal()
    out = env.tmp / "agent.jsonl"
    proc = terminal.spawn(
        env,
        ["--output", str(out), "--json", str(env.tmp / "run.json"), "--", *AGENTS["claude"][1]],
        canary_stream(env),
        None,
        STANDIN_LOOP="20",
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 6, raw.decode()
    assert CANARY in out.read_text() and CANARY.encode() not in raw
    doc = json.loads((env.tmp / "run.json").read_text())
    totals = doc["totals"]
    assert totals["denied"] == 3 and doc["run"]["ignoredDenials"] == 2
    lines = Screen().feed(raw).lines()
    frame = panel_frame(lines)
    text = "\n".join(frame)
    header = next(i for i, line in enumerate(frame) if "calls" in line and "denials" in line)
    names = frame[header].strip("│ ").split()
    values = frame[header + 1].strip("│ ").split()
    assert names == ["calls", "passes", "warnings", "denials", "ignored", "elapsed"], text
    counts = dict(zip(names, values, strict=True))
    assert counts["calls"] == str(totals["calls"]), text
    assert counts["denials"] == "3" and counts["ignored"] == "2/2", text
    assert int(counts["passes"]) + int(counts["warnings"]) + 3 == totals["calls"], text
    deny = [line for line in frame if "deny 3/3" in line]
    assert deny and re.search(r"deny 3/3\s+Bash\s+[0-9a-f]{12}\b", deny[-1]), text
    assert "ending the agent: 2 denial(s) the agent ignored" in text
    # a panel, not lines: no call is written as a line of its own
    assert not [line for line in lines if line.startswith("loop-brake run: call ")]
    # the summary follows the panel, under it
    assert lines.index(frame[-1]) < max(i for i, ln in enumerate(lines) if "stopped" in ln)


def test_a_run_that_ends_by_itself_says_so_in_the_last_frame(env: Env) -> None:
    terminal = Terminal()
    proc = terminal.spawn(
        env,
        ["--output", str(env.tmp / "agent.jsonl"), "--", *AGENTS["codex"][1]],
        ROOT / "tests" / "fixtures" / "codex-exec" / "real--agentcmd-stream-output-2.jsonl",
        None,
        STANDIN_EXIT="3",
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 3, raw.decode()
    text = "\n".join(panel_frame(Screen().feed(raw).lines()))
    assert "the agent exited with status 3; the brake did not act" in text
    assert "0/2" in text  # no ignored denial of the two that end the run


def test_the_agents_stream_on_the_same_terminal_gets_lines(env: Env) -> None:
    """stdout on the terminal too: a live display would redraw over the agent's own
    lines, so each call is a line of its own and nothing moves the cursor up."""
    terminal = Terminal()
    stream, argv = AGENTS["gemini"]
    copy = env.tmp / "written.jsonl"
    proc = terminal.spawn(
        env, ["--", *argv], stream, None, STANDIN_LOOP="20", STANDIN_COPY=str(copy)
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 6, raw.decode()
    assert all(m.group(2) == b"m" for m in CSI.finditer(raw)), "only colours: no cursor moved"
    lines = Screen().feed(raw).lines()
    assert not [line for line in lines if line.startswith("╭─ loop-brake run")]
    calls = [line for line in lines if line.startswith("loop-brake run: call ")]
    assert [line for line in calls if ": deny 3/3 (1 denied so far)" in line]
    assert calls[-1].endswith("(3 denied so far)")
    written = copy.read_text().splitlines()
    assert len(written) > 10
    for line in written[:-1]:  # the agent's lines, whole on the screen (the last may be cut)
        assert line in lines


@pytest.mark.parametrize("variable", ["TERM=dumb"])
def test_a_dumb_terminal_gets_the_plain_lines(env: Env, variable: str) -> None:
    name, _, value = variable.partition("=")
    terminal = Terminal()
    stream, argv = AGENTS["gemini"]
    proc = terminal.spawn(
        env, ["--output", str(env.tmp / "o.jsonl"), "--", *argv], stream, None, **{name: value}
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 0, raw.decode()
    assert b"\x1b" not in raw
    lines = Screen().feed(raw).lines()
    assert [line for line in lines if line.startswith("loop-brake run: call 1: ")]


def test_no_color_draws_the_panel_without_colour(env: Env) -> None:
    terminal = Terminal()
    stream, argv = AGENTS["gemini"]
    proc = terminal.spawn(
        env, ["--output", str(env.tmp / "o.jsonl"), "--", *argv], stream, None, NO_COLOR="1"
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 0, raw.decode()
    assert panel_frame(Screen().feed(raw).lines())
    colours = [
        params
        for params, final in CSI.findall(raw)
        if final == b"m" and any(p.startswith((b"3", b"4", b"9")) for p in params.split(b";") if p)
    ]
    assert not colours


def test_ctrl_c_on_the_terminal_ends_the_agent_and_exits_130(env: Env) -> None:
    """^C typed on the run's controlling terminal while the panel is live."""
    terminal = Terminal()
    stream, argv = AGENTS["gemini"]
    proc = terminal.spawn(env, ["--", *argv], stream, subprocess.PIPE, STANDIN_HANG="1")
    assert proc.stdout is not None
    for _ in stream.read_text().splitlines():  # the whole stream is through: the agent hangs
        proc.stdout.readline()
    os.write(terminal.master, b"\x03")
    proc.stdout.read()
    raw = terminal.finish(proc)
    assert proc.returncode == 130, raw.decode()
    text = "\n".join(panel_frame(Screen().feed(raw).lines()))
    assert "ending the agent: interrupted" in text
    assert env.agent_pids() and not [pid for pid in env.agent_pids() if alive(pid)]


def test_identifiers_on_the_panel_are_shown_not_obeyed() -> None:
    """A tool or session name holding a control sequence or rich markup is drawn as
    its escape, literally, in the panel and in the coloured lines."""
    import io

    from rich.console import Console

    from loop_brake_cli.render.run_view import CallEvent, RunPanel, RunTally, StyledLines

    hostile = "x\x1b[2J[bold red]y[/]\u202e"
    event = CallEvent(1, "deny", hostile, "0123456789ab", hostile, 3, 3, True, 1)
    panel = RunPanel()
    panel.agent = "claude-code"
    panel.call(event, RunTally(1, 0, 0, 1, 0))
    panel.decision(f"the policy stops the run at {hostile}")
    lines = StyledLines()
    for view in (panel, lines):
        view.console = Console(file=io.StringIO(), width=200, color_system=None)
    panel.console.print(panel.render())
    lines.call(event, RunTally(1, 0, 0, 1, 0))
    for view in (panel, lines):
        shown = view.console.file.getvalue()
        assert "\x1b" not in shown and "\u202e" not in shown, shown
        assert "x\\x1b[2J[bold red]y[/]\\u202e" in shown, shown


def test_the_agents_stderr_is_drawn_above_the_panel(env: Env) -> None:
    """The agent (and any hook it runs) writing to its stderr, the panel's terminal:
    each line lands whole above the panel, never inside a frame that a redraw erases."""
    terminal = Terminal()
    proc = terminal.spawn(
        env,
        ["--output", str(env.tmp / "agent.jsonl"), "--json", str(env.tmp / "run.json"), "--"]
        + AGENTS["claude"][1],
        canary_stream(env),
        None,
        STANDIN_LOOP="20",
        STANDIN_STDERR="1",
    )
    raw = terminal.finish(proc)
    assert proc.returncode == 6, raw.decode()
    calls = json.loads((env.tmp / "run.json").read_text())["totals"]["calls"]
    lines = Screen().feed(raw).lines()
    frame = panel_frame(lines)
    said = [i for i, line in enumerate(lines) if "about to run" in line]
    assert len(said) >= calls, "\n".join(lines)
    for i in said:
        assert re.fullmatch(r"claude: about to run \S+", lines[i]), lines[i]
        assert i < lines.index(frame[0])
    counts = frame[1 + next(i for i, line in enumerate(frame) if "calls" in line)]
    assert counts.strip("│ ").split()[0] == str(calls), "\n".join(frame)


def test_a_stream_sharing_the_terminal_is_passed_through_whole_lines() -> None:
    """On the terminal our lines share with the agent's stream, a chunk's unfinished
    last line waits for its end, so no line of ours is written inside it; the bytes
    are the same, the last unfinished line written when the stream ends, and a line
    longer than HOLD_MAX written as it comes."""
    import io

    from loop_brake_cli.run.watch import HOLD_MAX, Passthrough

    out = io.BytesIO()
    through = Passthrough(out, lambda: None, whole_lines=True)
    through.write(b'{"a": 1}\n{"b"')
    assert out.getvalue() == b'{"a": 1}\n'
    through.write(b": 2")
    assert out.getvalue() == b'{"a": 1}\n'
    through.write(b'}\n{"c": 3}\n{"d')
    assert out.getvalue() == b'{"a": 1}\n{"b": 2}\n{"c": 3}\n'
    through.finish()
    through.finish()
    assert out.getvalue() == b'{"a": 1}\n{"b": 2}\n{"c": 3}\n{"d'
    long = b"x" * (HOLD_MAX + 2)
    through.write(long)
    assert out.getvalue().endswith(long)
    plain = io.BytesIO()
    as_it_comes = Passthrough(plain, lambda: None)
    as_it_comes.write(b'{"a": 1}\n{"b"')
    assert plain.getvalue() == b'{"a": 1}\n{"b"'
