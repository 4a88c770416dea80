"""`loop-brake hook install`: merge into real settings files in a temporary HOME."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from loop_brake_cli.hook.install import InstallError, settings_path

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "loop-brake")
"""What install writes without --command: the running loop-brake's absolute path (here
``python -m loop_brake_cli`` with the script beside the interpreter)."""
QUOTED = shlex.quote(PROGRAM)


def install(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    env = cli_env(HOME=str(home))
    env.pop("CODEX_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", "install", *args],
        capture_output=True,
        env=env,
        cwd=project,
        timeout=timeout,
    )


CASES = [
    ("claude-code", ".claude/settings.json", "PreToolUse"),
    ("codex", ".codex/hooks.json", "PreToolUse"),
    ("gemini", ".gemini/settings.json", "BeforeTool"),
]


@pytest.mark.parametrize("agent, relpath, event", CASES)
def test_install_into_a_new_user_file(tmp_path: Path, agent: str, relpath: str, event: str) -> None:
    result = install(tmp_path, agent)
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "home" / relpath).read_text())
    (group,) = document["hooks"][event]
    (handler,) = group["hooks"]
    assert handler["type"] == "command"
    assert handler["command"] == f"{QUOTED} hook --agent {agent}"
    if agent == "claude-code":
        assert group["matcher"] == "*"
    if agent == "codex":
        assert set(document) == {"hooks"}  # Codex refuses other root keys


@pytest.mark.parametrize("agent, relpath, event", CASES)
def test_merge_preserves_everything_is_idempotent_and_backs_up(
    tmp_path: Path, agent: str, relpath: str, event: str
) -> None:
    path = tmp_path / "project" / relpath
    path.parent.mkdir(parents=True)
    original = {
        "model": "x",
        "hooks": {
            event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}],
        },
    }
    if agent == "codex":
        original.pop("model")
        original["description"] = "team hooks"
    original_text = json.dumps(original, indent=4)
    path.write_text(original_text)
    result = install(tmp_path, agent, "--project")
    assert result.returncode == 0, result.stderr
    merged = json.loads(path.read_text())
    assert merged["hooks"]["Stop"] == original["hooks"]["Stop"]
    assert merged["hooks"][event][0] == original["hooks"][event][0]
    assert len(merged["hooks"][event]) == 2
    for key in original:
        if key != "hooks":
            assert merged[key] == original[key]
    backups = [p for p in path.parent.iterdir() if ".bak-" in p.name]
    assert len(backups) == 1 and backups[0].read_text() == original_text
    after_first = path.read_text()
    again = install(tmp_path, agent, "--project")
    assert again.returncode == 0
    assert b"already installed" in again.stderr
    assert path.read_text() == after_first
    assert len([p for p in path.parent.iterdir() if ".bak-" in p.name]) == 1


@pytest.mark.parametrize(
    "content",
    ['{"hooks": {', "// comment\n{}", "[1, 2]", '{"hooks": []}', '{"hooks": {"PreToolUse": {}}}'],
)
def test_refuses_a_file_it_cannot_parse(tmp_path: Path, content: str) -> None:
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 3
    assert b"left untouched" in result.stderr
    assert b"Traceback" not in result.stderr
    assert path.read_text() == content
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]


def test_dry_run_prints_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"theme": "dark"}')
    result = install(tmp_path, "gemini", "--project", "--dry-run")
    assert result.returncode == 0
    printed = json.loads(result.stdout)
    assert printed["theme"] == "dark"
    assert printed["hooks"]["BeforeTool"][0]["hooks"][0]["command"].endswith("--agent gemini")
    assert b"dry run" in result.stderr
    assert path.read_text() == '{"theme": "dark"}'


def test_custom_command_and_detection_of_an_existing_entry(tmp_path: Path) -> None:
    result = install(tmp_path, "claude-code", "--command", "/opt/venv/bin/loop-brake", "--no-check")
    assert result.returncode == 0
    path = tmp_path / "home" / ".claude" / "settings.json"
    command = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command == "/opt/venv/bin/loop-brake hook --agent claude-code"
    again = install(tmp_path, "claude-code", "--command", "/opt/venv/bin/loop-brake", "--no-check")
    assert b"already installed" in again.stderr


def test_unknown_agent_is_a_usage_error(tmp_path: Path) -> None:
    result = install(tmp_path, "vim")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr


def test_cursor_is_not_installed_and_the_reason_is_documented(tmp_path: Path) -> None:
    result = install(tmp_path, "cursor")
    assert result.returncode == 2  # not a choice: the agent module has INSTALL = None
    assert b"Traceback" not in result.stderr
    assert not (tmp_path / "home" / ".cursor").exists()
    with pytest.raises(InstallError, match="hooks.json"):
        settings_path("cursor", "user")


def test_codex_user_file_follows_codex_home(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    env = cli_env(HOME=str(tmp_path / "home"), CODEX_HOME=str(codex_home))
    result = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", "install", "codex"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((codex_home / "hooks.json").read_text())
    assert document["hooks"]["PreToolUse"][0]["hooks"][0]["command"].endswith("--agent codex")
