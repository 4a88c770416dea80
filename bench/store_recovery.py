"""How soon a brake counts again after its Redis store comes back (issue 37 item 3).

    python bench/store_recovery.py [--outages 2,10] [--rate 1000] [--rounds 2]
    python bench/store_recovery.py --cluster [--rounds 2]

Starts its own ``redis-server`` on a free loopback port (no persistence). One
thread makes ``--rate`` decisions a second through ``LoopBrake(store=redis://)``,
the same call in one session (a loop: counted calls are denied from the third).
The server is killed with SIGKILL, stays dead for each outage, and is started again
on the same port; the moment it is back is when it first answers PING (polled every
millisecond from the main thread). Printed per outage and breaker: the time from the
return to the first counted call and to the first denial, the calls decided without
the store during the outage, and the brake's one line at its end. Two breakers run
alternately, in the same run: today's (a half-open trial after a cool-down of 0.1 s
doubling up to 0.5 s) and the one before issue 37 (1 s doubling up to 30 s).
``--cluster``: a three-master Redis Cluster with a replica each instead; the loop's
master is killed and its replica promoted by the cluster (``redis+cluster://``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.stores.redis_store import RedisStore  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _start(port: int) -> tuple[subprocess.Popen, float]:
    """The server, and the moment it first answered PING (perf_counter)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _answers(port):
            return proc, time.perf_counter()
        time.sleep(0.001)
    proc.kill()
    raise SystemExit("redis-server did not start")


class Caller(threading.Thread):
    """Decisions at a steady rate; each kept as (perf_counter, rule, denied)."""

    def __init__(self, brake: LoopBrake, rate: float) -> None:
        super().__init__(daemon=True)
        self.brake, self.period = brake, 1.0 / rate
        self.seen: list[tuple[float, str | None, bool]] = []
        self.done = threading.Event()

    def run(self) -> None:
        due = time.perf_counter()
        while not self.done.is_set():
            verdict = self.brake.check("read", {"path": "/etc/hosts"}, session_id="loop")
            self.seen.append((time.perf_counter(), verdict.rule, verdict.denied))
            due += self.period
            time.sleep(max(0.0, due - time.perf_counter()))


def _round(port: int, outage: float, rate: float, breaker: tuple[float, float]) -> dict:
    server, _ = _start(port)
    lines: list[str] = []
    cooldown, cap = breaker
    url = f"redis://127.0.0.1:{port}/0"
    store = RedisStore(url, breaker_cooldown=cooldown, breaker_max_cooldown=cap)
    caller = Caller(LoopBrake(3, store=store, warn=lines.append), rate)
    caller.start()
    try:
        while len(caller.seen) < 50:
            time.sleep(0.01)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        killed = time.perf_counter()
        time.sleep(outage)  # the outage itself: its length is the input, not a margin
        server, back = _start(port)
        deadline = time.perf_counter() + 120
        while not any(t > back and denied and rule is None for t, rule, denied in caller.seen):
            if time.perf_counter() > deadline:
                raise SystemExit("no denial within 120 s of the server's return")
            time.sleep(0.005)
    finally:
        caller.done.set()
        caller.join()
        store.close()
        server.kill()
        server.wait()
    after = [(t, rule, denied) for t, rule, denied in caller.seen if t > back]
    counted = next(t for t, rule, _ in after if rule is None)
    denied = next(t for t, rule, d in after if rule is None and d)
    uncounted = sum(1 for t, rule, _ in caller.seen if t > killed and rule == "store")
    return {
        "counted": (counted - back) * 1000,
        "denied": (denied - back) * 1000,
        "uncounted": uncounted,
        "line": lines[-1] if lines else "",
    }


def _failover(rate: float) -> dict:
    """One failover on a three-master cluster with a replica each (tests/redis_cluster.py
    starts it): the master that holds the loop's slot killed with SIGKILL; times from
    the kill, and from the promotion the nodes report, to the first counted call and
    the first denial after it."""
    import tempfile
    from pathlib import Path

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from redis_cluster import RedisCluster

    with tempfile.TemporaryDirectory() as folder:
        cluster = RedisCluster(Path(folder), replicas=1).start()
        lines: list[str] = []
        store = RedisStore(cluster.url)
        caller = Caller(LoopBrake(3, store=store, warn=lines.append), rate)
        caller.start()
        try:
            while len(caller.seen) < 50:
                time.sleep(0.01)
            master = cluster.master_of("lb:v1:{loop}")
            killed = time.perf_counter()
            cluster.kill(master)
            cluster.wait_promoted(master, "lb:v1:{loop}")
            promoted = time.perf_counter()
            deadline = promoted + 120
            while not any(t > promoted and d and r is None for t, r, d in caller.seen):
                if time.perf_counter() > deadline:
                    raise SystemExit("no denial within 120 s of the promotion")
                time.sleep(0.005)
        finally:
            caller.done.set()
            caller.join()
            store.close()
            cluster.stop()
    failed = next(t for t, rule, _ in caller.seen if t > killed and rule == "store")
    after = [(t, rule, denied) for t, rule, denied in caller.seen if t >= failed]
    counted = next(t for t, rule, _ in after if rule is None)  # the first after the outage
    denied = next(t for t, rule, d in after if rule is None and d)
    return {
        "promoted": (promoted - killed) * 1000,
        "counted": (counted - killed) * 1000,
        "denied": (denied - killed) * 1000,
        "after promotion": (counted - promoted) * 1000,
        "uncounted": sum(1 for _, rule, _ in after if rule == "store"),
        "line": lines[-1] if lines else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outages", default="2,10", help="outage lengths in seconds")
    parser.add_argument("--rate", type=float, default=1000.0, help="decisions a second")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--cluster", action="store_true", help="a master's failover on a Redis Cluster instead"
    )
    args = parser.parse_args()
    if args.cluster:
        print("ms from the SIGKILL of the loop's master (cluster-node-timeout 1 s)")
        for _ in range(args.rounds):
            found = _failover(args.rate)
            print(
                "  ".join(f"{k} {v:.0f}" for k, v in found.items() if k != "line")
                + f"\n{'':>10}{found['line']}"
            )
        return
    breakers = {"trial, cap 0.5 s": (0.1, 0.5), "back-off to 30 s": (1.0, 30.0)}
    figures: dict[tuple[float, str], list[dict]] = {}
    port = _free_port()
    print(f"{'outage s':>8}  {'breaker':<18} {'counted ms':>10} {'denied ms':>10} {'uncounted':>9}")
    for _ in range(args.rounds):
        for outage in (float(x) for x in args.outages.split(",")):
            for name, cap in breakers.items():
                found = _round(port, outage, args.rate, cap)
                figures.setdefault((outage, name), []).append(found)
                print(
                    f"{outage:>8g}  {name:<18} {found['counted']:>10.1f} "
                    f"{found['denied']:>10.1f} {found['uncounted']:>9}"
                )
                print(f"{'':>10}{found['line']}")
    print(f"\nmedians of {args.rounds} (ms from the first PONG after the restart)")
    for (outage, name), rows in figures.items():
        counted = statistics.median(r["counted"] for r in rows)
        denied = statistics.median(r["denied"] for r in rows)
        print(f"{outage:>8g}  {name:<18} {counted:>10.1f} {denied:>10.1f}")


if __name__ == "__main__":
    main()
