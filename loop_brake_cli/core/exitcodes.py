"""Exit statuses a script can rely on: one table, for every command.

``EXIT_TABLE`` is the only definition. ``loop-brake help exit-codes [COMMAND]``
prints it (``table``); each command's ``--help`` names its statuses in a few words
(``epilog("filter")``, from ``SHORT``) and points there; the README's "Exit
status" table is ``readme_table()`` (``tests/test_exit_table.py`` checks both).
A meaning is made of parts; a part that only some commands can give names
them, so a command's table lists only what that command can return.
"""

from __future__ import annotations

import textwrap
from enum import IntEnum

from .slotted import FrozenFields


class ExitStatus(IntEnum):
    OK = 0
    BRAKE = 1  # a call was (or would be) denied where the caller asked to fail, or a check failed
    USAGE = 2  # bad options or configuration (including an invalid maxRepeats)
    UNREADABLE = 3  # input that could not be read (a missing file, a file not in its format)
    NOT_FOUND = 4  # the thing to check is not there (e.g. no loop-brake row)
    OUTPUT = 5  # standard output could not be written: closed, disk full, file size limit
    STOPPED = 6  # run: the brake ended the agent (a policy stop, or denials it ignored)
    NOT_INSTALLED = 7  # run: the brake could not be put in front of the agent
    INTERNAL = 70  # a bug in loop-brake (EX_SOFTWARE); stderr names the exception's type only
    NO_AGENT = 127  # run: the agent's program was not found or could not be started
    INTERRUPTED = 130  # Ctrl-C


COMMANDS = ("filter", "replay", "merge", "check-config", "hash", "state", "run", "doctor")
"""The commands that follow this table (``hook`` and ``mcp-proxy`` document their own)."""


class Part(FrozenFields):
    """One clause of a status's meaning; ``commands`` empty means every command."""

    __slots__ = ("text", "commands")
    text: str
    commands: tuple[str, ...]

    def __init__(self, text: str, commands: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "commands", commands)

    def applies_to(self, command: str | None) -> bool:
        return command is None or not self.commands or command in self.commands

    def markdown(self) -> str:
        if not self.commands:
            return self.text
        return ", ".join(f"`{name}`" for name in self.commands) + ": " + self.text


EXIT_TABLE: tuple[tuple[ExitStatus, tuple[Part, ...]], ...] = (
    (
        ExitStatus.OK,
        (
            Part("ok"),
            Part("denials alone do not fail a run unless asked", ("filter", "replay")),
            Part("the brake did not end the agent: the agent's own status", ("run",)),
        ),
    ),
    (
        ExitStatus.BRAKE,
        (
            Part("a call was denied and `--fail-on-deny` was given", ("filter", "replay")),
            Part("`--expect-deny` found no denial", ("replay",)),
            Part("a check failed (`--expect`, `--strict`)", ("check-config",)),
            Part("a check failed (the brake would be off)", ("doctor",)),
        ),
    ),
    (
        ExitStatus.USAGE,
        (
            Part("usage error: an unknown option, a bad value, options that exclude each other"),
            Part(
                "configuration error: an invalid `maxRepeats`, a patch file that does not parse",
                ("filter", "replay", "check-config"),
            ),
            Part("partial reports made with different settings", ("merge",)),
        ),
    ),
    (
        ExitStatus.UNREADABLE,
        (
            Part(
                "unreadable input: a file that cannot be opened or read, a missing one included",
                ("filter", "replay", "merge", "check-config", "state", "run"),
            ),
            Part(
                "a `--config` PATCH_FILE that cannot be opened; standard input closed (`<&-`)",
                ("filter", "replay"),
            ),
            Part(
                "with `--strict`, any unreadable line, and an input not in the format it is "
                "read as (it looks like another format, or no tool call was read from it)",
                ("filter",),
            ),
            Part(
                "any unreadable record; a file named on the command line that is not a "
                "transcript (skipped in a directory, unless `--strict`); with `--format` "
                "or `--strict`, a file that gave no tool call (one that looks like another "
                "format is read, with a warning; unreadable with `--strict`)",
                ("replay",),
            ),
            Part(
                "a file that is not a partial report; partials holding unreadable records",
                ("merge",),
            ),
        ),
    ),
    (
        ExitStatus.NOT_FOUND,
        (
            Part("no loop-brake row in the composition", ("check-config",)),
            Part("no transcript file in the directories given", ("replay",)),
            Part("no such session", ("state",)),
        ),
    ),
    (
        ExitStatus.OUTPUT,
        (
            Part(
                "output could not be written: standard output closed before the run (`>&-`), "
                "disk full, or a file size limit (`ulimit -f`); one line on stderr says which. "
                "A reader that goes away early (`| head`) is not a failure: that run exits 0"
            ),
        ),
    ),
    (
        ExitStatus.STOPPED,
        (Part("the brake ended the agent (a `[stop]`, `--stop-after`)", ("run",)),),
    ),
    (
        ExitStatus.NOT_INSTALLED,
        (Part("the brake could not be installed; the agent was not started", ("run",)),),
    ),
    (
        ExitStatus.INTERNAL,
        (Part("a bug: stderr names the exception's type only (`LOOP_BRAKE_TRACEBACK=1`)"),),
    ),
    (
        ExitStatus.NO_AGENT,
        (Part("the agent could not be started", ("run",)),),
    ),
    (ExitStatus.INTERRUPTED, (Part("interrupted (Ctrl-C)"),)),
)


