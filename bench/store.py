"""The shared store's figures: decisions per second and latency per decision, Redis
against SQLite in the same run, with 1, 4 and 8 processes; and the hook's start-up
with and without ``--store redis://``.

    python bench/store.py [--calls 2000] [--sessions 64] [--rounds 20]

Starts its own ``redis-server`` on a free loopback port (no persistence) and a
fresh SQLite file in a temporary directory, both stopped or removed at the end.
Each worker process makes ``--calls`` decisions (identical calls spread over
``--sessions`` sessions, so streaks grow and calls are denied too) through
``stores.open_store(...).count_call``; its latencies are ``perf_counter`` around
each call. Every worker connects first (one warm-up decision) and waits for the
go; decisions/s is all the workers' decisions over the wall time from the go
to the last worker's end. The hook rows run ``loop-brake hook``
(the console script) on one Claude Code input per round, alternating, and show
the median wall time and the child's own CPU (``os.wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def _worker(url: str, calls: int, sessions: int, worker: int) -> None:
    from loop_brake_cli.core.canonical import call_digest
    from loop_brake_cli.stores import open_store

    store = open_store(url)
    digest = call_digest("read", {"path": "/etc/hosts"})
    store.count_call(f"warm-up-{worker}", "read", digest, None, 3)  # connected, scripts loaded
    print("ready", flush=True)
    sys.stdin.readline()  # the parent's go, once every worker is ready
    latencies = []
    for i in range(calls):
        begin = time.perf_counter()
        store.count_call(f"s{(i + worker) % sessions}", "read", digest, None, 3)
        latencies.append(time.perf_counter() - begin)
    end = time.time()
    store.close()
    print(json.dumps({"end": end, "latencies": latencies}))


def _run(url: str, processes: int, calls: int, sessions: int) -> tuple[float, float, float]:
    procs = [
        subprocess.Popen(
            [sys.executable, HERE, "--worker", url, str(calls), str(sessions), str(k)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for k in range(processes)
    ]
    for proc in procs:
        proc.stdout.readline()  # type: ignore[union-attr]
    start = time.time()
    for proc in procs:
        proc.stdin.write(b"go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    ends, latencies = [], []
    for proc in procs:
        out, _ = proc.communicate()
        found = json.loads(out)
        ends.append(found["end"])
        latencies += found["latencies"]
    latencies.sort()
    rate = len(latencies) / (max(ends) - start)
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    return rate, p50, p99


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_redis() -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


def _hook(command: list[str], payload: bytes) -> tuple[float, float]:
    begin = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc.stdin.write(payload)  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    proc.returncode = 0
    return wall * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="decisions per worker")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20, help="hook start-up rounds")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, calls, sessions, worker = args.worker
        _worker(url, int(calls), int(sessions), int(worker))
        return
    server, url = _start_redis()
    tmp = tempfile.mkdtemp(prefix="lb-bench-store-")
    try:
        print(f"{'store':<8} {'procs':>5} {'decisions/s':>12} {'p50 ms':>8} {'p99 ms':>8}")
        for processes in (1, 4, 8):
            for name, target in (
                ("sqlite", os.path.join(tmp, f"state-{processes}.db")),
                ("redis", url),
            ):
                rate, p50, p99 = _run(target, processes, args.calls, args.sessions)
                print(f"{name:<8} {processes:>5} {rate:>12,.0f} {p50:>8.3f} {p99:>8.3f}")
        exe = shutil.which("loop-brake", path=os.path.dirname(sys.executable))
        command = [exe] if exe else [sys.executable, "-m", "loop_brake_cli"]
        rows = {
            "hook --state FILE": [*command, "hook", "--state", os.path.join(tmp, "hook.db")],
            "hook --store redis://": [*command, "hook", "--store", url],
        }
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for i in range(args.rounds):
            payload = json.dumps(
                {
                    "session_id": "bench",
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": f"ls {i % 4}"},
                }
            ).encode()
            for name, hook_command in rows.items():
                figures[name].append(_hook(hook_command, payload))
        print(f"\n{'hook start-up':<24} {'wall ms':>8} {'cpu ms':>8}  (medians of {args.rounds})")
        for name, values in figures.items():
            wall = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            print(f"{name:<24} {wall:>8.1f} {cpu:>8.1f}")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
