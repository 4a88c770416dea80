"""The ``loop-brake`` command group: commands load lazily, errors become exit codes.

Each command lives in ``commands/<name>.py`` and is imported only when it runs,
so ``loop-brake hook`` (run before every tool call) pays for nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import click

from .core.exitcodes import EXIT_CODES_HELP, ExitStatus

COMMANDS: dict[str, str] = {
    "check-config": "loop_brake_cli.commands.check_config:check_config_command",
    "filter": "loop_brake_cli.commands.filter:filter_command",
    "hash": "loop_brake_cli.commands.hash:hash_command",
    "hook": "loop_brake_cli.commands.hook:hook_command",
    "mcp-gateway": "loop_brake_cli.commands.mcp_gateway:mcp_gateway_command",
    "mcp-proxy": "loop_brake_cli.commands.mcp_proxy:mcp_proxy_command",
    "merge": "loop_brake_cli.commands.merge:merge_command",
    "replay": "loop_brake_cli.commands.replay:replay_command",
    "run": "loop_brake_cli.commands.run:run_command",
    "state": "loop_brake_cli.commands.state:state_command",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context) -> object:
        """A closed stdout (``| head -1``) ends the run with status 0, quietly.

        Caught here because click's own handler would turn it into exit status 1.
        """
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence("stdout")
            return ExitStatus.OK


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """The version, and which reader ``filter`` uses for event lines: speed differs
    about twofold on unusual inputs, so a bug report or a benchmark should say."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    from .readers.fastpath import reader_name

    click.echo(f"loop-brake, version {version('loop-brake-cli')}\nevent reader: {reader_name()}")
    ctx.exit()


@click.group(cls=LazyGroup, epilog=EXIT_CODES_HELP)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which event reader filter uses, and exit.",
)
def cli() -> None:
    """An exact-match circuit breaker for AI agents' repeated tool calls.

    A call whose sha256(tool + "\\n" + canonical JSON of its arguments) equals the
    previous call's in the same session extends a streak; the call that brings
    the streak to maxRepeats (default 3) is denied. Output names calls by tool,
    ids and a 12-hex hash prefix, never by their arguments.
    """


def _silence(name: str = "stdout") -> None:
    """After a closed pipe or a failed write, point the stream at /dev/null so the
    exit flush is quiet (a failed flush at exit would turn the status into 120)."""
    stream = getattr(sys, name)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (AttributeError, OSError, ValueError):  # AttributeError: no such stream at all
        pass


def _output_failed(reason: str) -> int:
    """Stdout cannot take the output: say so once and drop what is still buffered.

    Stderr may be full or closed too (``>/dev/full 2>/dev/full``): the status is 5
    all the same, never the 1 an unwritable message would give (1 means "denied")."""
    try:
        click.echo(f"loop-brake: cannot write to standard output ({reason})", err=True)
    except (OSError, ValueError, AttributeError):  # AttributeError: no stderr at all
        _silence("stderr")
    _silence("stdout")
    return ExitStatus.OUTPUT


def _tell(show: Callable[[], None], status: int) -> int:
    """Say why the run ends (on stderr) and end with ``status``; a stderr that cannot
    take the line makes it an output failure (5), never an exception's 1."""
    try:
        show()
    except (OSError, ValueError, AttributeError):
        return _output_failed("standard error cannot be written either")
    return status


def main(argv: list[str] | None = None) -> None:
    """Console entry point: no tracebacks for Ctrl-C, a closed pipe, bad usage or a bug.

    A reader that went away (``| head``) ends the run quietly with 0; a stdout
    that was closed before start (``>&-``), a full disk or a file size limit
    are failures the caller must see: one stderr line, exit 5."""
    if sys.stdout is None:
        sys.exit(_output_failed("it is closed"))
    try:
        status = cli.main(args=argv, prog_name="loop-brake", standalone_mode=False)
    except click.ClickException as exc:
        from .render.visible import visible

        exc.message = visible(exc.message, lines=True)  # may quote a file name given
        status = _tell(exc.show, exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        status = _tell(
            lambda: click.echo("loop-brake: interrupted", err=True), ExitStatus.INTERRUPTED
        )
    except BrokenPipeError:
        _silence("stdout")
        status = ExitStatus.OK
    except OSError as exc:
        status = _output_failed(exc.strerror or exc.__class__.__name__)
    except Exception as exc:
        if os.environ.get("LOOP_BRAKE_TRACEBACK"):
            raise
        name = exc.__class__.__name__  # never str(exc): a message may quote input
        status = _tell(
            lambda: click.echo(f"loop-brake: internal error ({name}); please report it", err=True),
            ExitStatus.INTERNAL,
        )
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence("stdout")
    except OSError as exc:
        status = _output_failed(exc.strerror or exc.__class__.__name__)
    sys.exit(int(status) if isinstance(status, int) else 0)
