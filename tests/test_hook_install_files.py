"""`hook install` and the file at the settings path: links kept, read-only respected,
FIFOs and devices never opened, the backup, and a --command quoted for the shell.

Real files, real FIFOs, the real CLI in a subprocess (with a timeout: before
this, a FIFO at the settings path blocked the install forever), and the
installed command run by a real ``sh -c`` as the agents run it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from test_hook_install import QUOTED, install

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX files and shells")

ORIGINAL = '{\n  "model": "x",\n  "n": 1e400\n}\n'


def settings(tmp_path: Path) -> Path:
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def command_of(path: Path) -> str:
    document = json.loads(path.read_text())
    return document["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]


def test_a_symlink_is_kept_and_its_target_edited_with_its_mode(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(ORIGINAL)
    target.chmod(0o640)
    link = settings(tmp_path)
    link.symlink_to(os.path.relpath(target, link.parent))
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert os.readlink(link) == os.path.relpath(target, link.parent)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert '"n": 1e400' in target.read_text()
    assert command_of(target) == f"{QUOTED} hook --agent claude-code"
    (backup,) = [p for p in link.parent.iterdir() if ".bak-" in p.name]
    assert not backup.is_symlink() and backup.read_text() == ORIGINAL
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude-settings.json"]  # no temp left


def test_a_plain_file_keeps_its_mode_and_the_backup_too(tmp_path: Path) -> None:
    path = settings(tmp_path)
    path.write_text(ORIGINAL)
    path.chmod(0o600)
    assert install(tmp_path, "claude-code", "--project").returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    (backup,) = [p for p in path.parent.iterdir() if ".bak-" in p.name]
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert backup.read_text() == ORIGINAL


@pytest.mark.parametrize("mode", [0o444, 0o400])
def test_a_read_only_file_is_refused_not_chmodded(tmp_path: Path, mode: int) -> None:
    path = settings(tmp_path)
    path.write_text(ORIGINAL)
    path.chmod(mode)
    before = path.stat()
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 3
    (line,) = result.stderr.decode().splitlines()  # not "checked": nothing was written
    assert "read-only" in line and "left untouched" in line
    after = path.stat()
    assert path.read_text() == ORIGINAL
    assert (after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_ino, mode)
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]
    dry = install(tmp_path, "claude-code", "--project", "--dry-run")
    assert dry.returncode == 0 and b"would change" in dry.stderr  # reading is fine


def test_a_read_only_file_that_already_has_the_hook_is_fine(tmp_path: Path) -> None:
    path = settings(tmp_path)
    assert install(tmp_path, "claude-code", "--project").returncode == 0
    path.chmod(0o444)
    again = install(tmp_path, "claude-code", "--project")
    assert again.returncode == 0 and b"already installed" in again.stderr


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "directory", "device", "dangling link"])
def test_what_is_not_a_regular_file_is_refused_without_opening_it(
    tmp_path: Path, kind: str, dry_run: bool
) -> None:
    path = settings(tmp_path)
    if kind == "fifo":
        _fifo(path)
    elif kind == "link to a fifo":
        path.symlink_to(_fifo(tmp_path / "pipe"))
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/null")
    else:
        path.symlink_to(tmp_path / "missing.json")
    args = ["claude-code", "--project"] + (["--dry-run"] if dry_run else [])
    result = install(tmp_path, *args, timeout=120)  # a FIFO used to block here forever
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert "left untouched" in line
    expected = {
        "fifo": "FIFO",
        "link to a fifo": "FIFO",
        "directory": "directory",
        "device": "device",
        "dangling link": "does not exist",
    }[kind]
    assert expected in line
    assert result.stdout == b""
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]
    if kind == "fifo":
        assert stat.S_ISFIFO(path.lstat().st_mode)
    if kind in ("link to a fifo", "device", "dangling link"):
        assert path.is_symlink()


def _recorder(directory: Path) -> Path:
    """A stand-in loop-brake that records its arguments and stdin."""
    directory.mkdir(parents=True)
    program = directory / "loop-brake"
    program.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "record = {'argv': sys.argv[1:], 'stdin': sys.stdin.read()}\n"
        "open(sys.argv[0] + '.record', 'w').write(json.dumps(record))\n"
    )
    program.chmod(0o755)
    return program


@pytest.mark.parametrize(
    "folder", ["my tools", "it's $HOME; `x` (1)", "plain", "tab\there", "ünïcode dir"]
)
def test_the_command_is_quoted_for_the_shell_that_runs_it(tmp_path: Path, folder: str) -> None:
    program = _recorder(tmp_path / "opt" / folder)
    result = install(tmp_path, "claude-code", "--command", str(program))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "home" / ".claude" / "settings.json"
    command = command_of(path)
    if folder == "plain":
        assert command == f"{program} hook --agent claude-code"  # nothing to quote
    shells = ["sh"] + [name for name in ("bash", "dash", "zsh") if shutil.which(name)]
    for shell in shells:  # Claude Code and Gemini CLI: sh/bash -c; Codex: $SHELL -lc
        Path(str(program) + ".record").unlink(missing_ok=True)
        ran = subprocess.run(
            [shell, "-c", command], input=b'{"x": 1}', capture_output=True, timeout=60
        )
        assert ran.returncode == 0, (shell, ran.stderr)
        record = json.loads(Path(str(program) + ".record").read_text())
        assert record == {"argv": ["hook", "--agent", "claude-code"], "stdin": '{"x": 1}'}
    again = install(tmp_path, "claude-code", "--command", str(program))
    assert b"already installed" in again.stderr
    assert len(json.loads(path.read_text())["hooks"]["PreToolUse"]) == 1


def test_a_command_that_is_not_utf8_or_empty_is_a_usage_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for value in (b"/opt/\xff/loop-brake", b""):
        result = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "hook", "install", "claude-code"]
            + [b"--command", value],
            capture_output=True,
            env=cli_env(HOME=str(home)),
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert b"Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1
    assert not (home / ".claude").exists()
