"""Every command README.md and docs/*.md show is run here, as shown, on files of the
checkout: an example that no longer runs fails with the page and line it is on.

What counts as a command (docs/DEVELOPING.md, "Examples in the docs"):

- each line of a ```sh block (a line ending in a backslash goes on); comment
  lines and blank lines are not commands. A block is a script read from the top:
  a command runs after the ones above it in its block, in the same shell, so a
  ``cd`` or a file written above carries down;
- each ``$ `` line of a ```console block (the other lines are its output, shown
  to the reader and not compared);
- each code span in a table column headed ``example`` (a block of its own).

A command's trailing comment may begin with ``exit N``: the status it must exit
with (default 0). ``not run: REASON`` there skips it, for another program's
command only (a client's or a broker's); a ``loop-brake`` command always runs.

Each runs with bash, stdin from /dev/null, in a fresh copy of the checkout (the
files git tracks, and an empty ``.git`` as a clone has), ``HOME`` a fresh copy of
the fixture home (``tests/fixtures/home`` plus the agents' folders built from
``tests/fixtures`` below), this venv's ``loop-brake`` first on ``PATH``, and no
``LOOP_BRAKE_*``, ``DSH_LOOP_BRAKE_*`` or ``XDG_*`` variable. Commands that take
minutes or need the package index (``pip install``, ``bench/``) run only with
``LOOP_BRAKE_DOCS_SLOW=1``. A block that names ``$REDIS_URL`` gets a real
redis-server (tests/redis_server.py: a free loopback port, flushed before each
command, stopped by pid after the module).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIXTURES = ROOT / "tests" / "fixtures"
SLOW_ENV = "LOOP_BRAKE_DOCS_SLOW"
SLOW = re.compile(r"\bpip install\b|\bpython3? bench/")
TRAILER = re.compile(r"(?:^|\s)#\s*(?:exit (\d+)\b|not run: *(.+))")
FENCE = re.compile(r"^```(\S*)\s*$")
CODE_SPAN = re.compile(r"`([^`]+)`")
LEFT_BEHIND = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")
# Real transcripts, copied where the agents keep them (a .gz source is unpacked).
HOME_COPIES = {
    ".codex/sessions/2026/05/11/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": (
        "codex/real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
    ),
    ".codex/sessions/2026/01/02/"
    "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl": (
        "codex/real--codemie-rollout-019b7f94-shell.jsonl"
    ),
    ".claude/projects/-home-me-app/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": (
        "claude-code/real--codemie-4c2ddfdc.jsonl"
    ),
    ".gemini/tmp/fb8e242a6fbbb5c48a1d0be57a8a4cc934d33e0a1caf73ab5d4ecaa17269960c/chats/"
    "session-2025-12-01T21-45-5b959dae.json": (
        "gemini-cli/codemie-ai-codemie-code__tests-integration-metrics-fixtures-gemini"
        "__session-2025-12-01T21-45-5b959dae.json"
    ),
    "Library/Logs/Claude/mcp.log": "mcp/real--odoo-mcp-claude-desktop-EXCERPT-lines200-720.log.gz",
    **{
        f".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1765000000000/{name}": (
            f"cline/synthetic--1765000000000/{name}"
        )
        for name in ("api_conversation_history.json", "ui_messages.json", "task_metadata.json")
    },
    **{
        ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/"
        f"019cadc0-7c00-7000-8000-000000000001/{name}": (
            f"roo-code/synthetic--019cadc0-7c00-7000-8000-000000000001/{name}"
        )
        for name in ("api_conversation_history.json", "ui_messages.json")
    },
}


@dataclass(frozen=True)
class Command:
    """One command of a page: its text, where it is, what it must exit with."""

    page: str
    line: int
    text: str
    status: int
    skip: str | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _command(page: str, line: int, text: str) -> Command:
    last = text.rsplit("\n", 1)[-1]
    trailer = TRAILER.search(last)
    status = int(trailer.group(1)) if trailer and trailer.group(1) else 0
    skip = trailer.group(2).strip() if trailer and trailer.group(2) else None
    return Command(page, line, text, status, skip)


def _shell_block(page: str, first: int, body: list[str]) -> list[Command]:
    commands, pending, start = [], [], 0
    for offset, raw in enumerate(body):
        if not pending:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            start = first + offset
        pending.append(raw)
        if not raw.endswith("\\"):
            commands.append(_command(page, start, "\n".join(pending)))
            pending = []
    assert not pending, f"{page}:{start}: a command ends in a backslash at the end of its block"
    return commands


def _console_block(page: str, first: int, body: list[str]) -> list[Command]:
    commands, pending, start = [], [], 0
    for offset, raw in enumerate(body):
        if pending:
            pending.append(raw)
        elif raw.startswith("$ "):
            start, pending = first + offset, [raw[2:]]
        if pending and not raw.endswith("\\"):
            commands.append(_command(page, start, "\n".join(pending)))
            pending = []
    return commands


def _table_examples(page: str, lines: list[str]) -> list[list[Command]]:
    """Each code span in a table column headed `example`, as a block of its own."""
    blocks: list[list[Command]] = []
    column = None
    for number, line in enumerate(lines, 1):
        if not line.startswith("|"):
            column = None
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if column is None:
            column = cells.index("example") if "example" in cells else -1
            continue
        if column < 0 or column >= len(cells) or set(cells[column]) <= set("-: "):
            continue
        for span in CODE_SPAN.findall(cells[column]):
            blocks.append([_command(page, number, span.replace("\\|", "|"))])
    return blocks


def fenced_blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """(language, line of the first body line, body lines) of each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, language, start, body = [], None, 0, []
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if language is None and fence:
            language, start, body = fence.group(1), number + 1, []
        elif language is not None and line.strip() == "```":
            blocks.append((language, start, body))
            language = None
        elif language is not None:
            body.append(line)
    return blocks


