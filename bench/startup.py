"""Start-up: `loop-brake filter` on an empty file and `loop-brake --version` vs `python -c
"import click"`, and one `loop-brake hook` call vs `python -c "import sqlite3"` (issue 12's
and issue 41's targets).

A user pays start-up on every `filter` of a small file and on every tool call
the hook sees, so the whole process is measured: wall time, and the child's
own user and system CPU (from ``os.wait4``, so other jobs on the machine do
not count). Every command runs once per round, in turn, so load hits each
alike; the table shows medians and each command's ratio to its baseline, for
wall time and for CPU (user + system), which is steadier on a loaded machine; a
target is judged on the CPU ratio.

    python bench/startup.py [--rounds 40] [--only filter|version|hook] [--filter-ratio R]
                            [--version-ratio R] [--hook-ratio R] [--store URL]

``--store URL`` also times the hook with that streak store (a running Redis or
Valkey: ``redis://127.0.0.1:PORT/0``), beside the default SQLite one and against
the same baseline; its row is named by the URL's scheme only.

`loop-brake` is the console script beside this Python (else `python -m
loop_brake_cli`, shown too). Exit status 1 if a CPU ratio misses its target.
To measure another checkout: PYTHONPATH=/path/to/checkout python bench/startup.py
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
    return [exe] if exe else [sys.executable, "-m", "loop_brake_cli"]


def _hook_input(i: int) -> bytes:
    """A Claude Code PreToolUse input: same arguments, distinct tool_use_id, so the
    streak grows and some calls are denied (both paths are timed)."""
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


def _run(cmd: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """Wall, user and system seconds of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    proc.stdin.write(stdin)  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return wall, usage.ru_utime, usage.ru_stime


CLICK, SQLITE3 = "python -c 'import click'", "python -c 'import sqlite3'"
FILTER, FILTER_M, VERSION, HOOK = (
    "loop-brake filter EMPTY",
    "python -m loop_brake_cli filter EMPTY",
    "loop-brake --version",
    "loop-brake hook",
)
BASELINE = {FILTER: CLICK, FILTER_M: CLICK, VERSION: CLICK, HOOK: SQLITE3}
"""Each measured command's baseline; the baselines themselves are not in it."""


def hook_store_name(store: str) -> str:
    """The row of the hook with ``--store``: the URL's scheme only (no host, no password)."""
    return f"loop-brake hook --store {store.partition(':')[0]}://"


def _commands(empty: str, store: str | None = None) -> dict[str, tuple[list[str], bool]]:
    """Name -> (command, whether it reads a hook input on stdin)."""
    py = sys.executable
    commands = {
        CLICK: ([py, "-c", "import click"], False),
        FILTER: ([*_loop_brake(), "filter", empty], False),
        FILTER_M: ([py, "-m", "loop_brake_cli", "filter", empty], False),
        VERSION: ([*_loop_brake(), "--version"], False),
        SQLITE3: ([py, "-c", "import sqlite3"], False),
        HOOK: ([*_loop_brake(), "hook", "--agent", "claude-code"], True),
    }
    if store is not None:
        hook = [*_loop_brake(), "hook", "--agent", "claude-code", "--store", store]
        commands[hook_store_name(store)] = (hook, True)
        BASELINE[hook_store_name(store)] = SQLITE3
    return commands


def measure(
    rounds: int = 40, names: tuple[str, ...] | None = None, store: str | None = None
) -> dict[str, dict[str, float]]:
    """Median wall/user/sys/cpu milliseconds per command (all, or ``names`` and their
    baselines; with ``store``, the hook with it too), every command once per round,
    in turn."""
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.jsonl")
        open(empty, "wb").close()
        env = dict(os.environ, LOOP_BRAKE_STATE=os.path.join(tmp, "state.db"))
        env.pop("DSH_LOOP_BRAKE_MAX_REPEATS", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with bytecode cached, as installed
        cases = _commands(empty, store)
        if names is not None:
            names = (*names, hook_store_name(store)) if store and HOOK in names else names
            wanted = set(names) | {BASELINE[name] for name in names if name in BASELINE}
            cases = {name: case for name, case in cases.items() if name in wanted}
        times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
        for i in range(-2, rounds):  # two warm-up rounds: bytecode, file cache, the store
            for name, (cmd, hook) in cases.items():
                # cwd: an empty folder, so `python -m` does not import a checkout from it
                sample = _run(cmd, _hook_input(i) if hook else b"", env, tmp)
                if i >= 0:
                    times[name].append(sample)
    return {
        name: {
            "wall": statistics.median(s[0] for s in samples) * 1000,
            "user": statistics.median(s[1] for s in samples) * 1000,
            "sys": statistics.median(s[2] for s in samples) * 1000,
            "cpu": statistics.median(s[1] + s[2] for s in samples) * 1000,
        }
        for name, samples in times.items()
    }


def report(result: dict[str, dict[str, float]], rounds: int, targets: dict[str, float]) -> bool:
    """Print the table; True if every command with a target met it (CPU ratio)."""
    print(f"median of {rounds} rounds, milliseconds")
    print(f"{'command':40} {'wall':>7} {'user':>7} {'sys':>7}  ratio wall / cpu")
    met = True
    for name, figures in result.items():
        line = f"{name:40} {figures['wall']:7.1f} {figures['user']:7.1f} {figures['sys']:7.1f}"
        if name in BASELINE:
            base = result[BASELINE[name]]
            wall, cpu = figures["wall"] / base["wall"], figures["cpu"] / base["cpu"]
            line += f"  {wall:5.2f}x / {cpu:5.2f}x"
            if name in targets:
                ok = cpu <= targets[name]
                met = met and ok
                line += f"  (target <= {targets[name]:g}x CPU: {'ok' if ok else 'MISSED'})"
        print(line)
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--filter-ratio", type=float, default=1.5)
    parser.add_argument("--version-ratio", type=float, default=1.3)
    parser.add_argument("--hook-ratio", type=float, default=1.8)
    parser.add_argument(
        "--only", choices=("filter", "version", "hook"), help="one part and its baseline"
    )
    parser.add_argument("--store", metavar="URL", help="also the hook with this --store")
    args = parser.parse_args()
    parts = {"filter": (FILTER, FILTER_M), "version": (VERSION,), "hook": (HOOK,)}
    result = measure(args.rounds, parts[args.only] if args.only else None, args.store)
    targets = {FILTER: args.filter_ratio, VERSION: args.version_ratio, HOOK: args.hook_ratio}
    met = report(result, args.rounds, targets)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
