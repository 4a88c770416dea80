"""Help a new user can read: ``-h`` everywhere, each ``--help`` one screen of the
common options, the rest in ``loop-brake help TOPIC``, said once.

Measured as a user sees it, at 80 columns: ``filter --help`` and ``replay --help``
fit 40 lines (issue 40), no line of any help is wider than the terminal (a wider
one wraps and takes two), every option a ``--help`` leaves out is named in it and
explained by ``loop-brake help COMMAND``, and the formats' names are listed once,
wrapped, not as one 190-character metavar.
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from conftest import run_cli

from loop_brake_cli.cli import COMMANDS, cli
from loop_brake_cli.formats import names

SUBCOMMANDS = [("state", "list"), ("state", "reset"), ("hook", "install"), ("hook", "uninstall")]
EVERY = [(name,) for name in sorted(COMMANDS)] + SUBCOMMANDS
ONE_SCREEN = {"filter": 40, "replay": 40}
"""The acceptance's bound for the two commands a new user meets first."""


def _help(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), terminal_width=80, prog_name="loop-brake")
    assert result.exit_code == 0, result.output
    return result.output


def _command(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(cli)
    command = cli.get_command(ctx, path[0])
    assert command is not None
    if path[1:]:
        if path[0] == "hook":
            from loop_brake_cli.commands.hook import install_command, uninstall_command

            return {"install": install_command, "uninstall": uninstall_command}[path[1]]
        assert isinstance(command, click.Group)
        command = command.commands[path[1]]
    return command


@pytest.mark.parametrize("path", EVERY, ids=" ".join)
def test_dash_h_is_help_for_every_command(path: tuple[str, ...]) -> None:
    """``-h`` works for every command, as a real run (``hook`` parses its own options)."""
    short = run_cli(*path, "-h")
    assert short.returncode == 0, short.stderr
    assert short.stdout.startswith(b"Usage: ") and short.stderr == b""
    assert short.stdout == run_cli(*path, "--help").stdout


def test_dash_h_for_the_group_too() -> None:
    done = run_cli("-h")
    assert done.returncode == 0 and b"Commands:" in done.stdout


@pytest.mark.parametrize("command", sorted(ONE_SCREEN))
def test_the_first_commands_help_fits_one_screen(command: str) -> None:
    lines = _help(command, "--help").splitlines()
    assert len(lines) <= ONE_SCREEN[command], len(lines)


WIDTH_CHECKED = [
    (),
    *[(name,) for name in sorted(COMMANDS) if name not in ("hook", "run")],
    *SUBCOMMANDS,
]
"""``hook`` prints its own help (hook/runner.py); ``run``'s is its own command's."""


@pytest.mark.parametrize("path", WIDTH_CHECKED, ids=lambda path: " ".join(path) or "group")
def test_no_help_line_is_wider_than_80_columns(path: tuple[str, ...]) -> None:
    texts = [_help("help", *path)]
    if path[:1] != ("hook",):  # hook install/uninstall run outside the group
        texts.append(_help(*path, "--help"))
    for text in texts:
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert not wide, wide


@pytest.mark.parametrize("command", ["filter", "replay", "mcp-proxy", "mcp-gateway"])
def test_help_names_every_option_it_leaves_out_and_help_topic_shows_all(command: str) -> None:
    short = _help(command, "--help")
    full = _help("help", command)
    every = _command((command,))
    assert f"More options (loop-brake help {command} explains each):" in short
    flat = " ".join(short.split())
    for param in every.params:
        if isinstance(param, click.Argument):
            continue
        name = max(param.opts, key=len)
        assert name in flat, name  # shown, or named among the more options
        assert name in full, name
        if param.help:
            assert " ".join(param.help.split()[:4]) in " ".join(full.split()), name
    assert len(full.splitlines()) > len(short.splitlines())
    assert "More options" not in full


@pytest.mark.parametrize("command", ["filter", "replay"])
def test_format_names_are_wrapped_not_one_long_metavar(command: str) -> None:
    short = _help(command, "--help")
    assert "--format NAME" in short and "claude-code|" not in short
    full = " ".join(_help("help", command).split())
    assert "NAME: " + ", ".join(names()) + "." in full.replace("- ", "-")


def test_help_formats_lists_every_format_once() -> None:
    text = _help("help", "formats")
    for name in names():
        assert sum(line.split()[:1] == [name] for line in text.splitlines()) == 1, name


def test_help_of_a_subcommand_and_of_the_hook() -> None:
    assert _help("help", "state", "reset").startswith("Usage: loop-brake state reset")
    assert _help("help", "hook", "install").startswith("Usage: loop-brake hook install")
    assert "--agent" in _help("help", "hook")


def test_help_alone_is_the_group_help() -> None:
    assert _help("help") == _help("--help")


@pytest.mark.parametrize("topic", [("nope",), ("filter", "extra"), ("hook", "nope")])
def test_an_unknown_topic_is_a_usage_error(topic: tuple[str, ...]) -> None:
    done = run_cli("help", *topic)
    assert done.returncode == 2
    assert done.stderr.startswith(b"loop-brake help: no help topic")
    assert done.stdout == b""
