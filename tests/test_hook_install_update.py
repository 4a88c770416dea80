"""`hook install --policy FILE` over an installed entry updates it, and says so (issue 23).

It used to answer "already installed" and leave the old command, so the user
believed the new policy was live. An identical entry is still left as it is.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import ROOT
from test_hook_install import CASES, QUOTED, install

POLICY = str(ROOT / "samples" / "policies" / "write-stdin.toml")
PROGRESS = str(ROOT / "samples" / "policies" / "progress.toml")


def commands(tmp_path: Path, relpath: str) -> dict[str, list[str]]:
    document = json.loads((tmp_path / "home" / relpath).read_text())
    return {
        event: [handler["command"] for group in groups for handler in group["hooks"]]
        for event, groups in document["hooks"].items()
    }


@pytest.mark.parametrize("agent, relpath, event", CASES)
def test_a_new_policy_replaces_the_installed_entry(
    tmp_path: Path, agent: str, relpath: str, event: str
) -> None:
    assert install(tmp_path, agent).returncode == 0
    result = install(tmp_path, agent, "--policy", POLICY)
    assert result.returncode == 0, result.stderr
    wanted = f"{QUOTED} hook --agent {agent} --policy {shlex.quote(POLICY)}"
    assert commands(tmp_path, relpath) == {event: [wanted]}
    err = result.stderr.decode()
    assert f"updated the hook (its command is now `{wanted}`) in" in err, err
    again = install(tmp_path, agent, "--policy", POLICY)
    assert "already installed" in again.stderr.decode()
    assert commands(tmp_path, relpath) == {event: [wanted]}
    back = install(tmp_path, agent)  # without --policy: the plain entry again, said so
    assert commands(tmp_path, relpath) == {event: [f"{QUOTED} hook --agent {agent}"]}
    assert "updated the hook" in back.stderr.decode()


def test_a_progress_policy_then_another_updates_every_event(tmp_path: Path) -> None:
    assert install(tmp_path, "claude-code", "--policy", PROGRESS).returncode == 0
    relpath = ".claude/settings.json"
    first = commands(tmp_path, relpath)
    assert set(first) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    result = install(tmp_path, "claude-code", "--policy", POLICY)  # no progress
    assert result.returncode == 0, result.stderr
    wanted = f"{QUOTED} hook --agent claude-code --policy {shlex.quote(POLICY)}"
    assert commands(tmp_path, relpath) == {"PreToolUse": [wanted]}


def test_a_dry_run_says_it_would_update(tmp_path: Path) -> None:
    assert install(tmp_path, "codex").returncode == 0
    before = (tmp_path / "home" / ".codex" / "hooks.json").read_bytes()
    result = install(tmp_path, "codex", "--policy", POLICY, "--dry-run")
    assert result.returncode == 0
    assert "would update the hook" in result.stderr.decode()
    assert (tmp_path / "home" / ".codex" / "hooks.json").read_bytes() == before


def test_without_command_the_installed_program_is_kept(tmp_path: Path) -> None:
    """A program the user chose stays while it is an executable file (it passes the
    check: it runs the real loop-brake)."""
    program = tmp_path / "my tools" / "loop-brake"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\nexec {QUOTED} "$@"\n')
    program.chmod(0o755)
    assert install(tmp_path, "claude-code", "--command", str(program)).returncode == 0
    result = install(tmp_path, "claude-code", "--policy", POLICY)
    assert result.returncode == 0, result.stderr
    wanted = f"{shlex.quote(str(program))} hook --agent claude-code --policy {shlex.quote(POLICY)}"
    assert commands(tmp_path, ".claude/settings.json") == {"PreToolUse": [wanted]}
    assert "updated the hook" in result.stderr.decode()


@pytest.mark.parametrize("installed", ["loop-brake", "/opt/gone/bin/loop-brake"])
def test_a_bare_or_vanished_program_is_replaced_by_this_ones_path(
    tmp_path: Path, installed: str
) -> None:
    """Issue 36 item 8: an entry that names `loop-brake` bare (as install once wrote)
    resolves through the agent's PATH; one whose program is gone cannot run. Install
    again, without --command, writes this program's absolute path and says so."""
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    old = f"{installed} hook --agent claude-code"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"command": old}]}]}}))
    result = install(tmp_path, "claude-code")
    assert result.returncode == 0, result.stderr
    wanted = f"{QUOTED} hook --agent claude-code"
    assert commands(tmp_path, ".claude/settings.json") == {"PreToolUse": [wanted]}
    assert f"updated the hook (its command is now `{wanted}`)" in result.stderr.decode()


def test_a_same_error_policy_installs_the_post_tool_events_too(tmp_path: Path) -> None:
    """Issue 29: [same_error] reads results, so the entry goes to the post-tool events as
    progress does (Claude Code's failures arrive as PostToolUseFailure)."""
    same_error = str(ROOT / "samples" / "policies" / "same-error.toml")
    result = install(tmp_path, "claude-code", "--policy", same_error)
    assert result.returncode == 0, result.stderr
    installed = commands(tmp_path, ".claude/settings.json")
    assert set(installed) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    window = str(ROOT / "samples" / "policies" / "window.toml")  # calls only
    assert install(tmp_path, "claude-code", "--policy", window).returncode == 0
    assert set(commands(tmp_path, ".claude/settings.json")) == {"PreToolUse"}