def page_blocks(path: Path) -> list[list[Command]]:
    """The commands of one page, grouped in the blocks that run as one script."""
    page = path.relative_to(ROOT).as_posix()
    blocks = []
    for language, start, body in fenced_blocks(path):
        if language == "sh":
            blocks.append(_shell_block(page, start, body))
        elif language == "console":
            blocks.append(_console_block(page, start, body))
    blocks += _table_examples(page, path.read_text(encoding="utf-8").splitlines())
    return [block for block in blocks if block]


BLOCKS = [block for path in PAGES for block in page_blocks(path)]
EXAMPLES = [(block, index) for block in BLOCKS for index in range(len(block))]


def _copy_checkout(dest: Path) -> None:
    """The files git tracks, as they are in the working tree: what a clone holds.
    Outside a git repository (an unpacked archive, or this test's own copy when the
    README's test command runs the suite in it), the tree without what builds and
    runs leave behind."""
    git_dir = ROOT / ".git"
    clone = git_dir.is_file() or git_dir.is_dir() and any(git_dir.iterdir())
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if not clone or listed.returncode != 0:
        shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_BEHIND))
    else:
        for name in filter(None, listed.stdout.decode().split("\0")):
            origin = ROOT / name
            if origin.is_file():  # a tracked file deleted in the working tree is gone
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, dest / name)
    (dest / ".git").mkdir(exist_ok=True)  # where a clone stops the policy discovery


