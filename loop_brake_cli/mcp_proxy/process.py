"""The server process behind the proxy: start it, copy both ways, forward signals, stop it.

Lifecycle (the shutdown order of the MCP specification's stdio section):

* client EOF, or a closed client stdout: close the server's stdin, wait
  ``shutdown_timeout`` seconds, send SIGTERM, wait ``shutdown_timeout`` again,
  then SIGKILL; output the server writes meanwhile is still forwarded;
* the server exits: the proxy exits with its status (128 + N if signal N killed it),
  unless a line could not be written to the client for another reason than a
  reader gone away (a full disk, a file size limit): then one stderr line, the
  same shutdown, and ``OUTPUT_FAILED`` (5);
* SIGINT, SIGTERM and SIGHUP sent to the proxy are forwarded to the server,
  and the proxy keeps forwarding until the server has exited.

The server stays in the proxy's process group, so a client that kills the
group (the MCP Python SDK does: SIGTERM, then SIGKILL, to the group) reaches it.
Each line to the client is one ``write`` under one lock, so a denial answer
never lands in the middle of a server line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

from ..core.exitcodes import ExitStatus
from ..mcp_shared.pipes import iter_lines, write_all
from .client_end import ClientEnd
from .streams import OutputError

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "FORWARDED_SIGNALS",
    "OUTPUT_FAILED",
    "OutputError",
    "ProxyOptions",
    "SpawnError",
    "run_proxy",
]

DEFAULT_SHUTDOWN_TIMEOUT = 2.0
"""Seconds to wait after closing the server's stdin, and again after SIGTERM.

