"""``replay`` on a narrow terminal: no identifier is split across lines.

A real subprocess writes to a pseudo-terminal 40 columns wide (rich draws for a
terminal there). A table that does not fit is stacked row by row; a word wider
than the terminal is shortened in its middle, never broken.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

pty = pytest.importorskip("pty")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG = "a-rather-long-transcript-file-name-from-a-ci-run.jsonl"


def on_terminal(*args: str, columns: int) -> str:
    master, slave = pty.openpty()
    env = cli_env(COLUMNS=str(columns), LINES="100", TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()  # type: ignore[union-attr]
    return ANSI.sub("", out.decode()).replace("\r\n", "\n")


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    stuck = tmp_path / "stuck-agent.jsonl"
    shutil.copy(ROOT / "samples" / "stuck-agent.jsonl", stuck)
    long = tmp_path / LONG
    shutil.copy(ROOT / "samples" / "ab-alternation.jsonl", long)
    return [str(stuck), str(long)]


def test_at_40_columns_identifiers_are_whole_or_shortened_in_the_middle(
    files: list[str],
) -> None:
    text = on_terminal("replay", "--sweep", "2..4", *files, columns=40)
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= 40 for line in lines), text
    words = set(text.split())
    # whole: the file name, the session ids, the tool names, the hash prefix
    for identifier in ("stuck-agent.jsonl", "fix-flaky-test", "pager", "run_command"):
        assert identifier in text, identifier
    assert "get_page/get_page" in words and "1986f703924f" in words
    # wider than a line: shortened in the middle, its two ends on the same line
    (short,) = [word for word in words if "\u2026" in word and word.endswith(".jsonl")]
    assert LONG.startswith(short.split("\u2026")[0]) and LONG.endswith(short.split("\u2026")[1])
    # never a piece of a name at a line's end and its rest on the next line
    for name in ("stuck-agent.jsonl", "fix-flaky-test", "run_command", "ab-alternation"):
        for cut in range(3, len(name) - 1):
            assert not re.search(re.escape(name[:cut]) + r"\n\s*" + re.escape(name[cut:]), text)


def test_a_wide_terminal_still_draws_tables(files: list[str]) -> None:
    text = on_terminal("replay", *files, columns=200)
    assert re.search(r"^file\s+session\s+calls\s+longest identical streak\s+denied", text, re.M)
    assert re.search(r"^stuck-agent\.jsonl\s+fix-flaky-test\s+10\s", text, re.M)
