"""One exit table for every command, defined once (loop_brake_cli/core/exitcodes.py).

``loop-brake help exit-codes [COMMAND]`` prints it, each command's ``--help`` names
the statuses it can return in a few words and points there, and the README's
"Exit status" table is the same definition.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import cli_env, run_cli

from loop_brake_cli.cli import cli
from loop_brake_cli.core.exitcodes import (
    COMMANDS,
    EXIT_TABLE,
    SHORT,
    ExitStatus,
    epilog,
    meanings,
    readme_table,
)

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_exit_table_is_the_definition() -> None:
    section = README.split("\n## Exit status\n", 1)[1].split("\n## ", 1)[0]
    table = re.search(r"^\| status \| meaning \|\n(?:\|.*\|\n)+", section, re.M)
    assert table is not None, "no table in the README's Exit status section"
    assert table.group(0) == readme_table()


def test_every_status_is_in_the_table_once_with_its_few_words() -> None:
    assert [status for status, _ in EXIT_TABLE] == list(ExitStatus)
    assert set(SHORT) == set(ExitStatus)


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), terminal_width=200, prog_name="loop-brake")
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exit_codes_of_a_command_lists_its_statuses_from_the_table(command: str) -> None:
    text = " ".join(_run("help", "exit-codes", command).split())
    assert text.startswith(f"Exit status of loop-brake {command}:")
    for status, parts in meanings(command):
        meaning = "; ".join(part.text for part in parts).replace("`", "")
        assert f"{status} {meaning}" in text, (command, status)


def test_help_exit_codes_prints_the_whole_table_once() -> None:
    text = " ".join(_run("help", "exit-codes").split())
    for status, parts in meanings():
        meaning = "; ".join(part.markdown() for part in parts).replace("`", "")
        assert f"{status} {meaning}" in text, status
    assert text.count("a bug: stderr names") == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_each_help_names_its_statuses_and_points_to_the_table(command: str) -> None:
    text = " ".join(_run(command, "--help").split())
    assert " ".join(epilog(command).split()) in text
    assert f"loop-brake help exit-codes {command}" in text
    for status, _ in meanings(command):
        assert f"{status} {SHORT[ExitStatus(status)]}" in text
    assert "a bug: stderr names" not in text  # the table itself is not repeated


def test_the_group_help_does_not_repeat_the_table() -> None:
    text = _run("--help")
    assert "loop-brake help exit-codes" in text and "a bug: stderr names" not in text


def test_hash_help_names_its_statuses_and_check_config_help_no_deny_flags() -> None:
    assert "2 usage" in " ".join(_run("hash", "--help").split())
    check = " ".join(_run("help", "check-config").split())
    assert "--fail-on-deny" not in check and "--expect-deny" not in check
    table = _run("help", "exit-codes", "check-config")
    assert "1    a check failed (--expect, --strict)" in table
    assert "4    no loop-brake row in the composition" in table


def test_exit_codes_of_a_command_without_the_table_is_a_usage_error() -> None:
    done = run_cli("help", "exit-codes", "hook")
    assert done.returncode == 2
    assert done.stderr.startswith(b"loop-brake help: exit-codes hook: give one of")


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


@pytest.mark.parametrize(
    "args",
    [
        ("filter", "--policy", "{missing}", "{sample}"),
        ("replay", "--policy", "{missing}", "{sample}"),
        ("replay", "--compare-policy", "{missing}", "{sample}"),
        ("check-config", "--policy", "{missing}"),
        ("mcp-proxy", "--policy", "{missing}", "--", "cat"),
        ("mcp-gateway", "--policy", "{missing}", "--upstream", "http://127.0.0.1:9/mcp"),
        ("hook", "install", "claude-code", "--dry-run", "--policy", "{missing}"),
        ("run", "--policy", "{missing}", "--", "true"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_missing_policy_file_is_unreadable_input_everywhere(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    """``--policy`` naming a file that is not there exits 3, as every other unreadable
    input does (a policy that does not parse is 2), before anything is read or started."""
    missing = str(tmp_path / "missing.toml")
    sample = str(Path(__file__).resolve().parents[1] / "samples" / "stuck-agent.jsonl")
    argv = [arg.format(missing=missing, sample=sample) for arg in args]
    done = run_cli(*argv, env=cli_env(HOME=str(tmp_path)))
    assert done.returncode == 3, done.stderr
    assert done.stderr.decode().endswith(
        f"{missing}: cannot open the policy file: No such file or directory\n"
    )
    assert done.stdout == b"" and b"Traceback" not in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[[tools]]\nmax_repeat = 2\n")
    argv = [arg.format(missing=str(bad), sample=sample) for arg in args]
    assert run_cli(*argv, env=cli_env(HOME=str(tmp_path))).returncode == 2
