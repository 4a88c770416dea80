"""The ``loop-brake`` command group: commands load lazily, errors become exit codes.

Each command lives in ``commands/<name>.py`` and is imported only when it runs,
so ``loop-brake hook`` (run before every tool call) pays for nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from .commands._command import Group, output_failed, silence, tell
from .core.exitcodes import ExitStatus

COMMANDS: dict[str, str] = {
    "check-config": "loop_brake_cli.commands.check_config:check_config_command",
    "doctor": "loop_brake_cli.commands.doctor:doctor_command",
    "filter": "loop_brake_cli.commands.filter:filter_command",
    "hash": "loop_brake_cli.commands.hash:hash_command",
    "help": "loop_brake_cli.commands.help:help_command",
    "hook": "loop_brake_cli.commands.hook:hook_command",
    "mcp-gateway": "loop_brake_cli.commands.mcp_gateway:mcp_gateway_command",
    "mcp-proxy": "loop_brake_cli.commands.mcp_proxy:mcp_proxy_command",
    "merge": "loop_brake_cli.commands.merge:merge_command",
    "replay": "loop_brake_cli.commands.replay:replay_command",
    "run": "loop_brake_cli.commands.run:run_command",
    "state": "loop_brake_cli.commands.state:state_command",
}


class LazyGroup(Group):
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
            silence("stdout")
            return ExitStatus.OK


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """The version, and which reader ``filter`` uses for event lines: speed differs
    about twofold on unusual inputs, so a bug report or a benchmark should say."""
    if not value or ctx.resilient_parsing:
        return
    from .commands.version import version_text

    click.echo(version_text())
    ctx.exit()


GROUP_EPILOG = (
    "Every command takes -h. `loop-brake help TOPIC` says the rest: a command's every "
    "option (loop-brake help replay), the exit statuses (loop-brake help exit-codes), "
    "the transcript formats (loop-brake help formats)."
)


@click.group(cls=LazyGroup, epilog=GROUP_EPILOG)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which event reader filter uses, and exit.",
)
def cli() -> None:
    """Stop AI agents that make the same tool call again and again.

    A call identical to the previous one in its session (the same tool, the same
    arguments: sha256 of the tool and the canonical JSON) extends a streak; the
    call that brings the streak to maxRepeats (default 3) is denied. Output names
    calls by tool, ids and a 12-hex hash prefix, never by their arguments.

    Start with `loop-brake replay TRANSCRIPT`: where the brake would have stopped
    an agent, in a transcript of Claude Code, Codex, Gemini CLI or another agent.
    """


def main(argv: list[str] | None = None) -> None:
    """Console entry point: no tracebacks for Ctrl-C, a closed pipe, bad usage or a bug.

    A reader that went away (``| head``) ends the run quietly with 0; a stdout
    that was closed before start (``>&-``), a full disk or a file size limit
    are failures the caller must see: one stderr line, exit 5."""
    if sys.stdout is None:
        sys.exit(output_failed("it is closed"))
    try:
        status = cli.main(args=argv, prog_name="loop-brake", standalone_mode=False)
    except click.ClickException as exc:
        from .render.visible import visible

        exc.message = visible(exc.message, lines=True)  # may quote a file name given
        status = tell(exc.show, exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        status = tell(
            lambda: click.echo("loop-brake: interrupted", err=True), ExitStatus.INTERRUPTED
        )
    except BrokenPipeError:
        silence("stdout")
        status = ExitStatus.OK
    except OSError as exc:
        status = output_failed(exc.strerror or exc.__class__.__name__)
    except Exception as exc:
        if os.environ.get("LOOP_BRAKE_TRACEBACK"):
            raise
        name = exc.__class__.__name__  # never str(exc): a message may quote input
        status = tell(
            lambda: click.echo(f"loop-brake: internal error ({name}); please report it", err=True),
            ExitStatus.INTERNAL,
        )
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence("stdout")
    except OSError as exc:
        status = output_failed(exc.strerror or exc.__class__.__name__)
    sys.exit(int(status) if isinstance(status, int) else 0)
