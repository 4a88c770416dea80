"""Progress on the live paths (issue 14): what reading results costs the hook and the proxy.

Hook: one process per event, medians of wall time over --rounds rounds, every
command once per round in turn (load hits each alike):

* ``python -c 'import sqlite3'``, the baseline of the hook's start-up target;
* a PreToolUse call without a policy (today's hook);
* a PostToolUse event without a policy (answered at once: nothing read or written);
* a PreToolUse call and a PostToolUse result under ``progress = true``.

Proxy: round-trip latency of --calls sequential ``tools/call`` requests through
``loop-brake mcp-proxy`` in front of a minimal stdio responder (not the SDK,
so the proxy's own cost is what shows), without a policy and under
``progress = true``; p50/p99/max in milliseconds. The responses carry a
changing 2 KB text, so under progress each is parsed and hashed.

    python bench/progress_live.py [--rounds 30] [--calls 500]

Prints figures only; no target (the hook's start-up target is bench/startup.py's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import startup

RESPONDER = r"""
import json, sys
n = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    n += 1
    text = ("build output line %d\n" % n) * 100
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def _post_input(i: int) -> bytes:
    payload = json.loads(startup._hook_input(i))
    payload["hook_event_name"] = "PostToolUse"
    payload["tool_response"] = {"stdout": f"line {i}\n" * 50, "stderr": "", "interrupted": False}
    return json.dumps(payload).encode()


def bench_hook(rounds: int, tmp: str) -> None:
    policy = os.path.join(tmp, "progress.toml")
    with open(policy, "w", encoding="utf-8") as handle:
        handle.write("progress = true\n")
    hook = [*startup._loop_brake(), "hook"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_BRAKE", "DSH_"))}
    rows = {
        "python -c 'import sqlite3'": ([sys.executable, "-c", "import sqlite3"], None),
        "hook PreToolUse, no policy": ([*hook, "--state", f"{tmp}/a.db"], startup._hook_input),
        "hook PostToolUse, no policy": ([*hook, "--state", f"{tmp}/b.db"], _post_input),
        "hook PreToolUse, progress": (
            [*hook, "--state", f"{tmp}/c.db", "--policy", policy],
            startup._hook_input,
        ),
        "hook PostToolUse, progress": (
            [*hook, "--state", f"{tmp}/c.db", "--policy", policy],
            _post_input,
        ),
    }
    walls: dict[str, list[float]] = {name: [] for name in rows}
    for i in range(rounds):
        for name, (command, make) in rows.items():
            wall, _user, _sys = startup._run(command, make(i) if make else b"", env)
            walls[name].append(wall)
    base = statistics.median(walls["python -c 'import sqlite3'"])
    print(f"hook, median wall time of {rounds} runs each:")
    for name, values in walls.items():
        median = statistics.median(values)
        print(f"  {name:32} {median * 1000:7.1f} ms  {median / base:5.2f}x import sqlite3")


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {p50 * 1000:6.3f} ms  p99 {p99 * 1000:6.3f} ms  max {ordered[-1] * 1000:6.3f} ms"


def bench_proxy(calls: int, tmp: str, policy: str | None) -> list[float]:
    responder = os.path.join(tmp, "responder.py")
    with open(responder, "w", encoding="utf-8") as handle:
        handle.write(RESPONDER)
    command = [*startup._loop_brake(), "mcp-proxy", "-m", str(calls + 1)]
    if policy is not None:
        command += ["--policy", policy]
    command += ["--", sys.executable, responder]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    times = []
    for i in range(calls):
        request = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "build_log", "arguments": {"job": "j"}},
        }
        start = time.perf_counter()
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        times.append(time.perf_counter() - start)
    proc.stdin.close()
    proc.wait(timeout=30)
    return times[10:]  # the first calls pay imports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_hook(args.rounds, tmp)
        policy = os.path.join(tmp, "progress.toml")
        print(f"mcp-proxy, round trip of {args.calls} sequential calls (2 KB responses):")
        for name, chosen in (("no policy", None), ("progress = true", policy)):
            print(f"  {name:17} {_percentiles(bench_proxy(args.calls, tmp, chosen))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