def meanings(command: str | None = None) -> list[tuple[int, list[Part]]]:
    """The statuses ``command`` can return (all of them for None), with their parts."""
    rows = []
    for status, parts in EXIT_TABLE:
        mine = [part for part in parts if part.applies_to(command)]
        if mine:
            rows.append((int(status), mine))
    return rows


def readme_rows() -> list[tuple[str, str]]:
    """The README's "Exit status" table, as (status, meaning) cells in Markdown: each
    status in a few words and the commands that give it (``table`` says the rest)."""
    rows = []
    for status, parts in meanings():
        commands = (
            []
            if any(not part.commands for part in parts)
            else sorted({name for part in parts for name in part.commands}, key=COMMANDS.index)
        )
        given = ", ".join(f"`{name}`" for name in commands)
        rows.append((str(status), SHORT[ExitStatus(status)] + (f" ({given})" if given else "")))
    return rows


def readme_table() -> str:
    lines = ["| status | meaning |", "|---|---|"]
    lines += [f"| {status} | {meaning} |" for status, meaning in readme_rows()]
    return "\n".join(lines) + "\n"


SHORT: dict[ExitStatus, str] = {
    ExitStatus.OK: "ok",
    ExitStatus.BRAKE: "denied or a check failed, as asked",
    ExitStatus.USAGE: "usage error",
    ExitStatus.UNREADABLE: "unreadable input",
    ExitStatus.NOT_FOUND: "not found",
    ExitStatus.OUTPUT: "output failed",
    ExitStatus.STOPPED: "agent stopped",
    ExitStatus.NOT_INSTALLED: "brake not installed",
    ExitStatus.INTERNAL: "bug",
    ExitStatus.NO_AGENT: "agent not started",
    ExitStatus.INTERRUPTED: "interrupted",
}
"""Each status in a few words: what ``--help`` and the README say; the table says the rest."""


def table(command: str | None = None, width: int = 78) -> str:
    """The statuses ``command`` can return (every command's for None), each with all it
    means, one per row (``loop-brake help exit-codes [COMMAND]``)."""
    lines = ["Exit status" + (f" of loop-brake {command}:" if command else ":")]
    for status, parts in meanings(command):
        # the whole table names, in each part, the commands it is about
        said = (part.markdown() if command is None else part.text for part in parts)
        text = "; ".join(said).replace("`", "")
        lines += textwrap.wrap(
            text, width, initial_indent=f"  {status:<4} ", subsequent_indent=" " * 7
        )
    return "\n".join(lines) + "\n"


def epilog(command: str) -> str:
    """The ``--help`` epilog of ``command``: its statuses in a few words, and where the
    table says what each means (click wraps it)."""
    said = "; ".join(f"{status} {SHORT[ExitStatus(status)]}" for status, _ in meanings(command))
    return f"Exit status: {said}. Each explained by: loop-brake help exit-codes {command}"