The MCP Python SDK gives its own servers 2 s after closing stdin before it
kills the process group, so a proxy started by it finishes its escalation at
about the time the client would begin its own."""

FORWARDED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)  # no SIGHUP on Windows

OUTPUT_FAILED = int(ExitStatus.OUTPUT)  # the client's lines could not be written

DRAIN_TIMEOUT = 2.0  # after the server exits, how long a grandchild may keep its stdout open


class SpawnError(Exception):
    """The server could not be started; ``status`` follows the shell (127, 126)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ProxyOptions:
    """What the command line decided; ``max_repeats`` is already validated."""

    command: list[str]
    max_repeats: int
    shadow: bool = False
    log_path: str | None = None
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    policy: Any = None  # a policy.Policy (already loaded and checked), or None
    store: Any = None  # a stores.Store shared with other proxies, or None (in memory)
    fail_closed: bool = False  # deny when the store cannot be asked
    label: str = "mcp"  # sessions are label#1, label#2...
    metrics: Any = None  # a telemetry.BrakeMetrics that counts each verdict (--otel), or None


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class _ServerInput:
    """The server's stdin, written by the client-to-server thread and closed by the
    shutdown thread: never closed under a write in progress (its descriptor number
    could otherwise be reused by the next open and written to), and a close asked
    for during a write happens as soon as that write ends (a write stuck on a
    server that stopped reading ends with the server, by SIGTERM or SIGKILL)."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self._fd = file.fileno()  # taken now: the file may be closed before the thread starts
        self._lock = threading.Lock()
        self._busy = False
        self.closing = False

    def write(self, data: bytes) -> bool:
        """All of ``data``; False if it is closed or the server does not take it."""
        with self._lock:
            if self.closing:
                return False
            self._busy = True
        try:
            write_all(self._fd, data)
            return True
        except OSError:
            return False
        finally:
            with self._lock:
                self._busy = False
                if self.closing:
                    self._close()

    def close(self) -> None:
        with self._lock:
            self.closing = True
            if not self._busy:
                self._close()

    def _close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass


class _ServerProcess(ClientEnd):
    """One proxied server: the two copy threads, the signal forwarders and shutdown."""

    stopping = "stopping the server"

    def __init__(self, options: ProxyOptions, stdin_fd: int, stdout_fd: int, stderr_fd: int):
        super().__init__(options, stdin_fd, stdout_fd, stderr_fd)
        self.exited = threading.Event()
        self.shutdown_started = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.server_input: _ServerInput | None = None

    def spawn(self) -> subprocess.Popen[bytes]:
        command = self.options.command
        try:
            proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, bufsize=0
            )
        except FileNotFoundError:
            raise SpawnError(f"{command[0]}: command not found", 127) from None
        except PermissionError:
            raise SpawnError(f"{command[0]}: permission denied", 126) from None
        except OSError as exc:
            raise SpawnError(f"{command[0]}: cannot run: {exc.strerror or exc}", 126) from None
        self.proc = proc
        self.server_input = _ServerInput(proc.stdin)
        return proc

    def to_client(self, data: bytes) -> None:
        """``ClientEnd.to_client``; once the client is gone, the server is shut down."""
        super().to_client(data)
        if self.client_gone:
            self.begin_shutdown()

    def client_to_server(self) -> None:
        server_input = self.server_input
        assert server_input is not None
        server_open = True
        try:
            for line in iter_lines(self.stdin_fd):
                routed = self.route(line)
                if routed.answer is not None:
                    self.to_client(routed.answer)
                if routed.forward is not None and server_open:
                    # False: the server closed its stdin (or died), or shutdown
                    # closed it; keep reading so denials are still answered.
                    server_open = server_input.write(routed.forward)
        except OSError:
            pass  # our stdin is unreadable: treat as EOF
        self.begin_shutdown()

    def server_to_client(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        try:
            for line in iter_lines(proc.stdout.fileno()):
                # after the client has gone: drained and dropped
                self.relay(line)
        except OSError:
            pass

    def guarded(self, target: Any) -> None:
        """Run a copy thread; an unexpected failure is one stderr line and a shutdown,
        never a traceback (whose locals could hold a line being forwarded)."""
        try:
            target()
        except BaseException as exc:  # noqa: BLE001
            self.note(f"internal error ({type(exc).__name__}); shutting the server down")
            self.begin_shutdown()

    def begin_shutdown(self) -> None:
        """Client gone: close the server's stdin, then SIGTERM, then SIGKILL, once."""
        if not self.shutdown_started.acquire(blocking=False):
            return
        threading.Thread(target=self._escalate, name="mcp-proxy-shutdown", daemon=True).start()

    def _escalate(self) -> None:
        proc = self.proc
        assert proc is not None and self.server_input is not None
        self.server_input.close()
        timeout = self.options.shutdown_timeout
        for action in (proc.terminate, proc.kill):
            if self.exited.wait(timeout):
                return
            try:
                action()
            except OSError:
                return

    def forward_signal(self, signum: int, frame: Any) -> None:
        proc = self.proc
        if proc is not None and not self.exited.is_set():
            try:
                os.kill(proc.pid, signum)
            except OSError:
                pass

    def run(self) -> int:
        proc = self.spawn()
        previous = {}
        for signum in FORWARDED_SIGNALS:
            previous[signum] = signal.signal(signum, self.forward_signal)
        try:
            reader = threading.Thread(
                target=self.guarded, args=(self.server_to_client,), daemon=True
            )
            writer = threading.Thread(
                target=self.guarded, args=(self.client_to_server,), daemon=True
            )
            reader.start()
            writer.start()
            returncode = proc.wait()
            self.exited.set()
            # Forward what the server wrote before exiting; a grandchild that
            # inherited its stdout must not keep the proxy alive forever.
            reader.join(DRAIN_TIMEOUT)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if self.output_error is not None:
            return OUTPUT_FAILED
        return _exit_status(returncode)


def run_proxy(
    options: ProxyOptions, *, stdin_fd: int = 0, stdout_fd: int = 1, stderr_fd: int = 2
) -> int:
    """Run the server behind the brake until it exits; return the proxy's exit status.

    Must be called from the main thread (it installs the signal forwarders).
    Raises ``OutputError`` if ``stdout_fd`` is closed or read-only and
    ``LogOpenError`` if the log cannot be opened (both before the server
    starts), and ``SpawnError`` if the server cannot be started.
    """
    return _ServerProcess.serve(options, stdin_fd, stdout_fd, stderr_fd)
