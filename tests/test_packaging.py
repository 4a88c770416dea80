"""What an install builds: the optional C reader as one stable-ABI (abi3) extension, or,
without a C compiler, a pure wheel and one line on the terminal that says so.

The wheels are built offline from a copy of the tracked files (``pip wheel
--no-build-isolation`` with the test extra's setuptools), a pty standing in for the
user's terminal: pip hides a build's output, so the line must reach the terminal
itself.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOT_BUILT = "loop-brake-cli: the optional C reader was not built"


def _checkout_copy(tmp_path: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    copy = tmp_path / "src"
    for name in filter(None, files):
        target = copy / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / os.fsdecode(name)).is_file():
            shutil.copy2(ROOT / os.fsdecode(name), target)
    return copy


def _build_on_a_terminal(src: Path, out: Path, **env: str) -> str:
    """Build a wheel with pip under a pty; what the terminal showed."""
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    argv += ["--no-index", "-w", str(out), str(src)]
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        os.chdir(src)
        os.execve(sys.executable, argv, {**os.environ, **env})
    shown = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    _, status = os.waitpid(pid, 0)
    text = shown.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    return text


def _wheel(out: Path) -> tuple[str, list[str]]:
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return wheel.name, archive.namelist()


def test_without_a_compiler_the_install_says_so_in_one_line_and_builds_a_pure_wheel(tmp_path):
    out = tmp_path / "wheels"
    shown = _build_on_a_terminal(_checkout_copy(tmp_path), out, CC="/bin/false")
    lines = [line for line in shown.splitlines() if NOT_BUILT in line]
    assert len(lines) == 1, shown
    assert "pip install --force-reinstall" in lines[0]
    name, members = _wheel(out)
    assert name.endswith("-py3-none-any.whl"), name
    assert not [m for m in members if m.endswith((".so", ".pyd"))]
    # the Redis store reads its scripts beside it (package data)
    assert {"loop_brake_cli/stores/redis_step.lua", "loop_brake_cli/stores/redis_cas.lua"} <= set(
        members
    )


@pytest.mark.skipif(
    shutil.which("gcc") is None and not os.environ.get("CI"), reason="no C compiler here"
)
def test_with_a_compiler_one_abi3_wheel_holds_the_reader_and_nothing_is_said(tmp_path):
    out = tmp_path / "wheels"
    shown = _build_on_a_terminal(_checkout_copy(tmp_path), out)
    assert NOT_BUILT not in shown
    name, members = _wheel(out)
    assert "-cp310-abi3-" in name, name
    assert "loop_brake_cli/readers/_event_scan.abi3.so" in members


def test_the_version_says_when_the_reader_was_not_built():
    hide = (
        "import sys; sys.modules['loop_brake_cli.readers._event_scan'] = None; "
        "from loop_brake_cli.cli import main; sys.argv = ['loop-brake', '--version']; main()"
    )
    run = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    reader = run.stdout.splitlines()[1]
    assert reader.startswith("event reader: Python (the optional C reader was not built")
    assert "install gcc" in reader
