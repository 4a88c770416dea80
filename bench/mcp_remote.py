"""What the remote bridge and the gateway add to each tool call (issue 26).

One real SDK Streamable HTTP server (``tests/mcp_http_server.py``) on a loopback
port, and three ways to call its ``echo`` tool with the MCP SDK's ``Client``
(default mode, the 2026-07-28 protocol), each call with a different argument so
none is denied, every call awaited before the next:

* direct: the SDK's Streamable HTTP client to the server;
* gateway: the same client to ``loop-brake mcp-gateway`` in front of the server
  (the session named in ``_meta``);
* bridge: the SDK's stdio client to ``loop-brake mcp-proxy --url`` (the way a
  client configuration runs it).

Rounds interleave the three (--rounds rounds of --calls calls each, after a
warm-up) so load on the machine hits each alike. Prints p50/p99 per call in
milliseconds for each way, what the gateway and the bridge add over direct at
those percentiles, and the CPU time the gateway or bridge process itself spends
per call (from /proc: the figure that does not depend on the machine's load,
where wall-clock latency on a busy machine is mostly waiting for a core).

    python bench/mcp_remote.py [--rounds 5] [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import StdioServerParameters, stdio_client
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a process exited ({proc.returncode}) before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on {port}")


def start(command: list[str], port: int, cwd: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, proc)
    return proc


async def timed_calls(client: Client, calls: int, offset: int, meta: dict | None) -> list[float]:
    out = []
    for index in range(calls):
        started = time.perf_counter()
        await client.call_tool("echo", {"text": f"call {offset + index}"}, meta=meta)
        out.append((time.perf_counter() - started) * 1000)
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pid_of(marker: str) -> int:
    """The process whose command line holds ``marker`` (the bridge the stdio client started)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    raise SystemExit(f"no process with {marker!r}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    up_port, gw_port = free_port(), free_port()
    upstream_url = f"http://127.0.0.1:{up_port}/mcp"
    gateway_url = f"http://127.0.0.1:{gw_port}/mcp"
    with tempfile.TemporaryDirectory() as scratch:
        server = start(
            [sys.executable, str(ROOT / "tests" / "mcp_http_server.py"), str(up_port)],
            up_port,
            ROOT / "tests",
        )
        gateway = start(
            [
                sys.executable,
                "-m",
                "loop_brake_cli",
                "mcp-gateway",
                "--listen",
                f"127.0.0.1:{gw_port}",
                "--upstream",
                upstream_url,
                "--log",
                os.path.join(scratch, "gateway.jsonl"),
            ],
            gw_port,
            ROOT,
        )
        bridge_log = os.path.join(scratch, "bridge.jsonl")
        bridge = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "loop_brake_cli",
                "mcp-proxy",
                "--url",
                upstream_url,
                "--log",
                os.path.join(scratch, "bridge.jsonl"),
            ],
            cwd=ROOT,
        )
        times: dict[str, list[float]] = {"direct": [], "gateway": [], "bridge": []}
        cpu: dict[str, float] = {"gateway": 0.0, "bridge": 0.0}

        async def run() -> None:
            async with (
                Client(streamable_http_client(upstream_url)) as direct,
                Client(streamable_http_client(gateway_url)) as through_gateway,
                Client(stdio_client(bridge, errlog=open(os.devnull, "w"))) as through_bridge,
            ):
                ways = {
                    "direct": (direct, None),
                    "gateway": (through_gateway, {"loop-brake/session": "bench"}),
                    "bridge": (through_bridge, None),
                }
                for client, meta in ways.values():  # warm-up
                    await timed_calls(client, 50, -100, meta)
                pids = {"gateway": gateway.pid, "bridge": pid_of(bridge_log)}
                for round_number in range(args.rounds):
                    for name, (client, meta) in ways.items():
                        offset = round_number * args.calls
                        before = cpu_seconds(pids[name]) if name in pids else 0.0
                        times[name] += await timed_calls(client, args.calls, offset, meta)
                        if name in pids:
                            cpu[name] += cpu_seconds(pids[name]) - before

        try:
            anyio.run(run)
        finally:
            for proc in (gateway, server):
                proc.terminate()
                proc.wait(10)
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds x {args.calls} calls per way; load {load:.1f}; ms per call")
    base50, base99 = percentile(times["direct"], 0.5), percentile(times["direct"], 0.99)
    print(f"{'way':8} {'p50':>7} {'p99':>7} {'mean':>7} {'+p50':>7} {'+p99':>7} {'cpu':>9}")
    for name, values in times.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        mean = statistics.fmean(values)
        added = ""
        if name != "direct":
            own = cpu[name] * 1000 / len(values)
            added = f" {p50 - base50:7.2f} {p99 - base99:7.2f} {own:9.2f}"
        print(f"{name:8} {p50:7.2f} {p99:7.2f} {mean:7.2f}{added}")
    print("cpu: CPU milliseconds the gateway or bridge process itself spent per call")


if __name__ == "__main__":
    main()
