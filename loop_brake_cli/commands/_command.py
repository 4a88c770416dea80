"""One command class and one error for every command: a raised error, said as asked.

A command, or anything it calls, raises ``CommandError(message, status)`` where it
finds a problem; no status travels back up through return values. ``Command``
(the class of every ``loop-brake`` command) names the error after the command
(``loop-brake replay: ...``) and, when the command line asked for ``--json``, has
it printed as one JSON object on stdout, ``{"error": message, "status": N}``
(and nothing on stderr), as click's own usage errors are then; the command says
it and ends with its status. Also here: ``tell``, which says why a run ends on a
stderr that may itself be closed or full (status 5 then, never an exception's 1).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import click

from ..core.exitcodes import ExitStatus

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
"""``-h`` and ``--help`` for the group and every command under it."""

FULL_HELP = "loop_brake.full_help"
"""``ctx.meta`` key: ``loop-brake help COMMAND`` shows every option, not the common ones."""


class CommandError(click.ClickException):
    """A command's own error: ``prog: message`` on stderr (one line per line of
    ``message``, each made visible), or with ``--json`` one JSON object on stdout.
    ``status``: the exit status (default 2, a usage or configuration error)."""

    def __init__(self, message: str, status: int = ExitStatus.USAGE) -> None:
        super().__init__(message)
        self.exit_code = int(status)
        self.prog = "loop-brake"
        self.as_json = False

    def bind(self, prog: str, as_json: bool) -> CommandError:
        """Name the command the error ends, and whether its caller asked for JSON."""
        self.prog = prog
        self.as_json = as_json
        return self

    def show(self, file: Any = None) -> None:
        if self.as_json:
            doc = {"error": self.message, "status": self.exit_code}
            click.echo(json.dumps(doc, ensure_ascii=False))
            return
        from ..render.visible import visible

        for line in self.message.splitlines():
            click.echo(f"{self.prog}: {visible(line)}", err=True)


def json_wanted(args: Sequence[str]) -> bool:
    """Did the command line ask for ``--json`` (before a ``--``)?"""
    args = list(args)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class JsonUsageError(click.UsageError):
    """A usage error for a caller that asked for JSON: one object on stdout, same status."""

    def show(self, file: Any = None) -> None:
        click.echo(json.dumps({"error": self.format_message(), "status": self.exit_code}))


class Command(click.Command):
    """A ``loop-brake`` command: ``-h`` as well as ``--help``; with a ``--json`` option,
    click's own usage errors (a bad option, a bad value) are printed as
    ``{"error": ..., "status": 2}`` on stdout when ``--json`` was asked for; and a
    ``CommandError`` raised while it runs is said, named after it (and JSON when asked),
    and its status returned: as the command's own, whether a group or a caller runs it."""

    def __init__(
        self,
        *args: Any,
        prog: str | None = None,
        more: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> None:
        kwargs["context_settings"] = {**HELP_OPTIONS, **kwargs.get("context_settings", {})}
        super().__init__(*args, **kwargs)
        self.prog = prog
        """What its errors are named after, when not its path under the group
        (``loop-brake hook install``, run by ``hook`` on its own)."""
        self.more = more
        """The options (by parameter name) ``--help`` only names: ``loop-brake help``
        shows them, so the common ones fit one screen."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The common options, then one paragraph naming the others and where they are
        explained (``loop-brake help COMMAND`` shows them all)."""
        full = bool(ctx.meta.get(FULL_HELP))
        shown, named = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or isinstance(param, click.Argument):
                continue
            if full and isinstance(param.type, click.Choice) and param.metavar:
                # a long list of names (--format NAME): wrapped in the text, not the metavar
                names = ", ".join(str(choice) for choice in param.type.choices)
                record = (record[0], f"{record[1]} {param.metavar}: {names}.")
            if param.name in self.more and not full:
                named.append(max(param.opts, key=len))
            else:
                shown.append(record)
        if shown:
            with formatter.section("Options"):
                formatter.write_dl(shown)
        if named:
            topic = self._prog(ctx).removeprefix("loop-brake ")
            more = f"More options (loop-brake help {topic} explains each): {', '.join(named)}."
            _write_paragraph(formatter, more)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_epilog(self, ctx, formatter)

    def _prog(self, ctx: click.Context) -> str:
        """``loop-brake`` and the command's path under the group (``loop-brake state
        reset``), whatever the group was called (``cli`` in click's test runner)."""
        if self.prog is not None:
            return self.prog
        names = []
        while ctx.parent is not None:
            names.append(ctx.info_name or "")
            ctx = ctx.parent
        return " ".join(["loop-brake", *reversed(names)]) if names else f"loop-brake {self.name}"

    def _has_json(self) -> bool:
        """Whether ``--json`` is the JSON output (``as_json``), not a file (``run --json FILE``)."""
        return any(param.name == "as_json" for param in self.params)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wanted = self._has_json() and json_wanted(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if not wanted:
                raise
            raise JsonUsageError(exc.format_message(), ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CommandError as exc:
            exc.bind(self._prog(ctx), bool(ctx.params.get("as_json")))
            if exc.as_json:  # on stdout: a failed write is the run's output failure (cli.main)
                exc.show()
                return exc.exit_code
            return tell(exc.show, exc.exit_code)


class Group(click.Group):
    """A group of ``loop-brake`` commands (``state``, and the command group itself):
    ``-h`` too, and its epilog wrapped as a command's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["context_settings"] = {**HELP_OPTIONS, **kwargs.get("context_settings", {})}
        super().__init__(*args, **kwargs)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_epilog(self, ctx, formatter)


def _format_epilog(
    command: click.Command, ctx: click.Context, formatter: click.HelpFormatter
) -> None:
    """The epilog as click writes it, but an option or a command is never split at its
    hyphen (``--continue-`` / ``sessions``); a ``\\b`` epilog is kept as it is."""
    if command.epilog and not command.epilog.startswith("\b"):
        _write_paragraph(formatter, command.epilog)
    else:
        click.Command.format_epilog(command, ctx, formatter)


def _write_paragraph(formatter: click.HelpFormatter, text: str) -> None:
    """``text`` as an indented paragraph, wrapped at spaces only."""
    import textwrap

    formatter.write_paragraph()
    with formatter.indentation():
        indent = " " * formatter.current_indent
        width = max(formatter.width - formatter.current_indent, 20)
        for line in textwrap.wrap(text, width, break_on_hyphens=False):
            formatter.write(f"{indent}{line}\n")


def silence(name: str = "stdout") -> None:
    """After a closed pipe or a failed write, point the stream at /dev/null so the
    exit flush is quiet (a failed flush at exit would turn the status into 120)."""
    stream = getattr(sys, name)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (AttributeError, OSError, ValueError):  # AttributeError: no such stream at all
        pass


def output_failed(reason: str) -> int:
    """Stdout cannot take the output: say so once and drop what is still buffered.

    Stderr may be full or closed too (``>/dev/full 2>/dev/full``): the status is 5
    all the same, never the 1 an unwritable message would give (1 means "denied")."""
    try:
        click.echo(f"loop-brake: cannot write to standard output ({reason})", err=True)
    except (OSError, ValueError, AttributeError):  # AttributeError: no stderr at all
        silence("stderr")
    silence("stdout")
    return ExitStatus.OUTPUT


def tell(show: Callable[[], None], status: int) -> int:
    """Say why the run ends (on stderr) and end with ``status``; a stderr that cannot
    take the line makes it an output failure (5), never an exception's 1."""
    try:
        show()
    except (OSError, ValueError, AttributeError):
        return output_failed("standard error cannot be written either")
    return status


class Exclusion(NamedTuple):
    """``option`` cannot be given with any of ``others``. ``message`` may name the first
    of ``others`` given as ``{other}``, shown as ``shown`` says (else as its name)."""

    option: str
    others: tuple[str, ...]
    message: str
    shown: Mapping[str, str] = {}


def check_exclusions(exclusions: Sequence[Exclusion], given: Mapping[str, bool]) -> None:
    """``CommandError`` (status 2) for the first of ``exclusions`` the command line breaks;
    ``given``: which options it gave, by the names the exclusions use."""
    for option, others, message, shown in exclusions:
        if not given[option]:
            continue
        other = next((name for name in others if given[name]), None)
        if other is not None:
            raise CommandError(message.format(other=shown.get(other, other)))
