"""`loop-brake hook uninstall`: our handlers out of the pre-tool and post-tool events, and
nothing else touched (the reverse of hook install's minimal text edit)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from loop_brake_cli.hook.settings_edit import remove_hook_entries

OURS = re.compile(r"(^|[\s/\\\"'])loop-brake(\.exe)?[\"']?\s+hook(\s|$)")


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    env = cli_env(HOME=str(home))
    env.pop("CODEX_HOME", None)
    env.pop("LOOP_BRAKE_POLICY", None)
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", *args],
        capture_output=True,
        env=env,
        cwd=project,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("agent", "relpath"),
    [
        ("claude-code", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
    ],
)
def test_uninstall_takes_out_what_a_progress_install_put_in(
    tmp_path: Path, agent: str, relpath: str
) -> None:
    settings = tmp_path / "project" / relpath
    settings.parent.mkdir(parents=True)
    original = '{\n  "theme": "dark",\n  "n": 1e400\n}\n'
    settings.write_text(original)
    (tmp_path / "project" / ".loop-brake.toml").write_text("progress = true\n")
    assert run(tmp_path, "install", agent, "--project").returncode == 0
    assert len(json.loads(settings.read_text())["hooks"]) >= 2
    dry = run(tmp_path, "uninstall", agent, "--project", "--dry-run")
    assert dry.returncode == 0 and b"would change" in dry.stderr
    assert json.loads(dry.stdout)["hooks"] == {}
    assert len(json.loads(settings.read_text())["hooks"]) >= 2  # unchanged
    done = run(tmp_path, "uninstall", agent, "--project")
    assert done.returncode == 0 and b"removed the hook" in done.stderr
    assert settings.read_text() == original.replace("1e400\n}", '1e400,\n  "hooks": {}\n}')
    again = run(tmp_path, "uninstall", agent, "--project")
    assert again.returncode == 0 and b"no loop-brake hook" in again.stderr


def test_other_handlers_groups_and_events_stay_byte_for_byte() -> None:
    text = (
        '{"hooks": {\n'
        '  "PreToolUse": [\n'
        '    {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"},'
        ' {"type": "command", "command": "/opt/bin/loop-brake hook --agent claude-code"}]},\n'
        '    {"matcher": "*", "hooks": [{"type": "command", "command": "loop-brake hook"}]}\n'
        "  ],\n"
        '  "PostToolUse": [{"hooks": [{"type": "command", "command": "loop-brake hook"}]}],\n'
        '  "Stop": [{"hooks": [{"type": "command", "command": "loop-brake hook"}]}]\n'
        "}}\n"
    )
    events = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
    out = remove_hook_entries(text, events, lambda c: OURS.search(c) is not None)
    assert out == (
        '{"hooks": {\n'
        '  "PreToolUse": [\n'
        '    {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}\n'
        "  ],\n"
        '  "Stop": [{"hooks": [{"type": "command", "command": "loop-brake hook"}]}]\n'
        "}}\n"
    )
    assert remove_hook_entries(out, events, lambda c: OURS.search(c) is not None) is None


def test_a_file_it_cannot_edit_exactly_is_left_untouched(tmp_path: Path) -> None:
    settings = tmp_path / "project" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    broken = '{"hooks": {"PreToolUse": [] /* a comment */}}\n'
    settings.write_text(broken)
    result = run(tmp_path, "uninstall", "claude-code", "--project")
    assert result.returncode == 3 and b"left untouched" in result.stderr
    assert settings.read_text() == broken
    assert run(tmp_path, "uninstall", "cursor").returncode == 2  # never installed either
