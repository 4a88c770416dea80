"""The files a user names besides the input are read bounded and never waited on.

``--prices`` and a ``--config`` PATCH_FILE (and check-config's PATCH_FILE) used to
be read whole with a plain ``open``: ``/dev/zero`` read without limit, and a FIFO
blocked check-config and ``filter --config`` forever (their "can it be opened"
look waited for a writer). Each is now one line naming the file, at once, as a
policy file is (tests/test_policy_files.py). And a bug is one line too: the
exception's type, never its message, which could quote an argument.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

from loop_brake_cli.analysis.prices import MAX_PRICES_BYTES
from loop_brake_cli.config.load import MAX_PATCH_BYTES

SAMPLE = str(ROOT / "samples" / "stuck-agent.jsonl")
CANARY = "canary-small-files-7e02"

pytestmark = pytest.mark.skipif(
    not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="POSIX"
)


def special_file(kind: str, tmp_path: Path, limit: int) -> tuple[str, str]:
    """A path that is not a usable file, and what the error must say of it."""
    if kind == "device":
        return "/dev/zero", "is a character device, not a regular file"
    if kind == "fifo":
        path = tmp_path / "named.fifo"
        os.mkfifo(path)
        return str(path), "is a named pipe (FIFO), not a regular file"
    path = tmp_path / "big.txt"
    path.write_bytes(b"# padding\n" * (limit // 10 + 1))
    return str(path), f"is larger than {limit} bytes ({path.stat().st_size})"


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # The timeout only turns a regression (a blocked open or read) into a failure.
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", *args],
        capture_output=True,
        env=env or cli_env(),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("kind", ["device", "fifo", "large"])
@pytest.mark.parametrize(
    "command, what, limit",
    [
        (["replay", "--prices", "{}", SAMPLE], "prices file", MAX_PRICES_BYTES),
        (["filter", "--config", "{}", SAMPLE], "patch file", MAX_PATCH_BYTES),
        (["replay", "--config", "{}", SAMPLE], "patch file", MAX_PATCH_BYTES),
        (["check-config", "{}"], "patch file", MAX_PATCH_BYTES),
    ],
)
def test_an_unusable_named_file_is_one_line_and_exit_2(
    tmp_path: Path, kind: str, command: list[str], what: str, limit: int
) -> None:
    path, reason = special_file(kind, tmp_path, limit)
    result = run([path if word == "{}" else word for word in command])
    err = result.stderr.decode()
    assert result.returncode == 2, err
    prefix = f"loop-brake {command[0]}: " + ("error: " if command[0] == "check-config" else "")
    assert err.splitlines() == [f"{prefix}{path}: the {what} {reason}"]
    assert result.stdout == b""


def test_a_missing_prices_file_is_unreadable_input(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.toml")
    result = run(["replay", "--prices", missing, SAMPLE])
    assert result.returncode == 3
    assert result.stderr.decode().splitlines() == [
        f"loop-brake replay: {missing}: cannot open the prices file: No such file or directory"
    ]


BUG = f"""
import sys
import loop_brake_cli.commands._options as options

def broken(paths):
    raise KeyError({CANARY!r})

options.unopenable = broken
from loop_brake_cli.cli import main
main(sys.argv[1:])
"""


def test_a_bug_is_one_line_naming_the_exception_type_never_its_message(tmp_path: Path) -> None:
    patch = tmp_path / "p.yml"
    patch.write_text("loop-brake: {}\n")
    args = [sys.executable, "-c", BUG, "check-config", str(patch)]
    done = subprocess.run(args, capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 70
    assert done.stderr == b"loop-brake: internal error (KeyError); please report it\n"
    assert done.stdout == b""
    shown = subprocess.run(
        args, capture_output=True, env=cli_env(LOOP_BRAKE_TRACEBACK="1"), timeout=60
    )
    assert shown.returncode == 1 and b"Traceback" in shown.stderr  # asked for: the report
