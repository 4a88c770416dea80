"""Real Streamable HTTP servers on loopback for the bridge and gateway tests.

``upstream(tmp_path)`` starts ``tests/mcp_http_server.py`` (the SDK's own HTTP
transport) on a free loopback port and stops it by its pid; ``free_port`` and
``wait_listening`` serve the gateway's processes too.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import ROOT

HTTP_SERVER = str(ROOT / "tests" / "mcp_http_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen[bytes], within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on port {port}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(120)  # a hang guard: a loaded machine stops slowly
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def upstream(tmp_path: Path, *options: str, **env: str) -> Iterator[tuple[str, Path]]:
    """A real SDK server: yields its URL and the file its calls are recorded in."""
    calls = tmp_path / f"calls-{len(list(tmp_path.glob('calls-*')))}.jsonl"
    port = free_port()
    log = (tmp_path / f"upstream-{port}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, HTTP_SERVER, str(port), *options],
        cwd=ROOT / "tests",
        env={**os.environ, "MCP_TEST_CALLS": str(calls), **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", calls
    finally:
        stop(proc)
        log.close()


@contextmanager
def gateway(
    tmp_path: Path,
    upstream_url: str,
    *options: str,
    env: dict[str, str] | None = None,
    stdio: tuple[str, ...] = (),
) -> Iterator[tuple[str, Path, Path]]:
    """``loop-brake mcp-gateway`` in its own process: yields its URL, its log and its
    stderr file (read after the block, when the process has stopped)."""
    port = free_port()
    log = tmp_path / f"gateway-{port}.jsonl"
    stderr_path = tmp_path / f"gateway-{port}.stderr"
    stdout_path = tmp_path / f"gateway-{port}.stdout"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-gateway"]
    command += ["--listen", f"127.0.0.1:{port}", "--log", str(log), *options]
    command += ["--upstream", upstream_url, *stdio]  # upstream_url "--": stdio is the server
    with stderr_path.open("wb") as err, stdout_path.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=err,
        )
        try:
            wait_listening(port, proc)
            yield f"http://127.0.0.1:{port}/mcp", log, stderr_path
        finally:
            stop(proc)
    assert proc.returncode == 0, stderr_path.read_text()
    assert stdout_path.read_bytes() == b""


NODE_SERVER = ROOT / "tests" / "js" / "everything" / "http_server.mjs"
NODE_MODULES = NODE_SERVER.parent / "node_modules" / "@modelcontextprotocol" / "server-everything"


@contextmanager
def node_upstream(tmp_path: Path) -> Iterator[str]:
    """The MCP reference server in Node.js (TypeScript SDK), Streamable HTTP on loopback."""
    port = free_port()
    log = (tmp_path / f"node-{port}.log").open("wb")
    proc = subprocess.Popen(
        ["node", str(NODE_SERVER), str(port)], cwd=NODE_SERVER.parent, stdout=log, stderr=log
    )
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
        log.close()
