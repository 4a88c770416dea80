"""Start-up: each command imports what its input needs and nothing more (issue 12).

Which modules a real run loaded, not how long it took (speed is measured by
bench/startup.py): an adapter is imported when its format is named or when
detection reaches its sniff; the hook, run before every tool call, imports
neither click nor dataclasses nor any transcript format, and, allowed or
denied, none of typing, json, re or enum (a third of its start-up when it
did, issue 30), nor a store it was not pointed at (Redis) nor a policy's
pattern engine.
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
import os, sys
START = sorted(sys.modules)  # what the interpreter (site, an editable install's finder) loaded
out = sys.argv[1]
def record():
    end = sorted(sys.modules)  # taken before json is imported to write it
    import json
    with open(out, "w") as handle:
        json.dump({"start": START, "end": end}, handle)
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


def probe(tmp_path: Path, *args: str, stdin: bytes = b"") -> dict[str, list[str]]:
    """The modules loaded when a real ``loop-brake ARGS`` run started and when it exited."""
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
    return json.loads(out.read_text())


def loaded(tmp_path: Path, *args: str, stdin: bytes = b"") -> set[str]:
    """The modules a real ``loop-brake ARGS`` run had imported when it exited."""
    return set(probe(tmp_path, *args, stdin=stdin)["end"])


def imported(tmp_path: Path, *args: str, stdin: bytes = b"") -> set[str]:
    """The modules the run itself imported (not the interpreter's start-up)."""
    modules = probe(tmp_path, *args, stdin=stdin)
    return set(modules["end"]) - set(modules["start"])


def adapters(modules: set[str]) -> set[str]:
    return {name.rsplit(".", 1)[1] for name in modules & ADAPTER_MODULES}


def test_filter_on_events_imports_only_the_events_adapter(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "filter", str(SAMPLES / "events.jsonl"))
    assert "loop_brake_cli.readers.pipeline" in modules  # the run did judge
    assert adapters(modules) == {"events"}
    assert not {"gzip", "rich", "loop_brake_cli.core.policy.model", "tomllib"} & modules


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


def test_replay_imports_neither_filters_fast_path_nor_a_process_pool(tmp_path: Path) -> None:
    """``replay --json`` of one transcript (bench/run.py's replay, issue 41 goal 5) loads
    none of filter's fast path (its prover, its verdict templates: the GC's pace lives
    in readers/gc_pace.py) nor ``concurrent.futures`` (only ``-j N`` starts workers)."""
    modules = loaded(tmp_path, "replay", "--json", str(SAMPLES / "claude-code.jsonl"))
    assert "loop_brake_cli.analysis.analyzer" in modules  # the replay did run
    assert "loop_brake_cli.readers.gc_pace" in modules
    unwanted = {
        "loop_brake_cli.readers.fastpath",
        "loop_brake_cli.readers.prove",
        "concurrent.futures",
    }
    assert not unwanted & modules


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


# What the hook must not import itself (the console script pip writes imports re, and an
# editable install's finder pathlib, before the hook runs: PROBE calls the entry point).
HOOK_NEVER = {
    "click",
    "dataclasses",
    "enum",
    "json",
    "loop_brake_cli.formats",
    "loop_brake_cli.readers.output",
    "loop_brake_cli.core.policy.load",
    "loop_brake_cli.core.policy.model",
    "loop_brake_cli.stores.redis_store",
    "pathlib",
    "re",
    "re2",
    "redis",
    "rich",
    "typing",
    "warnings",
}


def hook_call(call_id: str) -> bytes:
    return json.dumps(
        {
            "session_id": "s",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": call_id,
        }
    ).encode()


def test_an_allowed_and_a_denied_hook_call_import_none_of_typing_json_re(
    tmp_path: Path,
) -> None:
    for i in (1, 2):  # allowed
        modules = imported(tmp_path, "hook", stdin=hook_call(f"t{i}"))
        assert "loop_brake_cli.stores.sqlite_store" in modules
        assert not HOOK_NEVER & modules, HOOK_NEVER & modules
    modules = imported(tmp_path, "hook", "--agent", "claude-code", stdin=hook_call("t3"))
    assert "loop_brake_cli.hook.answer" in modules  # the third call was denied
    assert not HOOK_NEVER & modules, HOOK_NEVER & modules


PUBLIC_API = """
import sys
START = set(sys.modules)
from loop_brake_cli import LoopBrake, LoopBrakeError, Verdict
b = LoopBrake(max_repeats=2)
b.check("t", {"a": 1}, session_id="s")
v = b.check("t", {"a": 1}, session_id="s")
assert isinstance(v, Verdict) and v.denied and v._fields[0] == "denied", v
assert not {"typing", "json", "re"} & (set(sys.modules) - START), set(sys.modules) - START
from loop_brake_cli import attach, dispose
assert callable(attach) and callable(dispose) and issubclass(LoopBrakeError, Exception)
print(v.hash_prefix)
"""


def test_the_public_api_imports_from_the_package_without_typing_json_re(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PUBLIC_API],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env=cli_env(HOME=str(tmp_path)),
    )
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.strip()) == 12


def test_the_version_imports_neither_click_nor_importlib_metadata(tmp_path: Path) -> None:
    """``loop-brake --version`` reads the version from the package and names the event
    reader without the fast path: click and importlib.metadata were two thirds of it."""
    modules = imported(tmp_path, "--version")
    assert "loop_brake_cli.commands.version" in modules  # the probe saw the command run
    assert not {"click", "importlib.metadata", "orjson", "loop_brake_cli.readers.fastpath"} & (
        modules
    )
