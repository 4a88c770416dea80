"""`loop-brake doctor`: the entry, store and fail-open checks docs/hook.md describes.

Beside tests/test_doctor.py (its ``Setup``: a fake HOME, the real CLI): a program
that is not executable is a ✗; two different loop-brake hooks before each call, or a
matcher that leaves tools out, are warnings; a policy that needs no post-tool or
user-turn event warns of none; a store others of its group may read is a warning;
the fail-open notices counted are those of the last seven days.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import ROOT
from test_doctor import Setup, checks
from test_hook_install import QUOTED

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")

DAY = 86400


@pytest.fixture
def machine(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def test_a_program_that_is_not_executable_fails(machine: Setup) -> None:
    program = machine.tmp / "tools" / "loop-brake"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\nexec {QUOTED} "$@"\n')
    program.chmod(0o644)
    machine.settings(".claude/settings.json", "PreToolUse", f"{program} hook --agent claude-code")
    status, report = machine.report()
    assert status == 1
    (claude,) = checks(report, "claude-code")
    assert claude["status"] == "fail" and f"{program} is not executable" in claude["detail"]


def test_two_different_hooks_and_a_partial_matcher_warn(machine: Setup) -> None:
    machine.install("claude-code")
    handler = {"type": "command", "command": f"{QUOTED} hook --agent claude-code --max-repeats 5"}
    document = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}
    machine.write(".claude/settings.json", json.dumps(document), machine.project)
    status, report = machine.report()
    assert status == 0, report
    warned = [c["detail"] for c in checks(report, "claude-code") if c["status"] == "warn"]
    assert any("the matcher 'Bash' leaves the other tools unbraked" in d for d in warned)
    assert any("2 different loop-brake hooks run before each call" in d for d in warned)


def test_a_policy_that_needs_no_other_event_warns_of_none(machine: Setup) -> None:
    machine.install("claude-code")
    shutil.copy(
        ROOT / "samples" / "policies" / "write-stdin.toml", machine.project / ".loop-brake.toml"
    )
    status, report = machine.report()
    assert status == 0, report
    assert {c["status"] for c in checks(report, "claude-code")} == {"ok"}


def test_a_store_its_group_may_read_warns(machine: Setup) -> None:
    machine.install("claude-code")  # creates the default store through the canary
    machine.store.chmod(0o640)
    _, report = machine.report()
    warned = [c for c in checks(report, "store") if c["status"] == "warn"]
    assert warned and "mode 0640" in warned[0]["detail"]


def test_fail_open_notices_are_counted_for_seven_days(machine: Setup) -> None:
    folder = Path(machine.env["XDG_STATE_HOME"]) / "loop-brake" / "fail-open"
    folder.mkdir(parents=True)
    now = time.time()
    for name, age in (("a" * 32, 2 * DAY), ("b" * 32, 6 * DAY), ("c" * 32, 8 * DAY)):
        marker = folder / name
        marker.touch()
        os.utime(marker, (now - age, now - age))
    _, report = machine.report()
    (line,) = checks(report, "fail-open")
    assert line["status"] == "warn" and line["sessions"] == 2
