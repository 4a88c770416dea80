"""The client's end of ``mcp-proxy``, the same whether the server is a process or remote.

``process`` (a stdio server the proxy starts) and ``bridge`` (``--url``, a remote
server) face the client alike, and must, since ``--url`` promises the same
verdicts and answers: one ``ClientRouter`` decides every client line and writes
``--log``; every line to the client is one write under one lock, so a denial
answer never lands in the middle of a server line; a write that fails for
another reason than the client going away is said once and remembered (exit 5);
a broken brake fails open (the line is forwarded, a response is never lost or
held) with one stderr line that names the exception's type only, since its
message could quote the input. Written once here so that the two cannot drift
apart; each subclass adds how it reaches its server and its ``run``.
"""

from __future__ import annotations

import threading
from typing import Any

from ..mcp_shared.pipes import write_all
from ..mcp_shared.verdict_log import VerdictLog
from ..render.visible import visible
from .routing import ClientRouter, Routed
from .streams import OutputError, output_problem, quiet_write_error

__all__ = ["ClientEnd"]


class ClientEnd:
    """The client's streams, the router and its log; ``run`` serves the client."""

    stopping = "stopping"  # what a failed write to the client leads to, as the note says

    def __init__(self, options: Any, stdin_fd: int, stdout_fd: int, stderr_fd: int) -> None:
        self.options = options
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self.log = VerdictLog(options.log_path, self.note)  # LogOpenError before any server
        self.router = ClientRouter(
            options.max_repeats,
            self.log.write,
            self.note,
            options.shadow,
            options.policy,
            options.store,
            options.fail_closed,
            options.label,
        )
        if options.metrics is not None:  # --otel: each verdict counted, the brake read
            self.router.counts = options.metrics.counts
            options.metrics.watch(self.router.brake)
        self.out_lock = threading.Lock()
        self.client_gone = False  # the client's stdout pipe is closed
        self.output_error: str | None = None  # why a line to the client failed, if not EPIPE

    @classmethod
    def serve(cls, options: Any, stdin_fd: int, stdout_fd: int, stderr_fd: int) -> int:
        """``run`` with these streams and the log closed after; ``OutputError`` first if
        ``stdout_fd`` is closed or read-only (``LogOpenError`` if the log cannot be
        opened): both before the server is reached."""
        problem = output_problem(stdout_fd)
        if problem is not None:
            raise OutputError(problem)
        end = cls(options, stdin_fd, stdout_fd, stderr_fd)
        try:
            return end.run()
        finally:
            end.router.close()  # the denials still being counted are summed up
            end.log.close()

    def run(self) -> int:
        """Serve the client until its input ends; the proxy's exit status."""
        raise NotImplementedError

    def note(self, text: str) -> None:
        """One line for people on stderr (shared with a local server's stderr)."""
        try:
            line = f"loop-brake mcp-proxy: {visible(text, lines=True)}\n"
            write_all(self.stderr_fd, line.encode("utf-8", "replace"))
        except OSError:
            pass

    def to_client(self, data: bytes) -> None:
        """One whole line to the client, never interleaved with another."""
        failure = None
        with self.out_lock:
            if self.client_gone:
                return
            try:
                write_all(self.stdout_fd, data)
            except OSError as exc:
                self.client_gone = True
                if not quiet_write_error(exc):  # not the client going away: say so once
                    failure = self.output_error = str(exc.strerror or type(exc).__name__)
        if failure is not None:
            self.note(f"cannot write to standard output ({failure}); {self.stopping}")

    def route(self, line: bytes) -> Routed:
        try:
            return self.router.route_line(line)
        except Exception as exc:  # noqa: BLE001 - a broken brake must not break the server
            # Fail open, as the hook does by default: the call runs, and the
            # reason (its type only: a message could quote the input) is told.
            self.note(f"internal error while deciding a line ({type(exc).__name__}); forwarded")
            return Routed(line)

    def relay(self, line: bytes) -> None:
        """A server line to the client, then its result to the brake (progress mode);
        a failure of the latter is one stderr line, never a lost or held response."""
        written = False

        def write(data: bytes) -> None:
            nonlocal written
            written = True
            self.to_client(data)

        try:
            self.router.relay_server_line(line, write)
        except Exception as exc:  # noqa: BLE001 - a broken brake must not lose a response
            if not written:
                self.to_client(line)
            self.note(f"internal error while reading a response ({type(exc).__name__})")
