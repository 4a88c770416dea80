"""A real redis-server for the store tests: started on a free loopback port, stopped by pid.

Debian's ``redis-server`` (``.ci/run`` installs it). Where it is missing the tests
skip, except in CI (``CI`` set), where they fail: the fleet store is proven only
against the real server. ``fixture`` gives a session-wide server (flushed before
each test); ``RedisServer`` a private one for the tests that pause, flush or kill it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
)
MISSING = (
    "redis-server is not installed (apt-get install -y --no-install-recommends redis-server); "
    "the Redis store tests need the real server"
)


def require_redis_server() -> str:
    """The server binary, else skip (outside CI) or fail (in CI)."""
    if REDIS_SERVER is None:
        if os.environ.get("CI"):
            pytest.fail(MISSING + " (CI is set: these tests must not skip)")
        pytest.skip(MISSING)
    return REDIS_SERVER


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server process on 127.0.0.1 (no persistence). ``start`` may be called
    again after ``kill`` to restart it on the same port."""

    def __init__(self, port: int | None = None) -> None:
        self.binary = require_redis_server()
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120  # a hang guard: a loaded machine starts slowly
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                if self.command("PING") == "PONG":
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not answer PING within 120 s")

    def command(self, *words: str, timeout: float = 2.0) -> str:
        """Send one inline command; the reply as text: a status, error, integer or bulk
        string (nil: ""). Arrays are not read (the tests do not ask for one)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(" ".join(words).encode() + b"\r\n")
            reply = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
                head, sep, rest = reply.partition(b"\r\n")
                if not sep:
                    continue
                if head[:1] != b"$":
                    return head[1:].decode(errors="replace")
                size = int(head[1:])
                if size < 0:
                    return ""
                if len(rest) >= size + 2:
                    return rest[:size].decode(errors="replace")
        raise OSError("redis-server closed the connection")

    def freeze(self) -> None:
        """SIGSTOP: the server takes connections (the kernel does) but answers nothing
        until ``thaw``; a hung server for as long as the test needs, not a timed pause."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: the frozen server answers again, the commands it was sent first."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL by pid (a crash, no shutdown)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
