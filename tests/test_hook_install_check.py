"""`hook install` writes an absolute path and checks what it wrote (issue 36 item 8).

A bare `loop-brake` in an agent's settings resolves through the agent's PATH, which
need not hold the venv it was installed from: the agent gets 127 and the hook fails
open. Install now writes the running program's absolute path, and before writing runs
the command once with a canary call through its store and policy, saying what it
checked; a failure leaves the file as it was (exit 7) unless --no-check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from hook_helpers import CANARY, claude_input
from test_hook_install import PROGRAM, QUOTED

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")

SCRIPT = Path(PROGRAM)
"""The venv's console script: the program a user types."""
BARE_PATH = "/usr/bin:/bin"
"""A PATH without the venv, as an agent started from the desktop has it."""


def tree(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    return home, project


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The user's shell outside the venv: a bare PATH, a fresh HOME, no store setting."""
    home, _ = tree(tmp_path)
    env = {"PATH": BARE_PATH, "HOME": str(home), "LANG": "C.UTF-8"}
    if "PYTHONPATH" in os.environ:  # a tree the runner chose (bench/mutants.py's copy)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra)
    return env


def install(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """The venv's own `loop-brake` script, run by its path (the venv not on PATH)."""
    _, project = tree(tmp_path)
    return subprocess.run(
        [str(SCRIPT), "hook", "install", *args],
        capture_output=True,
        text=True,
        env=env_for(tmp_path, **extra),
        cwd=project,
        timeout=120,
    )


def command_in(settings: Path) -> str:
    return json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]


@pytest.fixture(autouse=True)
def _the_script_exists() -> None:
    if not SCRIPT.is_file():
        pytest.skip(f"no console script beside {sys.executable}")


def test_the_written_command_runs_where_the_venv_is_not_on_path(tmp_path: Path) -> None:
    result = install(tmp_path, "claude-code")
    assert result.returncode == 0, result.stderr
    settings = tmp_path / "home" / ".claude" / "settings.json"
    command = command_in(settings)
    assert command == f"{QUOTED} hook --agent claude-code"
    # as the agent runs it: sh -c, its own PATH (no venv); the third identical call denied
    answers = []
    for i in range(1, 4):
        ran = subprocess.run(
            ["/bin/sh", "-c", command],
            input=claude_input(i),
            capture_output=True,
            env=env_for(tmp_path),
            timeout=60,
        )
        assert (ran.returncode, ran.stderr) == (0, b"")
        answers.append(ran.stdout)
    assert answers[:2] == [b"", b""]
    assert json.loads(answers[2])["hookSpecificOutput"]["permissionDecision"] == "deny"
    if shutil.which("loop-brake", path=BARE_PATH) is None:  # what a bare name gave
        bare = subprocess.run(
            ["/bin/sh", "-c", "loop-brake hook --agent claude-code"],
            input=claude_input(4),
            capture_output=True,
            env=env_for(tmp_path),
            timeout=60,
        )
        assert bare.returncode == 127


def test_it_says_what_it_checked_and_leaves_no_canary_behind(tmp_path: Path) -> None:
    result = install(tmp_path, "codex")
    assert result.returncode == 0, result.stderr
    home, project = tree(tmp_path)
    store = home / ".local" / "state" / "loop-brake" / "state.db"
    added, checked = result.stderr.splitlines()
    assert added.startswith(f"loop-brake hook install: added the hook to {home}/.codex/hooks.json")
    assert checked == (
        "loop-brake hook install: checked with one canary decision, allowed: "
        f"`{QUOTED} hook --agent codex`, the store {store}, "
        f"no policy (none found from {project})"
    )
    listed = subprocess.run(
        [str(SCRIPT), "state", "list", "--json"],
        capture_output=True,
        text=True,
        env=env_for(tmp_path),
        timeout=60,
    )
    assert (listed.returncode, listed.stdout) == (0, "")  # the canary session is gone
    markers = home / ".local" / "state" / "loop-brake" / "fail-open"
    assert not markers.exists() or not any(markers.iterdir())


def test_a_store_that_fails_leaves_the_file_alone(tmp_path: Path) -> None:
    store = tmp_path / "a-directory"
    store.mkdir()
    result = install(tmp_path, "gemini", LOOP_BRAKE_STORE=str(store))
    assert result.returncode == 7
    (line,) = result.stderr.splitlines()
    assert line.startswith("loop-brake hook install: the hook failed its check (")
    assert f"the store {store}" in line and "left as it was" in line
    assert "--no-check" in line
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    assert not settings.exists()
    forced = install(tmp_path, "gemini", "--no-check", LOOP_BRAKE_STORE=str(store))
    assert forced.returncode == 0, forced.stderr
    assert "checked" not in forced.stderr
    assert settings.exists()
    again = install(tmp_path, "gemini", LOOP_BRAKE_STORE=str(store))
    assert again.returncode == 7
    assert "left as it was (it holds this entry)" in again.stderr


def test_a_policy_found_from_here_that_does_not_load_fails_the_check(tmp_path: Path) -> None:
    _, project = tree(tmp_path)
    (project / ".loop-brake.toml").write_text("[stop]\nafter_denial = 2\n")
    result = install(tmp_path, "claude-code")
    assert result.returncode == 7
    assert f"unusable policy: {project}/.loop-brake.toml:2:1" in result.stderr
    assert f"the policy {project}/.loop-brake.toml" in result.stderr
    assert not (tmp_path / "home" / ".claude").exists()


def test_a_command_that_does_not_run_fails_the_check(tmp_path: Path) -> None:
    result = install(tmp_path, "claude-code", "--command", str(tmp_path / "no-such-program"))
    assert result.returncode == 7
    assert "the shell cannot run it (exit 127" in result.stderr
    assert not (tmp_path / "home" / ".claude").exists()


def test_a_dry_run_runs_no_canary(tmp_path: Path) -> None:
    result = install(tmp_path, "claude-code", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert f"{QUOTED} hook --agent claude-code" in result.stdout
    assert not (tmp_path / "home" / ".local").exists()  # no store was opened


def test_the_store_password_is_never_said(tmp_path: Path) -> None:
    store = f"redis://:{CANARY}@127.0.0.1:1/0"
    result = install(tmp_path, "claude-code", LOOP_BRAKE_STORE=store)
    assert result.returncode == 7
    assert "the store redis://127.0.0.1:1/0" in result.stderr
    assert CANARY not in result.stderr + result.stdout


def test_without_a_program_path_it_refuses_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loop_brake_cli.commands.hook import hook_command
    from loop_brake_cli.hook import install as install_module

    monkeypatch.setattr(install_module, "running_program", lambda: None)
    monkeypatch.setenv("HOME", str(tmp_path))
    status = hook_command.main(["install", "claude-code"], standalone_mode=False)
    assert status == 2
    assert not (tmp_path / ".claude").exists()


def test_the_venv_script_is_what_a_python_m_run_writes_too(tmp_path: Path) -> None:
    home, project = tree(tmp_path)
    env = cli_env(HOME=str(home))
    env.pop("CODEX_HOME", None)
    result = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", "install", "codex", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    assert json.loads(result.stdout)["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == (
        f"{QUOTED} hook --agent codex"
    )
