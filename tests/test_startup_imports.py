"""Start-up: each command imports what its input needs and nothing more (issue 12).

Which modules a real run loaded, not how long it took (speed is measured by
bench/startup.py): an adapter is imported when its format is named or when
detection reaches its sniff; the hook, run before every tool call, imports
neither click nor dataclasses nor any transcript format.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env

from loop_brake_cli.formats import FORMATS

SAMPLES = ROOT / "samples" / "formats"
ADAPTER_MODULES = {f"loop_brake_cli.formats.{module}" for module in FORMATS.values()}

# Runs the console entry point in this process and writes sys.modules when it ends
# (the hook ends through os._exit, skipping teardown and atexit: recorded just before).
PROBE = """
import json, os, sys
out = sys.argv[1]
def record():
    with open(out, "w") as handle:
        json.dump(sorted(sys.modules), handle)
exit_now = os._exit
def recorded_exit(status):
    record()
    exit_now(status)
os._exit = recorded_exit
sys.argv = ["loop-brake", *sys.argv[2:]]
from loop_brake_cli.entry import main
try:
    main()
finally:
    record()
"""


def loaded(tmp_path: Path, *args: str, stdin: bytes = b"") -> set[str]:
    """The modules a real ``loop-brake ARGS`` run had imported when it exited."""
    out = tmp_path / "modules.json"
    env = cli_env(HOME=str(tmp_path), LOOP_BRAKE_STATE=str(tmp_path / "state.db"))
    env.pop("LOOP_BRAKE_POLICY", None)
    subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    return set(json.loads(out.read_text()))


def adapters(modules: set[str]) -> set[str]:
    return {name.rsplit(".", 1)[1] for name in modules & ADAPTER_MODULES}


def test_filter_on_events_imports_only_the_events_adapter(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "filter", str(SAMPLES / "events.jsonl"))
    assert "loop_brake_cli.pipeline" in modules  # the run did judge
    assert adapters(modules) == {"events"}
    assert not {"gzip", "rich", "loop_brake_cli.policy.model", "tomllib"} & modules


def test_filter_on_an_empty_file_imports_only_the_events_adapter(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert adapters(loaded(tmp_path, "filter", str(empty))) == {"events"}


def test_a_named_format_imports_that_adapter_alone(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "replay", "--format", "codex", str(SAMPLES / "codex.jsonl"))
    assert adapters(modules) == {"codex"}


def test_detection_stops_at_the_first_format_that_recognises_the_input(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "replay", str(SAMPLES / "claude-code.jsonl"))
    assert adapters(modules) == {"claude_code"}  # the first in detection order
    modules = loaded(tmp_path, "replay", str(SAMPLES / "codex.jsonl"))
    first = list(FORMATS.values())
    assert adapters(modules) == set(first[: first.index("codex") + 1])


def test_the_hook_imports_no_click_dataclasses_or_formats(tmp_path: Path) -> None:
    call = {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "t1",
    }
    modules = loaded(tmp_path, "hook", stdin=json.dumps(call).encode())
    assert "loop_brake_cli.stores.sqlite_store" in modules  # the call was counted
    assert not {"click", "dataclasses", "loop_brake_cli.formats", "rich"} & modules
