"""`hook install` writes a command the agent's shell runs as meant, from docs/hook.md.

The program is an absolute path even when install was started by a relative one; an
installed program is kept only while it is an executable file; a policy path is one
word for the shell whatever it holds.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, cli_env
from test_hook_install import PROGRAM, QUOTED, install

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")

POLICY = ROOT / "samples" / "policies" / "write-stdin.toml"


def _command(tmp_path: Path) -> str:
    document = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    return document["hooks"]["PreToolUse"][0]["hooks"][0]["command"]


def test_a_relative_program_is_written_as_an_absolute_path(tmp_path: Path) -> None:
    if not os.path.isfile(PROGRAM):
        pytest.skip("no console script beside the interpreter")
    project = tmp_path / "project"
    (tmp_path / "home").mkdir()
    project.mkdir()
    relative = os.path.relpath(PROGRAM, project)
    assert not os.path.isabs(relative)
    done = subprocess.run(
        [relative, "hook", "install", "claude-code"],
        capture_output=True,
        env=cli_env(HOME=str(tmp_path / "home")),
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _command(tmp_path) == f"{QUOTED} hook --agent claude-code"


def test_an_installed_program_that_is_not_executable_is_replaced(tmp_path: Path) -> None:
    program = tmp_path / "tools" / "loop-brake"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\nexec {QUOTED} "$@"\n')
    program.chmod(0o644)
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    old = f"{shlex.quote(str(program))} hook --agent claude-code"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"command": old}]}]}}))
    result = install(tmp_path, "claude-code")
    assert result.returncode == 0, result.stderr
    assert _command(tmp_path) == f"{QUOTED} hook --agent claude-code"


def test_a_policy_path_with_a_space_is_one_word(tmp_path: Path) -> None:
    policy = tmp_path / "my policies" / "write stdin.toml"
    policy.parent.mkdir()
    policy.write_bytes(POLICY.read_bytes())
    result = install(tmp_path, "claude-code", "--policy", str(policy))
    assert result.returncode == 0, result.stderr
    command = _command(tmp_path)
    assert shlex.split(command)[-2:] == ["--policy", str(policy)]
