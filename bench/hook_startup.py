"""Hook start-up: median wall time of one `loop-brake hook` call vs `python -c "import sqlite3"`.

The hook runs before every tool call an agent makes, so its whole-process cost
is what a user feels. Both commands run in the same loop, alternating, so
machine noise hits both alike. Each hook call gets a realistic Claude Code
PreToolUse input on stdin (distinct tool_use_id, same arguments, so the streak
grows and some calls are denied) against a fresh state directory.

    python bench/hook_startup.py [--rounds 30] [--max-ratio 2.5]

Exit status 1 if the ratio exceeds --max-ratio (target 2.5x).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _loop_brake() -> list[str]:
    exe = shutil.which(
        "loop-brake", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    )
    if exe:
        return [exe]
    return [sys.executable, "-m", "loop_brake_cli"]


def _payload(i: int) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": "/home/user/.claude/projects/x/bench-session.jsonl",
            "cwd": "/home/user/project",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la src", "description": "List files"},
            "tool_use_id": f"toolu_{i:06d}",
        }
    ).encode()


def _time(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(rounds: int = 30) -> dict[str, float]:
    """Median milliseconds of the hook and of the bare interpreter, same run, alternating.

    For bench/run.py to import: ``{"hook_ms", "bare_ms", "ratio", "rounds"}``.
    """
    hook = _loop_brake() + ["hook", "--agent", "claude-code"]
    bare = [sys.executable, "-c", "import sqlite3"]
    with tempfile.TemporaryDirectory() as state_dir:
        env = dict(os.environ, LOOP_BRAKE_STATE=os.path.join(state_dir, "state.db"))
        env.pop("DSH_LOOP_BRAKE_MAX_REPEATS", None)
        _time(hook, _payload(-1), env)  # warm the file cache, create the store
        _time(bare, b"", env)
        hook_times, bare_times = [], []
        for i in range(rounds):
            bare_times.append(_time(bare, b"", env))
            hook_times.append(_time(hook, _payload(i), env))
    hook_ms = statistics.median(hook_times) * 1000
    bare_ms = statistics.median(bare_times) * 1000
    return {"hook_ms": hook_ms, "bare_ms": bare_ms, "ratio": hook_ms / bare_ms, "rounds": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-ratio", type=float, default=2.5)
    args = parser.parse_args()
    result = measure(args.rounds)
    bare_ms, hook_ms, ratio = result["bare_ms"], result["hook_ms"], result["ratio"]
    print(f"python -c 'import sqlite3'  median {bare_ms:7.1f} ms  ({args.rounds} rounds)")
    print(f"loop-brake hook            median {hook_ms:7.1f} ms  ({args.rounds} rounds)")
    verdict = "ok" if ratio <= args.max_ratio else "MISSED"
    print(f"ratio                      {ratio:7.2f}x  (target <= {args.max_ratio:g}x: {verdict})")
    return 0 if ratio <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
