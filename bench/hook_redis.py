"""How the hook should reach a Redis store: the measurement behind the choice (issue 41).

    python bench/hook_redis.py [--rounds 30]

Times, in turn for each round (CPU of the child, ``os.wait4``; medians), against
``python -c "import sqlite3"``:

* ``loop-brake hook`` on the default SQLite store;
* ``loop-brake hook --store redis://`` as built: one connection of its own
  (``stores/resp.py``, hiredis's parser), no redis-py;
* the hook's modules and its store call through redis-py (``RedisStore`` without
  ``short_lived``), what the hook cost before;
* the floor of the other design, a local long-running helper reached over a Unix
  socket: a process that imports the hook's modules and makes one round trip on a
  Unix socket to a helper that answers at once (no decision, no store: whatever the
  helper would do is not counted, nor is the helper's own CPU).

Starts its own ``redis-server`` on a free loopback port and the helper on a socket in a
temporary folder; both are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import startup  # noqa: E402
import store  # noqa: E402

HELPER = """
import os, socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(64)
print("ready", flush=True)
while True:
    client, _ = server.accept()
    client.recv(4096)
    client.sendall(b"*5\\r\\n$1\\r\\nx\\r\\n:1\\r\\n$1\\r\\nt\\r\\n:0\\r\\n:1\\r\\n")
    client.close()
"""

FLOOR = """
import _socket
import loop_brake_cli.hook.runner
client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
client.connect({path!r})
client.sendall(b"*2\\r\\n$5\\r\\nDECIDE\\r\\n$1\\r\\nx\\r\\n")
client.recv(4096)
client.close()
"""

REDIS_PY = """
import loop_brake_cli.hook.runner
from loop_brake_cli.stores import open_store
store = open_store({url!r})
store.count_call("bench", "Bash", b"d" * 32, None, 3)
store.close()
"""


def measure(rounds: int) -> dict[str, float]:
    """Median CPU milliseconds of each command, all run once per round, in turn."""
    server, url = store._start_redis()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "helper.sock")
        helper = subprocess.Popen(
            [sys.executable, "-c", HELPER, path], stdout=subprocess.PIPE, text=True
        )
        try:
            assert helper.stdout is not None and helper.stdout.readline() == "ready\n"
            return _rounds(rounds, url, path, tmp)
        finally:
            helper.kill()
            helper.wait()
            server.terminate()
            server.wait()


def _rounds(rounds: int, url: str, path: str, tmp: str) -> dict[str, float]:
    hook = [*startup._loop_brake(), "hook", "--agent", "claude-code"]
    commands = {
        startup.SQLITE3: ([sys.executable, "-c", "import sqlite3"], False),
        "loop-brake hook (SQLite)": (hook, True),
        "loop-brake hook --store redis:// (resp.py)": ([*hook, "--store", url], True),
        "the hook's store call through redis-py": (
            [sys.executable, "-c", REDIS_PY.format(url=url)],
            False,
        ),
        "helper floor: Unix socket round trip": (
            [sys.executable, "-c", FLOOR.format(path=path)],
            False,
        ),
    }
    env = dict(os.environ, LOOP_BRAKE_STATE=os.path.join(tmp, "state.db"))
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(-2, rounds):  # two warm-up rounds
        for name, (command, reads_input) in commands.items():
            payload = startup._hook_input(i) if reads_input else b""
            _, user, system = startup._run(command, payload, env, tmp)
            if i >= 0:
                times[name].append((user + system) * 1000)
    return {name: statistics.median(samples) for name, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    result = measure(args.rounds)
    base = result[startup.SQLITE3]
    print(f"median CPU of {args.rounds} rounds (user + system), load {os.getloadavg()[0]:.1f}")
    for name, cpu in result.items():
        print(f"  {name:44} {cpu:7.1f} ms  {cpu / base:5.2f}x import sqlite3")
    print(json.dumps({name: round(cpu, 2) for name, cpu in result.items()}))


if __name__ == "__main__":
    main()
