"""`loop-brake doctor` (issue 36 item 11) on real installations in a fake HOME.

Real settings files where each agent keeps them, the real CLI in a subprocess run
from a project folder, hook entries that run (each doctor check runs the entry's
command with a canary call), a real redis-server whose maxmemory-policy is set
per test, and real SQLite stores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from hook_helpers import CANARY, claude_input
from test_hook_install import PROGRAM, QUOTED

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")

BARE_PATH = "/usr/bin:/bin"


class Setup:
    """A user's machine: HOME, a project folder (a git root), an environment."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.project = tmp / "project"
        (self.project / ".git").mkdir(parents=True)
        self.home.mkdir()
        self.env = cli_env(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"))
        for name in ("LOOP_BRAKE_STORE", "LOOP_BRAKE_STATE", "LOOP_BRAKE_POLICY", "CODEX_HOME"):
            self.env.pop(name, None)
        self.env.pop("DSH_LOOP_BRAKE_MAX_REPEATS", None)

    @property
    def store(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "loop-brake" / "state.db"

    def doctor(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, **extra)
        return subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "doctor", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.project,
            timeout=300,
        )

    def report(self, *args: str, **extra: str) -> tuple[int, dict]:
        done = self.doctor("--json", *args, **extra)
        assert done.stderr == "", done.stderr
        return done.returncode, json.loads(done.stdout)

    def install(self, agent: str, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "hook", "install", agent, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.project,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

    def write(self, relative: str, text: str, under: Path | None = None) -> Path:
        path = (under or self.home) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def settings(self, relative: str, event: str, command: str, **group: object) -> Path:
        """A settings file holding one command handler under ``event``."""
        handler = {"type": "command", "command": command}
        document = {"hooks": {event: [dict(group, hooks=[handler])]}}
        return self.write(relative, json.dumps(document))


@pytest.fixture
def machine(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def checks(report: dict, name: str) -> list[dict]:
    return [check for check in report["checks"] if check["check"] == name]


def statuses(report: dict) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for check in report["checks"]:
        found.setdefault(check["check"], set()).add(check["status"])
    return found


def test_a_working_install_is_all_green_and_leaves_no_canary(machine: Setup) -> None:
    machine.install("claude-code")
    machine.install("gemini", "--project")
    # a real session in the store: the doctor never touches it
    done = subprocess.run(
        ["/bin/sh", "-c", f"{QUOTED} hook --agent claude-code"],
        input=claude_input(1, session="real-session").decode(),
        capture_output=True,
        text=True,
        env=machine.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    before = machine.store.read_bytes()
    status, report = machine.report()
    assert status == 0, report
    assert report["ok"] is True
    assert "fail" not in {check["status"] for check in report["checks"]}
    (claude,) = checks(report, "claude-code")
    assert claude["status"] == "ok"
    assert claude["file"] == str(machine.home / ".claude" / "settings.json")
    assert claude["command"] == f"{QUOTED} hook --agent claude-code"
    assert claude["program"] == PROGRAM
    assert "answers a canary decision" in claude["detail"]
    (gemini,) = checks(report, "gemini")
    assert gemini["file"] == str(machine.project / ".gemini" / "settings.json")
    listed = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "state", "list", "--json"],
        capture_output=True,
        text=True,
        env=machine.env,
        timeout=60,
    )
    sessions = [json.loads(line)["sessionId"] for line in listed.stdout.splitlines()]
    assert sessions == ["real-session"]  # the canaries are gone, the real one is there
    assert machine.store.read_bytes() != b"" and before != b""
    text = machine.doctor()
    assert text.returncode == 0
    assert f"✓ claude-code  {machine.home}/.claude/settings.json PreToolUse: `" in text.stdout
    assert text.stdout.splitlines()[-1] == "the brake is on: no check failed"


def test_a_hook_pointing_at_a_missing_program_fails_with_its_fix(machine: Setup) -> None:
    missing = machine.tmp / "gone" / "loop-brake"
    machine.settings(".claude/settings.json", "PreToolUse", f"{missing} hook --agent claude-code")
    status, report = machine.report()
    assert status == 1 and report["ok"] is False
    (claude,) = checks(report, "claude-code")
    assert claude["status"] == "fail"
    assert f"{missing} is not there" in claude["detail"]
    assert claude["fix"] == "loop-brake hook install claude-code"
    text = machine.doctor()
    assert text.returncode == 1
    assert "✗ claude-code" in text.stdout
    assert "fix: loop-brake hook install claude-code" in text.stdout
    assert text.stdout.splitlines()[-1].startswith("1 problem would leave the brake off")


def _program_in(folder: Path, venv: bool) -> Path:
    """A `loop-brake` in ``folder``/bin that runs the real one (a venv's, or not)."""
    program = folder / "bin" / "loop-brake"
    program.parent.mkdir(parents=True)
    program.write_text(f'#!/bin/sh\nexec {QUOTED} "$@"\n')
    program.chmod(0o755)
    if venv:
        (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return program


def test_a_bare_name_found_only_through_a_venv_fails(machine: Setup) -> None:
    venv = machine.tmp / "venv"
    _program_in(venv, venv=True)
    machine.settings(".gemini/settings.json", "BeforeTool", "loop-brake hook --agent gemini")
    status, report = machine.report(PATH=f"{venv}/bin:{BARE_PATH}")
    assert status == 1
    (gemini,) = checks(report, "gemini")
    assert gemini["status"] == "fail"
    assert f"resolves only through the venv {venv} on this PATH" in gemini["detail"]
    assert gemini["fix"] == "loop-brake hook install gemini"
    # outside the venv the name is not found at all
    _, report = machine.report(PATH=BARE_PATH)
    (gemini,) = checks(report, "gemini")
    assert "`loop-brake` is not on this PATH" in gemini["detail"]


def test_a_bare_name_on_path_outside_a_venv_runs(machine: Setup) -> None:
    tools = machine.tmp / "tools"
    program = _program_in(tools, venv=False)
    machine.settings(".codex/hooks.json", "PreToolUse", "loop-brake hook --agent codex")
    status, report = machine.report(PATH=f"{tools}/bin:{BARE_PATH}")
    assert status == 0, report
    (codex,) = checks(report, "codex")
    assert codex["status"] == "ok" and codex["program"] == str(program)


def test_a_hook_whose_store_fails_is_a_failure(machine: Setup) -> None:
    machine.install("claude-code", "--no-check")
    folder = machine.tmp / "a-directory"
    folder.mkdir()
    status, report = machine.report(LOOP_BRAKE_STORE=str(folder))
    assert status == 1
    (store,) = checks(report, "store")
    assert store["status"] == "fail" and store["store"] == str(folder)
    (claude,) = checks(report, "claude-code")
    assert claude["status"] == "fail"
    assert "it runs, but the brake is off" in claude["detail"]


def test_a_policy_that_does_not_load_fails(machine: Setup) -> None:
    policy = machine.write(".loop-brake.toml", "[stop]\nafter_denial = 2\n", machine.project)
    status, report = machine.report()
    assert status == 1
    (line,) = checks(report, "policy")
    assert line["status"] == "fail"
    assert line["detail"].startswith(f"{policy} does not load, so every hook call fails open")
    assert f"{policy}:2:1" in line["detail"]


def test_an_invalid_max_repeats_in_the_environment_fails(machine: Setup) -> None:
    status, report = machine.report(DSH_LOOP_BRAKE_MAX_REPEATS="three")
    assert status == 1
    (line,) = checks(report, "maxRepeats")
    assert line["status"] == "fail" and "every hook call fails open" in line["detail"]


def test_the_agents_own_switches_that_turn_hooks_off(machine: Setup) -> None:
    machine.install("claude-code")
    path = machine.home / ".claude" / "settings.local.json"
    machine.write(".claude/settings.local.json", '{"disableAllHooks": true}', machine.project)
    machine.write(
        ".codex/config.toml",
        "[features]\nhooks = false\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\n"
        f'type = "command"\ncommand = "{PROGRAM} hook --agent codex"\n',
    )
    status, report = machine.report()
    assert status == 1
    details = [c["detail"] for c in report["checks"] if c["status"] == "fail"]
    assert any("disableAllHooks is true in" in d and "settings.local.json" in d for d in details)
    assert any("[features] hooks = false" in d for d in details)
    codex = [c for c in checks(report, "codex") if c["status"] == "ok"]
    assert codex and codex[0]["file"].endswith("config.toml")  # the inline entry runs
    assert not path.exists()


def test_cursor_flat_hooks_are_checked(machine: Setup) -> None:
    document = {
        "version": 1,
        "hooks": {"preToolUse": [{"command": f"{QUOTED} hook --agent cursor"}]},
    }
    machine.write(".cursor/hooks.json", json.dumps(document), machine.project)
    status, report = machine.report("--agent", "cursor")
    assert status == 0, report
    (cursor,) = checks(report, "cursor")
    assert cursor["status"] == "ok" and cursor["event"] == "preToolUse"


def test_an_agent_asked_for_without_a_hook_fails(machine: Setup) -> None:
    status, report = machine.report("--agent", "codex")
    assert status == 1
    (codex,) = checks(report, "codex")
    assert codex["status"] == "fail" and codex["fix"] == "loop-brake hook install codex"


def test_agents_with_settings_but_no_hook_anywhere_fail(machine: Setup) -> None:
    machine.write(".claude/settings.json", '{"model": "x"}')
    status, report = machine.report()
    assert status == 1
    (hook,) = checks(report, "hook")
    assert hook["status"] == "fail" and "installed for no agent" in hook["detail"]
    assert checks(report, "claude-code")[0]["status"] == "info"
    # nothing of any agent here: said, not failed
    (machine.home / ".claude" / "settings.json").unlink()
    (machine.home / ".claude").rmdir()
    status, report = machine.report()
    assert status == 0
    assert checks(report, "hook")[0]["status"] == "info"


def test_a_progress_policy_without_the_post_tool_event_warns(machine: Setup) -> None:
    machine.install("claude-code")
    machine.write(".loop-brake.toml", "progress = true\n", machine.project)
    status, report = machine.report()
    assert status == 0
    warned = [c for c in checks(report, "claude-code") if c["status"] == "warn"]
    assert warned and "PostToolUse" in warned[0]["detail"]


def test_fail_open_notices_of_the_last_week_warn(machine: Setup) -> None:
    policy = machine.write("bad.toml", "[stop]\nafter_denial = 2\n", machine.tmp)
    done = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", "--policy", str(policy)],
        input=claude_input(1, session="told"),
        capture_output=True,
        env=machine.env,
        timeout=60,
    )
    assert b"loop brake is off for this session" in done.stdout
    _, report = machine.report()
    (line,) = checks(report, "fail-open")
    assert line["status"] == "warn" and line["sessions"] == 1


def test_sqlite_store_kinds_and_permissions(machine: Setup) -> None:
    machine.install("claude-code")  # creates the default store through the canary
    machine.store.chmod(0o644)
    _, report = machine.report()
    warned = [c for c in checks(report, "store") if c["status"] == "warn"]
    assert warned and "mode 0644" in warned[0]["detail"]
    assert warned[0]["fix"] == f"chmod 600 {machine.store}"
    text = machine.tmp / "notes.txt"
    text.write_text("not a database\n" * 100)
    status, report = machine.report("--store", str(text))
    assert status == 1
    assert "is not an SQLite file" in checks(report, "store")[0]["detail"]
    assert text.read_text() == "not a database\n" * 100  # left untouched


@pytest.fixture
def redis(tmp_path: Path):
    from redis_server import RedisServer

    server = RedisServer().start()
    yield server
    server.stop()


def test_redis_eviction_policy(machine: Setup, redis) -> None:
    redis.command("CONFIG", "SET", "maxmemory", "104857600")
    redis.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
    status, report = machine.report("--store", redis.url)
    assert status == 1
    (store,) = checks(report, "store")
    assert store["status"] == "fail"
    assert "maxmemory-policy is volatile-lru" in store["detail"]
    assert "maxmemory 104857600 bytes" in store["detail"]
    assert "noeviction" in store["fix"]
    text = machine.doctor("--store", redis.url)
    assert "✗ store" in text.stdout and "fix: redis-cli CONFIG SET" in text.stdout
    redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    status, report = machine.report("--store", redis.url)
    assert status == 0, report
    assert [c["status"] for c in checks(report, "store")] == ["ok", "ok"]
    extra = checks(report, "extra redis")[0]
    assert extra["status"] == "ok" and extra["needed"] is True
    assert redis.command("DBSIZE") == "0"  # the canary count was forgotten


def test_a_hook_entry_names_its_own_redis_store(machine: Setup, redis) -> None:
    redis.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    machine.settings(
        ".claude/settings.json",
        "PreToolUse",
        f"{QUOTED} hook --agent claude-code --store {redis.url}",
    )
    status, report = machine.report()
    assert status == 1
    failed = [c for c in checks(report, "store") if c["status"] == "fail"]
    assert failed and failed[0]["store"] == redis.url
    assert "maxmemory is 0 now" in failed[0]["detail"]
    assert checks(report, "claude-code")[0]["status"] == "ok"  # it answers, meanwhile


def test_no_secret_is_ever_printed(machine: Setup, redis) -> None:
    """Another hook's command, a password in a store URL, a session id: none is said."""
    machine.write(
        ".claude/settings.json",
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"hooks": [{"type": "command", "command": f"guard --token {CANARY}"}]},
                        {"hooks": [{"type": "command", "command": f"{QUOTED} hook"}]},
                    ]
                }
            }
        ),
    )
    redis.command("CONFIG", "SET", "requirepass", "another-password")
    store = redis.url.replace("redis://", f"redis://:{CANARY}@")
    for args in ((), ("--json",)):
        done = machine.doctor(*args, LOOP_BRAKE_STORE=store)
        assert done.returncode == 1  # the password is refused by the server
        assert "WRONGPASS" in done.stdout or "AuthenticationError" in done.stdout
        assert CANARY not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr


def test_an_unreadable_settings_file_naming_loop_brake_fails(machine: Setup) -> None:
    machine.write(".claude/settings.json", '{"hooks": {"PreToolUse": [ // loop-brake hook\n')
    status, report = machine.report()
    assert status == 1
    (line,) = [c for c in checks(report, "claude-code") if c["status"] == "fail"]
    assert "cannot be read: not JSON (line 1, column" in line["detail"]


def test_a_terminal_that_cannot_show_the_marks_gets_ascii(machine: Setup) -> None:
    machine.install("claude-code")
    done = machine.doctor(PYTHONIOENCODING="ascii")
    assert done.returncode == 0, done.stderr
    assert "+ claude-code" in done.stdout and "✓" not in done.stdout


def test_usage_errors_exit_2(machine: Setup) -> None:
    done = machine.doctor("--agent", "vim")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
