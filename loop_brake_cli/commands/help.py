"""``loop-brake help [TOPIC]``: what ``--help`` leaves out, each said once.

A command's ``--help`` shows its common options and names the others; here
each command's whole help (every option), the exit statuses (the whole table,
or one command's), and the transcript formats. The table is printed from
``core/exitcodes.py`` and nowhere else in full.
"""

from __future__ import annotations

import click

from ..core.exitcodes import COMMANDS as TABLE_COMMANDS
from ..core.exitcodes import ExitStatus, table
from ._command import FULL_HELP, Command, CommandError

TOPICS = ("exit-codes", "formats")


@click.command(
    "help",
    cls=Command,
    short_help="Every option of a command; the exit statuses; the formats.",
)
@click.argument("topic", nargs=-1, metavar="[TOPIC]...")
def help_command(topic: tuple[str, ...]) -> int:
    """Print a command's whole help (every option), the exit statuses, or the formats.

    \b
      loop-brake help filter              every option of filter
      loop-brake help hook install        (a subcommand's, likewise)
      loop-brake help exit-codes          every status of every command
      loop-brake help exit-codes replay   the statuses replay can return
      loop-brake help formats             the transcript formats and their names
    """
    ctx = click.get_current_context()
    if not topic:
        click.echo(ctx.find_root().get_help())
    elif topic[0] == "exit-codes":
        click.echo(_exit_codes(topic[1:]), nl=False)
    elif topic[0] == "formats" and len(topic) == 1:
        click.echo(_formats(), nl=False)
    else:
        click.echo(_command_help(ctx, topic))
    return ExitStatus.OK


def _exit_codes(rest: tuple[str, ...]) -> str:
    if not rest:
        return table()
    if len(rest) == 1 and rest[0] in TABLE_COMMANDS:
        return table(rest[0])
    raise CommandError(
        f"exit-codes {' '.join(rest)}: give one of {', '.join(TABLE_COMMANDS)} "
        "(hook, mcp-proxy and mcp-gateway say theirs in their own help)"
    )


def _formats() -> str:
    """Each format's name (for ``--format``) and what it reads, in detection order."""
    from ..formats import ADAPTERS

    rows = [(adapter.INFO.name, adapter.INFO.description) for adapter in ADAPTERS]
    formatter = click.HelpFormatter()
    with formatter.section("Formats (--format NAME; by default detected from the content)"):
        formatter.write_dl(rows)
    return formatter.getvalue()


def _command_help(ctx: click.Context, topic: tuple[str, ...]) -> str:
    """The whole help of the command ``topic`` names (``hook install``: a subcommand's)."""
    root = ctx.find_root()
    group = root.command
    assert isinstance(group, click.Group)
    command = group.get_command(root, topic[0])
    if command is None:
        known = ", ".join([*TOPICS, *group.list_commands(root)])
        raise CommandError(f"no help topic {' '.join(topic)!r}: try one of {known}")
    if topic[0] == "hook":
        return _hook_help(topic[1:])
    parent = click.Context(command, info_name=topic[0], parent=root)
    for name in topic[1:]:
        sub = command.get_command(parent, name) if isinstance(command, click.Group) else None
        if sub is None:
            raise CommandError(f"no help topic {' '.join(topic)!r}")
        command = sub
        parent = click.Context(command, info_name=name, parent=parent)
    parent.meta[FULL_HELP] = True
    return command.get_help(parent)


def _hook_help(rest: tuple[str, ...]) -> str:
    """``hook`` parses its own options (it must never exit 2 for an agent): its own help;
    ``install`` and ``uninstall`` are click commands of their own."""
    if not rest:
        from ..hook.runner import HELP

        return HELP.rstrip("\n")
    from .hook import install_command, uninstall_command

    sub = {"install": install_command, "uninstall": uninstall_command}.get(rest[0])
    if sub is None or len(rest) > 1:
        raise CommandError(f"no help topic 'hook {' '.join(rest)}': try hook install")
    ctx = click.Context(sub, info_name=f"loop-brake hook {rest[0]}")
    ctx.meta[FULL_HELP] = True
    return sub.get_help(ctx)