def _clean_env(**extra: str) -> dict[str, str]:
    bindir = Path(sys.executable).parent
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LOOP_BRAKE_", "DSH_LOOP_BRAKE_", "XDG_"))
    }
    env["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def _build_home(home: Path) -> None:
    shutil.copytree(FIXTURES / "home", home, ignore=shutil.ignore_patterns("README.md"))
    for target, origin in HOME_COPIES.items():
        dest, source = home / target, FIXTURES / origin
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".gz" and dest.suffix != ".gz":
            dest.write_bytes(gzip.decompress(source.read_bytes()))
        else:
            shutil.copy2(source, dest)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A checkout copy and a fixture home, built once and copied for each command."""
    root = tmp_path_factory.mktemp("docs-pristine")
    _copy_checkout(root / "checkout")
    _build_home(root / "home")
    return root / "checkout", root / "home"


def _script(block: list[Command], index: int) -> str:
    """The commands above this one in its block, each held to its status, then this one."""
    parts = []
    for earlier in block[:index]:
        parts += [
            earlier.text,
            f'__s=$?; if [ "$__s" -ne {earlier.status} ]; then echo "{earlier.where}: '
            f'exited $__s, expected {earlier.status}" >&2; exit 199; fi',
        ]
    return "\n".join([*parts, block[index].text]) + "\n"


def _id(example: tuple[list[Command], int]) -> str:
    block, index = example
    return block[index].where


@pytest.fixture(scope="module")
def docs_redis():
    """The redis-server of the examples that use ``$REDIS_URL``, started when first asked."""
    servers = []

    def get():
        if not servers:
            from redis_server import RedisServer

            servers.append(RedisServer().start())
        return servers[0]

    yield get
    for server in servers:
        server.stop()


def _redis_env(block: list[Command], docs_redis) -> dict[str, str]:
    if not any("$REDIS_URL" in c.text for c in block):
        return {}
    server = docs_redis()
    server.command("FLUSHALL")
    return {"REDIS_URL": server.url}


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_every_docs_example_runs(
    example: tuple[list[Command], int], pristine: tuple[Path, Path], tmp_path: Path, docs_redis
) -> None:
    block, index = example
    command = block[index]
    if command.skip:
        pytest.skip(f"{command.where}: {command.skip}")
    if any(SLOW.search(c.text) for c in block[: index + 1]) and not os.environ.get(SLOW_ENV):
        pytest.skip(f"takes minutes or the package index: {SLOW_ENV}=1 runs it")
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    shutil.copytree(pristine[0], checkout, symlinks=True)
    shutil.copytree(pristine[1], home, symlinks=True)
    (tmp_path / "tmp").mkdir()
    result = subprocess.run(
        ["bash", "-c", _script(block, index)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=checkout,
        env=_clean_env(
            HOME=str(home), TMPDIR=str(tmp_path / "tmp"), **_redis_env(block, docs_redis)
        ),
        timeout=3600 if os.environ.get(SLOW_ENV) else 120,
    )
    out, err = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    shown = f"{command.where}: {command.text}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
    assert result.returncode == command.status, shown
    assert "Traceback" not in err, shown
    assert "command not found" not in err, shown


def test_the_examples_are_found() -> None:
    """The collector sees every kind of example, on the README and on the reference."""
    pages = {block[0].page for block in BLOCKS}
    assert "README.md" in pages
    assert len(pages) >= 8
    assert len(EXAMPLES) >= 40
    assert any(c.status != 0 for block in BLOCKS for c in block)


def test_no_command_hides_from_the_runner() -> None:
    """Shell examples are ```sh (or ```console with `$ ` lines); a fence in another
    shell dialect, a `$ ` line outside a console block, or a `loop-brake` line that
    is not a synopsis in a plain block would be a command the tests never run."""
    for path in PAGES:
        for language, start, body in fenced_blocks(path):
            where = f"{path.relative_to(ROOT)}:{start}"
            assert language not in {"bash", "shell", "zsh", "shell-session"}, where
            if language in {"", "text"}:
                for line in body:
                    assert not line.startswith("$ "), f"{where}: {line}"
                    if line.startswith("loop-brake "):
                        assert "[" in line, f"{where}: {line} (a synopsis has [OPTIONS])"


def test_only_other_programs_are_not_run() -> None:
    skipped = [c for block in BLOCKS for c in block if c.skip]
    for command in skipped:
        first = command.text.split()[0]
        assert first not in {"loop-brake", "python", "python3"}, command.where
