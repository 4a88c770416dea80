"""Where the gateway's CPU per decision goes on the Redis path (issue 41 goal 2).

Not a target check: it splits the cost ``StoreCalls`` adds to a decision, in one process
against a redis-server started here on a free loopback port, in CPU seconds (user and
system apart):

- ``direct``: ``LoopBrake.observe`` and ``end_call`` in this thread (the two round
  trips a denied call makes: the count, then its id's end);
- ``count``: the count through ``StoreCalls.count`` (a worker thread, the deadline);
- ``count+end``: the count and the end as the gateway makes them for a denial;
- ``hand-off``: two no-op works through the pool as ``_timed`` runs them (the thread
  hand-off alone: queue, worker wake-up, the loop's wake-up, ``wait_for``);
- ``loop count``, ``loop c+end``: the same two on the event loop itself
  (``stores.redis_loop``, what the gateway uses for a ``redis://`` URL);
- ``loop x8``: eight denials at a time on the loop (``--concurrent``), as eight
  clients make them: CPU per denial.

    python bench/store_handoff.py [--decisions 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop_brake_cli.core.brake import LoopBrake  # noqa: E402
from loop_brake_cli.mcp_gateway.counters import GatewayCounters  # noqa: E402
from loop_brake_cli.mcp_gateway.store_calls import StoreCalls  # noqa: E402
from loop_brake_cli.stores.redis_store import RedisStore  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """redis-server on ``port``, returned once it says it accepts connections."""
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if b"Ready to accept connections" in line:
            return proc
    raise RuntimeError("redis-server did not start")


def report(name: str, before: os.times_result, n: int) -> None:
    after = os.times()
    user = (after.user - before.user) / n * 1000
    system = (after.system - before.system) / n * 1000
    print(f"  {name:<10} user {user:.3f}  system {system:.3f}  total {user + system:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=3000)
    n = parser.parse_args().decisions
    port = free_port()
    server = start_redis(port)
    try:
        brake = LoopBrake(3, store=RedisStore(f"redis://127.0.0.1:{port}/0"))
        digest = brake.digest("echo", {"text": "the same call"})
        calls = StoreCalls(brake, GatewayCounters(), on_loop=False)
        looped = StoreCalls(brake, GatewayCounters())
        assert looped.on_loop is not None
        print(
            f"CPU per decision ({n:,} decisions, {calls.workers} workers), "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        before = os.times()
        for i in range(n):
            brake.observe(f"direct-{i // 300}", "echo", digest, 1)
            brake.end_call(f"direct-{i // 300}", 1)
        report("direct", before, n)

        async def counts() -> None:
            for i in range(n):
                await calls.count(f"count-{i // 300}", "echo", digest, None, brake)

        async def denial(calls: StoreCalls, session: str) -> None:
            await calls.count(session, "echo", digest, 1, brake)
            told = asyncio.Event()
            calls.end(session, 1, told.set, brake)
            await told.wait()

        async def denials() -> None:
            for i in range(n):
                await denial(calls, f"deny-{i // 300}")

        async def loop_counts() -> None:
            for i in range(n):
                await looped.count(f"lcount-{i // 300}", "echo", digest, None, brake)

        async def loop_denials() -> None:
            for i in range(n):
                await denial(looped, f"ldeny-{i // 300}")

        async def loop_eight() -> None:
            for i in range(0, n, 8):
                await asyncio.gather(*(denial(looped, f"l8-{j}-{i // 300}") for j in range(8)))

        async def handoffs() -> None:
            for _ in range(2 * n):
                await calls._timed(lambda: None)

        runs = (
            ("count", counts),
            ("count+end", denials),
            ("hand-off", handoffs),
            ("loop count", loop_counts),
            ("loop c+end", loop_denials),
            ("loop x8", loop_eight),
        )
        for name, run in runs:
            before = os.times()
            asyncio.run(run())
            report(name, before, n)
        fails = [
            c.counters.fail_open_deadline + c.counters.fail_open_store for c in (calls, looped)
        ]
        print(f"  decided without the store: pool {fails[0]}, loop {fails[1]}")
        calls.close()
        looped.close()
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
