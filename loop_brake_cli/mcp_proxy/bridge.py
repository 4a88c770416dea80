"""``mcp-proxy --url``: the brake between a stdio MCP client and a remote (Streamable HTTP) server.

The client side is the stdio proxy's: the same ``ClientRouter`` decides every
client line (same verdicts, same ``--log`` lines, same deny answer, the denied
call never leaves this process). What it forwards goes to ``RemoteServer``
instead of a child's stdin, and the server's messages come back as stdout
lines, through ``ClientRouter.relay_server_line`` (the progress mode reads
results there, as with a local server).

Threads: the main thread reads the client's lines; each request the server is
asked goes out on a thread of its own (a long tool call never holds up the
next message), while notifications, responses and ``initialize`` go out in
order on the main thread; a session's GET stream has one thread. Every line to
the client is one write under one lock. At the client's end of input the calls
in flight get ``shutdown_timeout`` seconds to finish, then the session is
ended (DELETE) and the bridge exits 0 (5 if standard output failed). Nothing
here prints a header value or an argument.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..mcp_shared.pipes import iter_lines
from ..mcp_shared.spans import member_span
from .client_end import ClientEnd
from .process import DEFAULT_SHUTDOWN_TIMEOUT, OUTPUT_FAILED
from .remote import RemoteServer

__all__ = ["BridgeOptions", "DEFAULT_READ_TIMEOUT", "DEFAULT_TIMEOUT", "run_bridge"]

DEFAULT_TIMEOUT = 10.0  # seconds to connect (and to send a request) to the server
DEFAULT_READ_TIMEOUT = 300.0  # seconds the server may stay silent during an answer


@dataclass(frozen=True)
class BridgeOptions:
    """What the command line decided; the headers are already read (``env:`` resolved)."""

    url: str
    max_repeats: int
    headers: list[tuple[str, str]] = field(default_factory=list, repr=False)
    shadow: bool = False
    log_path: str | None = None
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    policy: Any = None
    timeout: float = DEFAULT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    store: Any = None  # a stores.Store shared with other processes, or None (memory)
    fail_closed: bool = False
    label: str = "mcp"
    metrics: Any = None  # a telemetry.BrakeMetrics that counts each verdict (--otel), or None


def _payload(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


class _Bridge(ClientEnd):
    def __init__(self, options: BridgeOptions, stdin_fd: int, stdout_fd: int, stderr_fd: int):
        super().__init__(options, stdin_fd, stdout_fd, stderr_fd)
        self.remote = RemoteServer(
            options.url, options.headers, options.timeout, options.read_timeout
        )
        self.requests: list[threading.Thread] = []
        self.listening = False
        self.last_problem: str | None = None
        self._problem_lock = threading.Lock()

    def problem(self, text: str | None) -> None:
        """A failure to reach the server, noted once until something else happens.

        Requests run in their own threads and the client may send the next one as
        soon as it reads this one's error: the compare and the set are one step, or
        two threads could both see a new problem and say it twice."""
        with self._problem_lock:
            new = text is not None and text != self.last_problem
            self.last_problem = text
        if new:
            self.note(text)  # type: ignore[arg-type]

    def send(self, body: bytes, message: Any, id_bytes: bytes | None) -> None:
        try:
            self.problem(self.remote.send(body, message, id_bytes, self.relay))
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            self.note(f"internal error while talking to the server ({type(exc).__name__})")

    def forward(self, data: bytes) -> None:
        body = _payload(data)
        try:
            message = parse_json(body)
        except JSONInputError:
            message = None  # the server answers what it cannot parse, as without the bridge
        method = message.get("method") if isinstance(message, dict) else None
        if method == "notifications/cancelled" and self.remote.cancel(message):
            return
        id_bytes = None
        if isinstance(method, str) and "id" in message:  # type: ignore[operator]
            span = member_span(body, "id")
            id_bytes = body[span[0] : span[1]] if span else b"null"
        if id_bytes is not None and method != "initialize":
            thread = threading.Thread(target=self.send, args=(body, message, id_bytes), daemon=True)
            self.requests = [t for t in self.requests if t.is_alive()]
            self.requests.append(thread)
            thread.start()
            return
        self.send(body, message, id_bytes)
        if method == "notifications/initialized" and not self.listening and self.remote.session_id:
            self.listening = True
            threading.Thread(target=self.remote.listen, args=(self.relay,), daemon=True).start()

    def run(self) -> int:
        try:
            for line in iter_lines(self.stdin_fd):
                routed = self.route(line)
                if routed.answer is not None:
                    self.to_client(routed.answer)
                if routed.forward is not None:
                    self.forward(routed.forward)
                if self.client_gone:
                    break
            deadline = time.monotonic() + self.options.shutdown_timeout
            for thread in self.requests:
                thread.join(max(0.0, deadline - time.monotonic()))
        except OSError:
            pass  # our stdin is unreadable: the end of the client
        except KeyboardInterrupt:
            self.remote.close()
            return 130
        self.remote.close()
        return OUTPUT_FAILED if self.output_error is not None else 0


def run_bridge(
    options: BridgeOptions, *, stdin_fd: int = 0, stdout_fd: int = 1, stderr_fd: int = 2
) -> int:
    """Bridge the client on the standard streams to ``options.url`` until its input ends.

    Raises ``OutputError`` if ``stdout_fd`` cannot be written and ``LogOpenError``
    if the log cannot be opened (both before any request is made)."""
    return _Bridge.serve(options, stdin_fd, stdout_fd, stderr_fd)
