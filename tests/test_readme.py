"""The docs cannot go stale silently: every command and option that README.md and
docs/*.md name exists, and every relative link points at a file and heading that
exist. Every example of README.md and docs/ is run by tests/test_docs_examples.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import cli_env

from loop_brake_cli.cli import COMMANDS, cli
from loop_brake_cli.hook.runner import HELP as HOOK_HELP

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALL_TEXT = "\n".join(path.read_text(encoding="utf-8") for path in DOCS)
# `loop-brake CMD rest-of-command`, up to the end of the line, a code span, a pipe or
# a shell comment.
NAMED = re.findall(r"(?<![\w/-])loop-brake ([a-z][a-z-]*)((?: [^\n`|&;)#]*)?)", ALL_TEXT)
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
    """The README's Python example, executed: it prints what its comment says."""
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out == "LOOP_BRAKE 3 3 35dca543bb3b\n"


def readme_examples() -> list[str]:
    """The shell lines of the README's "One example per job" section."""
    section = README.split("\n## One example per job\n", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        lines += [line for line in block.splitlines() if line.strip()]
    return lines


def test_the_readme_has_an_example_for_every_command() -> None:
    named = {m for line in readme_examples() for m in re.findall(r"loop-brake ([a-z-]+)", line)}
    assert {"filter", "replay", "check-config", "hook", "mcp-proxy"} <= named


def _slug(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc.resolve()
        assert dest.exists(), f"{doc.name}: link to missing {target}"
        if anchor and dest.suffix == ".md":
            heads = {_slug(h) for h in re.findall(r"(?m)^#{1,6} (.*)$", dest.read_text())}
            assert anchor in heads, f"{doc.name}: link to missing heading {target}"


def test_the_readme_is_a_front_door() -> None:
    """A landing page: what it is, install, examples, exit table, links; the
    reference lives in docs/, one page per subject."""
    assert len(README.encode("utf-8")) <= 10_500


def test_the_first_screen_says_the_problem_without_the_harness() -> None:
    """Issue 40: the opening says what goes wrong and what the brake does, in words a
    reader who never met the DeepSeek Harness (or the Node plugin) knows."""
    intro = README.split("\n|", 1)[0]  # the paragraphs above the table of jobs
    assert len(intro.splitlines()) <= 24  # one screen
    words = " ".join(intro.split())
    for said in ("AI agents get stuck", "identical", "denies the call", "before it runs"):
        assert said in words, said
    for unknown in ("harness", "Harness", "dsh-loop-brake", "DeepSeek", "plugin"):
        assert unknown not in words, unknown


def test_the_quick_start_shows_the_readable_summary_of_a_stuck_agent_first() -> None:
    """The first output the README shows is replay's summary of the bundled stuck agent,
    before any JSON, and it is what that command prints today (the lines shown, up to
    the ``...`` that cuts it)."""
    start = README.index("```console\n")
    assert "{" not in re.sub(r"`[^`\n]*`", "", README[:start]), "JSON before the summary"
    block = README[start:].split("\n```\n", 1)[0].splitlines()[1:]
    command, *shown = block
    assert command == "$ loop-brake replay samples/stuck-agent.jsonl"
    assert shown[-1] == "..."
    done = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "replay", "samples/stuck-agent.jsonl"],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.decode().splitlines()
    assert shown[:-1] == printed[: len(shown) - 1]
    assert "denied at the 3rd identical call" in "\n".join(shown)
