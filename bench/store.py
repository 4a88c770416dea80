"""The shared store's figures: decisions per second and latency per decision, Redis
against SQLite in the same run, with 1, 4 and 8 processes; and the hook's start-up
with and without ``--store redis://``. Issue 41 goal 3: the Redis store's decision
against a bare redis-py ``evalsha`` loop, and ``filter --store`` batched against one
call at a time.

    python bench/store.py [--calls 2000] [--sessions 64] [--rounds 20]
    python bench/store.py --only decision,filter   # the parts named (processes, hook too)
    python bench/store.py --only instructions      # per decision, counted by callgrind

* decision: in one process, paired rounds alternating: ``RedisStore.count_call``
  (the store's interface), ``LoopBrake.observe`` on that store (the library's decision,
  its verdict included) and a bare loop of redis-py's ``Redis.evalsha`` running the
  store's own script (``redis_step.lua``) with the arguments of the same calls, each
  ``--decisions`` calls over ``--sessions`` sessions, ``--decision-rounds`` rounds;
  per decision: wall time and this process's CPU (user + system). The ratios are
  the bare loop's time over the store's (>= 0.9x: issue 41), medians of the rounds.
* instructions: the same three loops, each in a process of its own under ``valgrind
  --tool=callgrind`` (500 calls, then 2,500: the difference over 2,000), instructions
  per decision on the client's side: deterministic, where CPU time on a loaded
  machine is noise.
* filter: ``loop-brake filter --store redis://... FILE > /dev/null`` on
  ``--filter-events`` generated events (``gen.events``: 7 interleaved sessions), with
  ``LOOP_BRAKE_STORE_BATCH=1`` (one call at a time) and by default (the calls already
  read decided together), alternating, ``--filter-rounds`` rounds, the server flushed
  before each, its socket time-out 10 s (not 0.2: on a loaded machine a late answer
  would be a fail-open, not a slower decision); events/s (wall) and per CPU second
  (the child's user + system; the server's CPU beside it, from ``INFO cpu``); the
  ratio batched/unbatched (>= 5x: issue 41) and whether both wrote the same bytes.

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
from typing import Any

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


def _decision_rounds(url: str, calls: int, sessions: int, rounds: int) -> dict[str, list]:
    """Paired rounds of the store's decision, the brake's and the bare ``evalsha`` loop:
    per round and loop, (wall s, CPU s) for ``calls`` decisions."""
    import redis

    from loop_brake_cli import LoopBrake
    from loop_brake_cli.core.canonical import call_digest
    from loop_brake_cli.stores import open_store
    from loop_brake_cli.stores.redis_store import _script

    digest = call_digest("read", {"path": "/etc/hosts"})
    store = open_store(url)
    brake = LoopBrake(3, store=store)
    bare = redis.Redis.from_url(url)
    sha = bare.script_load(_script("redis_step.lua"))
    names = [f"s{k}" for k in range(sessions)]
    keys = [b"lb:v1:{%s}" % name.encode() for name in names]
    ttl = str(24 * 3600 * 1000)

    def store_loop() -> None:
        count_call = store.count_call
        for i in range(calls):
            count_call(names[i % sessions], "read", digest, None, 3)

    def brake_loop() -> None:
        observe = brake.observe
        for i in range(calls):
            observe(names[i % sessions], "read", digest, None)

    def bare_loop() -> None:  # the same script, the same arguments as count_call sends
        evalsha = bare.evalsha
        for i in range(calls):
            evalsha(sha, 1, keys[i % sessions], ttl, repr(time.time()), digest, b"read", "", "")

    loops = {"bare evalsha": bare_loop, "store.count_call": store_loop, "brake.observe": brake_loop}
    for loop in loops.values():
        loop()  # warm: connected, scripts loaded
    found: dict[str, list] = {name: [] for name in loops}
    for _ in range(rounds):
        for name, loop in loops.items():
            wall, cpu = time.perf_counter(), time.process_time()
            loop()
            found[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    store.close()
    bare.close()
    return found


def _loop_once(mode: str, calls: int, url: str) -> None:
    """``calls`` decisions of one loop, nothing else (a process ``_instructions`` counts)."""
    import redis

    from loop_brake_cli import LoopBrake
    from loop_brake_cli.core.canonical import call_digest
    from loop_brake_cli.stores import open_store
    from loop_brake_cli.stores.redis_store import _script

    digest = call_digest("read", {"path": "/etc/hosts"})
    names = [f"s{k}" for k in range(64)]
    if mode == "bare evalsha":
        bare = redis.Redis.from_url(url)
        sha = bare.script_load(_script("redis_step.lua"))
        keys = [b"lb:v1:{%s}" % name.encode() for name in names]
        ttl = str(24 * 3600 * 1000)
        for i in range(calls):
            bare.evalsha(sha, 1, keys[i % 64], ttl, repr(time.time()), digest, b"read", "", "")
        return
    store = open_store(url)
    store.count_call("warm-up", "read", digest, None, 3)
    if mode == "store.count_call":
        for i in range(calls):
            store.count_call(names[i % 64], "read", digest, None, 3)
    else:
        observe = LoopBrake(3, store=store).observe
        for i in range(calls):
            observe(names[i % 64], "read", digest, None)


def _instructions(url: str) -> None:
    """Instructions per decision of each loop (``valgrind --tool=callgrind``, this
    process's client side only; deterministic where CPU time is noise): a run of 500
    calls and one of 2,500, the difference over 2,000."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind not found: no instruction counts")
        return
    print(f"{'per decision':<20} {'instructions':>13} {'vs bare':>8}  (callgrind, client side)")
    found = {}
    for mode in ("bare evalsha", "store.count_call", "brake.observe"):
        counts = []
        for calls in (500, 2500):
            out = subprocess.run(
                [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                + [sys.executable, HERE, "--loop", mode, str(calls), url],
                capture_output=True,
                text=True,
                check=True,
            ).stderr
            counts.append(int(out.split("Collected :")[1].split()[0]))
        found[mode] = (counts[1] - counts[0]) / 2000
        ratio = found["bare evalsha"] / found[mode]
        print(f"{mode:<20} {found[mode]:>13,.0f} {ratio:>7.2f}x")


def report_decisions(found: dict[str, list], calls: int) -> None:
    base = found["bare evalsha"]
    print(
        f"{'per decision':<20} {'wall us':>8} {'cpu us':>8} "
        f"{'rate vs bare':>13} {'cpu vs bare':>12}"
    )
    for name, rows in found.items():
        wall = statistics.median(r[0] for r in rows) / calls * 1e6
        cpu = statistics.median(r[1] for r in rows) / calls * 1e6
        rate = statistics.median(b[0] / r[0] for b, r in zip(base, rows, strict=True))
        cheap = statistics.median(b[1] / r[1] for b, r in zip(base, rows, strict=True))
        print(f"{name:<20} {wall:>8.1f} {cpu:>8.1f} {rate:>12.2f}x {cheap:>11.2f}x")
    print(
        f"  (medians of {len(base)} paired rounds of {calls} decisions; x: the bare loop's "
        "time over this one's, per round; issue 41: >= 0.9x)"
    )


def _server_cpu(url: str) -> float:
    import redis

    client = redis.Redis.from_url(url)
    info = client.info("cpu")
    client.close()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _filter_rounds(url: str, events: int, rounds: int, folder: str) -> dict[str, Any]:
    """``filter --store`` one call at a time and batched, alternating rounds: per side
    (wall s, the child's CPU s, the server's CPU s), and whether the outputs match."""
    sys.path.insert(0, os.path.dirname(HERE))
    import gen
    import redis

    path = os.path.join(folder, "events.jsonl")
    with open(path, "wb") as handle:
        for line in gen.events(events):
            handle.write(line if line.endswith(b"\n") else line + b"\n")
    exe = shutil.which("loop-brake", path=os.path.dirname(sys.executable))
    command = [exe] if exe else [sys.executable, "-m", "loop_brake_cli"]
    client = redis.Redis.from_url(url)
    url += "?socket_timeout=10"  # a loaded machine must not turn a decision into a fail-open
    sides = {"unbatched": "1", "batched": ""}
    found: dict[str, Any] = {name: [] for name in sides}
    outputs: dict[str, bytes] = {}
    for _ in range(rounds):
        for name, batch in sides.items():
            client.flushall()
            env = dict(os.environ, LOOP_BRAKE_STORE_BATCH=batch)
            out = os.path.join(folder, f"{name}.out")
            server = _server_cpu(url)
            begin = time.perf_counter()
            with open(out, "wb") as handle:
                proc = subprocess.Popen(
                    [*command, "filter", "--store", url, path], stdout=handle, env=env
                )
                _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - begin
            proc.returncode = os.waitstatus_to_exitcode(status)
            found[name].append((wall, usage.ru_utime + usage.ru_stime, _server_cpu(url) - server))
            with open(out, "rb") as handle:
                outputs[name] = handle.read()
    client.close()
    found["identical"] = outputs["unbatched"] == outputs["batched"]
    return found


def report_filter(found: dict[str, Any], events: int) -> None:
    print(
        f"{'filter --store':<16} {'events/s':>10} {'per CPU s':>10} "
        f"{'cpu s':>7} {'server cpu s':>13}"
    )
    for name in ("unbatched", "batched"):
        rows = found[name]
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        server = statistics.median(r[2] for r in rows)
        print(
            f"{name:<16} {events / wall:>10,.0f} {events / cpu:>10,.0f} {cpu:>7.2f} {server:>13.2f}"
        )
    pairs = list(zip(found["unbatched"], found["batched"], strict=True))
    rate = statistics.median(u[0] / b[0] for u, b in pairs)
    cpu = statistics.median(u[1] / b[1] for u, b in pairs)
    print(
        f"  batched / unbatched: {rate:.2f}x events/s (wall), {cpu:.2f}x per CPU second "
        f"(medians of {len(pairs)} paired rounds of {events:,} events; issue 41: >= 5x); "
        f"output identical: {found['identical']}"
    )


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
    parser.add_argument("--decisions", type=int, default=2000, help="calls per decision round")
    parser.add_argument("--decision-rounds", type=int, default=15)
    parser.add_argument("--filter-events", type=int, default=100_000)
    parser.add_argument("--filter-rounds", type=int, default=3)
    parser.add_argument(
        "--only",
        default="processes,decision,instructions,filter,hook",
        help="the parts to run, comma-separated",
    )
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--loop", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        _loop_once(args.loop[0], int(args.loop[1]), args.loop[2])
        return
    parts = set(args.only.split(","))
    if args.worker:
        url, calls, sessions, worker = args.worker
        _worker(url, int(calls), int(sessions), int(worker))
        return
    server, url = _start_redis()
    tmp = tempfile.mkdtemp(prefix="lb-bench-store-")
    try:
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
        if "processes" in parts:
            _processes(url, tmp, args.calls, args.sessions)
        if "decision" in parts:
            found = _decision_rounds(url, args.decisions, args.sessions, args.decision_rounds)
            report_decisions(found, args.decisions)
        if "instructions" in parts:
            _instructions(url)
        if "filter" in parts:
            report_filter(
                _filter_rounds(url, args.filter_events, args.filter_rounds, tmp),
                args.filter_events,
            )
        if "hook" in parts:
            _hooks(url, tmp, args.rounds)
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min) at the end")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def _processes(url: str, tmp: str, calls: int, sessions: int) -> None:
    print(f"{'store':<8} {'procs':>5} {'decisions/s':>12} {'p50 ms':>8} {'p99 ms':>8}")
    for processes in (1, 4, 8):
        for name, target in (
            ("sqlite", os.path.join(tmp, f"state-{processes}.db")),
            ("redis", url),
        ):
            rate, p50, p99 = _run(target, processes, calls, sessions)
            print(f"{name:<8} {processes:>5} {rate:>12,.0f} {p50:>8.3f} {p99:>8.3f}")


def _hooks(url: str, tmp: str, rounds: int) -> None:
    exe = shutil.which("loop-brake", path=os.path.dirname(sys.executable))
    command = [exe] if exe else [sys.executable, "-m", "loop_brake_cli"]
    rows = {
        "hook --state FILE": [*command, "hook", "--state", os.path.join(tmp, "hook.db")],
        "hook --store redis://": [*command, "hook", "--store", url],
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    for i in range(rounds):
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
    print(f"\n{'hook start-up':<24} {'wall ms':>8} {'cpu ms':>8}  (medians of {rounds})")
    for name, values in figures.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:<24} {wall:>8.1f} {cpu:>8.1f}")


if __name__ == "__main__":
    main()
