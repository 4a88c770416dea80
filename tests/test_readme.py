"""The README cannot go stale silently: every command and option it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import click

from loop_brake_cli.cli import COMMANDS, cli
from loop_brake_cli.hook.runner import HELP as HOOK_HELP

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# `loop-brake CMD rest-of-command`, up to the end of the line, a code span or a pipe.
NAMED = re.findall(r"(?<![\w/-])loop-brake ([a-z][a-z-]*)((?: [^\n`|&;)]*)?)", README)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])")


def _options(command: click.Command, rest: str) -> tuple[set[str], str]:
    """The options of the (sub)command a README line names, and the line after it."""
    words = rest.split()
    if isinstance(command, click.Group) and words and words[0] in command.commands:
        return _options(command.commands[words[0]], " ".join(words[1:]))
    if command.name == "hook":
        if words[:1] == ["install"]:
            from loop_brake_cli.commands.hook import install_command

            return _options(install_command, " ".join(words[1:]))
        return set(FLAG.findall(HOOK_HELP)) | {"--help"}, rest
    known = {opt for param in command.params for opt in param.opts + param.secondary_opts}
    return known | {"--help"}, rest


def test_the_readme_names_every_command() -> None:
    named = {command for command, _ in NAMED}
    assert set(COMMANDS) <= named


def test_every_option_the_readme_names_exists() -> None:
    checked = 0
    for name, rest in NAMED:
        command = cli.get_command(click.Context(cli), name)
        if command is None:  # prose, such as "the loop-brake row"
            continue
        known, rest = _options(command, rest)
        # Options after `--` belong to the MCP server's command, not to ours.
        ours = rest.split(" -- ")[0]
        for flag in FLAG.findall(ours):
            assert flag in known, f"README: loop-brake {name}{rest}: {flag} is not an option"
            checked += 1
    assert checked > 50


def test_the_library_example_runs_as_shown(capsys) -> None:
    """The README's first Python example, executed: it prints what its comment says."""
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)  # noqa: S102
    assert capsys.readouterr().out == "LOOP_BRAKE 3 3 35dca543bb3b\n"
    assert namespace["guarded"]({"q": "x"}) == "results for x"
