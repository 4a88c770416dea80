"""One exit table for every command, defined once (loop_brake_cli/core/exitcodes.py).

The README's "Exit status" table is that definition, and each command's
``--help`` lists the statuses it can return, from the same definition.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli

from loop_brake_cli.cli import cli
from loop_brake_cli.core.exitcodes import EXIT_TABLE, ExitStatus, epilog, meanings, readme_table

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
COMMANDS = ("filter", "replay", "check-config", "hash")


def test_the_readme_exit_table_is_the_definition() -> None:
    section = README.split("\n## Exit status\n", 1)[1].split("\n## ", 1)[0]
    table = re.search(r"^\| status \| meaning \|\n(?:\|.*\|\n)+", section, re.M)
    assert table is not None, "no table in the README's Exit status section"
    assert table.group(0) == readme_table()


def test_every_status_is_in_the_table_once() -> None:
    assert [status for status, _ in EXIT_TABLE] == list(ExitStatus)


def _help(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    return result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_each_help_lists_its_statuses_from_the_table(command: str) -> None:
    text = " ".join(_help(command).split())
    assert "Exit status:" in text
    for status, parts in meanings(command):
        meaning = "; ".join(part.text for part in parts).replace("`", "")
        assert f"{status} {meaning}" in text, (command, status)
    assert " ".join(epilog(command).replace("\b", "").split()) in text


def test_hash_help_lists_exit_codes_and_check_config_help_no_deny_flags() -> None:
    hash_help = _help("hash")
    assert "Exit status:" in hash_help and "2    usage error" in hash_help
    check = _help("check-config")
    assert "--fail-on-deny" not in check and "--expect-deny" not in check
    assert "1    a check failed (--expect, --strict)" in check
    assert "4    no loop-brake row in the composition" in check


def test_every_command_follows_the_table_for_a_missing_file(tmp_path: Path) -> None:
    """A file that cannot be opened is unreadable input (3), whichever command reads it."""
    missing = str(tmp_path / "missing.yml")
    sample = str(Path(__file__).resolve().parents[1] / "samples" / "stuck-agent.jsonl")
    for args in (
        ("check-config", missing),
        ("filter", missing),
        ("replay", missing),
        ("filter", "--config", missing, sample),
        ("replay", "--config", missing, sample),
    ):
        done = run_cli(*args)
        assert done.returncode == 3, args
        assert done.stderr.decode().endswith(f"cannot open {missing}: No such file or directory\n")
        assert b"Traceback" not in done.stderr


def test_usage_errors_are_2_everywhere(tmp_path: Path) -> None:
    for args in (
        ("check-config", "--expect", "abc"),
        ("filter", "--max-sessions", "0"),
        ("replay", "-j", "x", "."),
        ("replay", "--fail-on-deny", "--expect-deny", "."),
        ("hash", "search", "{not json"),
    ):
        assert run_cli(*args).returncode == 2, args
