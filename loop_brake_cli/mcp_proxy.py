"""The brake in front of an MCP stdio server: ``loop-brake mcp-proxy -- SERVER ...``.

MCP clients start a tool server as a subprocess and speak newline-delimited
JSON-RPC over its stdin and stdout
(https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio).
The proxy is that subprocess: it starts the real server with its own
environment, working directory and stderr, and copies every line both ways,
byte for byte, with two exceptions on the client-to-server side:

* a ``tools/call`` request the brake denies is not forwarded; the proxy answers
  it itself with the same id and a tool execution error (``isError: true``),
  which the specification says clients should show to the model
  (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling);
* a later ``notifications/cancelled`` for an id the proxy answered is dropped:
  the server never saw that request.

The call hash is the core's: ``params.name`` and ``params.arguments`` (missing or
null = ``{}``); ``params._meta`` is never hashed, since clients put progress
tokens and trace ids there that change on every call. One proxy process is one
session, and a new ``initialize`` request starts it afresh (all streaks are
forgotten), as the plugin forgets its streaks when it is reloaded.

Forwarding stays cheap: a line is parsed only when it contains the bytes
``"tools/call"``, ``"initialize"`` or (after a denial) ``notifications/cancelled``.
Everything else is copied as it was read, one ``write`` per line, under one
lock, so a denial answer never lands in the middle of a server line.

Nothing here prints arguments: stderr lines, the ``--log`` file and the denial
text carry the tool name, the JSON-RPC id and a 12-hex hash prefix only.

Lifecycle (the shutdown order of the specification's stdio section):

* client EOF, or a closed client stdout: close the server's stdin, wait
  ``shutdown_timeout`` seconds, send SIGTERM, wait ``shutdown_timeout`` again,
  then SIGKILL; output the server writes meanwhile is still forwarded;
* the server exits: the proxy exits with its status (128 + N if signal N killed it);
* SIGINT, SIGTERM and SIGHUP sent to the proxy are forwarded to the server,
  and the proxy keeps forwarding until the server has exited.

The server stays in the proxy's process group, so a client that kills the
group (the MCP Python SDK does: SIGTERM, then SIGKILL, to the group) reaches it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .brake import LoopBrake, Verdict
from .canonical import JSONInputError, call_digest, canonical_json, parse_json
from .output import json_line
from .records import ToolCall, verdict_record

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "FORWARDED_SIGNALS",
    "LogOpenError",
    "ProxyOptions",
    "SpawnError",
    "denial_response",
    "iter_lines",
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

READ_SIZE = 1 << 16
MAX_ANSWERED_IDS = 4096  # ids answered by the proxy, remembered to drop their cancellations
DRAIN_TIMEOUT = 2.0  # after the server exits, how long a grandchild may keep its stdout open

_TOOLS_CALL = b'"tools/call"'
_INITIALIZE = b'"initialize"'
_CANCELLED = b'"notifications/cancelled"'


class LogOpenError(Exception):
    """The ``--log`` file cannot be opened; raised before the server starts."""


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


def iter_lines(fd: int, read_size: int = READ_SIZE) -> Iterator[bytes]:
    """Lines from a file descriptor, each with its ``\\n``; a last partial line as is.

    ``os.read`` rather than a buffered file: a line of any length is collected
    piecewise (no cap, no quadratic copying), each line is yielded as soon as
    its newline arrives, and a thread blocked here holds no interpreter-level
    lock that would stop the process from exiting. A descriptor the parent left
    non-blocking is waited on rather than taken for end of input.
    """
    pending: list[bytes] = []
    while True:
        try:
            data = os.read(fd, read_size)
        except BlockingIOError:  # a non-blocking descriptor from the parent: wait for data
            select.select([fd], [], [])
            continue
        if not data:
            if pending:
                yield b"".join(pending)
            return
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                if start < len(data):
                    pending.append(data[start:] if start else data)
                break
            piece = data[start : end + 1]
            if pending:
                pending.append(piece)
                yield b"".join(pending)
                pending = []
            else:
                yield piece
            start = end + 1


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data``, waiting out a full pipe even on a non-blocking descriptor."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]


def denial_response(request_id: Any, message: str) -> dict[str, Any]:
    """The JSON-RPC answer to a denied call: a successful response carrying a tool error.

    A tool execution error rather than a JSON-RPC error, because clients hand
    tool errors to the model (which should change course) and may treat
    protocol errors as a broken server.
    """
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": message}], "isError": True},
    }


def _id_key(request_id: Any) -> str:
    """A hashable key for a JSON-RPC id that keeps 1 and "1" apart."""
    try:
        return canonical_json(request_id)
    except (TypeError, JSONInputError):
        return repr(request_id)


def _exact_id(line: bytes, parsed_id: Any) -> Any:
    """The request id as sent. The core parser reads numbers as doubles (as Node
    does), which would round an integer id beyond 2**53; the standard parser,
    used only in that rare case, keeps it exact."""
    if isinstance(parsed_id, float):
        try:
            exact = json.loads(line)
        except ValueError:
            return parsed_id
        if isinstance(exact, dict) and "id" in exact:
            return exact["id"]
    return parsed_id


def _batch_line(items: list[Any]) -> bytes:
    """A batch as one compact line; a lone surrogate is written as its JSON escape."""
    text = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    return (text + "\n").encode("utf-8", "backslashreplace")


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class _Proxy:
    """One proxied server connection: the brake, the two copy threads and shutdown."""

    def __init__(self, options: ProxyOptions, stdin_fd: int, stdout_fd: int, stderr_fd: int):
        self.options = options
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self.brake = LoopBrake(options.max_repeats)
        self.session = f"mcp-proxy-{os.getpid()}"
        self.answered: OrderedDict[str, None] = OrderedDict()
        self.out_lock = threading.Lock()
        self.client_gone = False  # the client's stdout pipe is closed
        self.server_stdin_closed = False  # set just before shutdown closes it
        self.exited = threading.Event()
        self.shutdown_started = threading.Lock()
        self.log_fd: int | None = None
        self.log_lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None

    # -- set-up -----------------------------------------------------------------

    def open_log(self) -> None:
        path = self.options.log_path
        if path is not None:
            try:
                self.log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LogOpenError(f"{path}: cannot open the log: {exc.strerror or exc}") from None

    def spawn(self) -> subprocess.Popen[bytes]:
        command = self.options.command
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
                bufsize=0,
            )
        except FileNotFoundError:
            raise SpawnError(f"{command[0]}: command not found", 127) from None
        except PermissionError:
            raise SpawnError(f"{command[0]}: permission denied", 126) from None
        except OSError as exc:
            raise SpawnError(f"{command[0]}: cannot run: {exc.strerror or exc}", 126) from None
        self.proc = proc
        return proc

    # -- output -----------------------------------------------------------------

    def to_client(self, data: bytes) -> None:
        """One whole line to the client, never interleaved with another."""
        with self.out_lock:
            if self.client_gone:
                return
            try:
                _write_all(self.stdout_fd, data)
            except OSError:  # EPIPE and friends: the client went away
                self.client_gone = True
        if self.client_gone:
            self.begin_shutdown()

    def note(self, text: str) -> None:
        """One line for people on stderr (shared with the server's stderr)."""
        try:
            _write_all(self.stderr_fd, f"loop-brake mcp-proxy: {text}\n".encode("utf-8", "replace"))
        except OSError:
            pass

    def log(self, call: ToolCall, verdict: Verdict) -> None:
        with self.log_lock:
            if self.log_fd is None:
                return
            try:
                _write_all(self.log_fd, json_line(verdict_record(call, verdict)))
            except OSError as exc:
                self.note(f"cannot write the log ({exc.strerror or exc}); logging stopped")
                self.close_log()

    def close_log(self) -> None:
        if self.log_fd is not None:
            os.close(self.log_fd)
            self.log_fd = None

    # -- the client-to-server direction -------------------------------------------

    def judge(self, message: Any, line: bytes | None) -> tuple[bool, dict[str, Any] | None]:
        """Whether a parsed message goes to the server, and the proxy's own answer."""
        if not isinstance(message, dict):
            return True, None
        method = message.get("method")
        if method == "tools/call" and "id" in message:
            params = message.get("params")
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                return True, None  # malformed: the server answers it
            name = params["name"]
            arguments = params.get("arguments")
            try:
                digest = call_digest(name, {} if arguments is None else arguments)
            except (TypeError, JSONInputError):
                return True, None
            request_id = message["id"]
            if line is not None:
                request_id = _exact_id(line, request_id)
            verdict = self.brake.observe(self.session, name, digest)
            call = ToolCall(tool=name, args=None, session=self.session, call_id=request_id)
            self.log(call, verdict)
            if not verdict.denied:
                return True, None
            what = (
                f"tools/call id {json.dumps(request_id, ensure_ascii=False)} "
                f"(tool {json.dumps(name, ensure_ascii=False)}, call {verdict.hash_prefix}, "
                f"count {verdict.count}, limit {verdict.max_repeats})"
            )
            if self.options.shadow:
                self.note(f"shadow: would deny {what}; forwarded")
                return True, None
            self.note(f"denied {what}")
            self.remember_answered(request_id)
            return False, denial_response(request_id, verdict.message)
        if method == "notifications/cancelled" and "id" not in message:
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                key = _id_key(params["requestId"])
                if key in self.answered:
                    del self.answered[key]
                    return False, None
            return True, None
        if method == "initialize" and "id" in message:
            self.brake.reset()
        return True, None

    def remember_answered(self, request_id: Any) -> None:
        self.answered[_id_key(request_id)] = None
        if len(self.answered) > MAX_ANSWERED_IDS:
            self.answered.popitem(last=False)

    def filter_line(self, line: bytes) -> tuple[bytes | None, bytes | None]:
        """The bytes to forward to the server (None: nothing) and the answer to the client."""
        if not (
            _TOOLS_CALL in line or _INITIALIZE in line or (self.answered and _CANCELLED in line)
        ):
            return line, None
        try:
            message = parse_json(line)
        except JSONInputError:
            return line, None  # unparseable: forwarded unchanged, the server decides
        try:
            if isinstance(message, list):
                return self.filter_batch(line, message)
            forward, answer = self.judge(message, line)
            return (line if forward else None), (json_line(answer) if answer else None)
        except Exception as exc:  # noqa: BLE001 - a broken brake must not break the server
            # Fail open, as the hook does by default: the call runs, and the
            # reason (its type only: a message could quote the input) is told.
            self.note(f"internal error while judging a line ({type(exc).__name__}); forwarded")
            return line, None

    def filter_batch(self, line: bytes, batch: list[Any]) -> tuple[bytes | None, bytes | None]:
        """A JSON-RPC batch (removed from MCP in 2025-06-18, still accepted here):
        unchanged unless something in it is withheld; then the rest is forwarded
        as a new batch and the proxy's answers go back as a batch of their own."""
        kept: list[Any] = []
        answers: list[dict[str, Any]] = []
        for element in batch:
            forward, answer = self.judge(element, None)
            if forward:
                kept.append(element)
            if answer:
                answers.append(answer)
        if len(kept) == len(batch):
            return line, None
        return (_batch_line(kept) if kept else None), (_batch_line(answers) if answers else None)

    def client_to_server(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        server_fd = proc.stdin.fileno()
        server_open = True
        try:
            for line in iter_lines(self.stdin_fd):
                forward, answer = self.filter_line(line)
                if answer is not None:
                    self.to_client(answer)
                if forward is not None and server_open and not self.server_stdin_closed:
                    try:
                        _write_all(server_fd, forward)
                    except OSError:
                        # The server closed its stdin (or died): keep reading so
                        # denials are still answered; its exit ends the proxy.
                        server_open = False
        except OSError:
            pass  # our stdin is unreadable: treat as EOF
        self.begin_shutdown()

    # -- the server-to-client direction -------------------------------------------

    def server_to_client(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        try:
            for line in iter_lines(proc.stdout.fileno()):
                self.to_client(line)  # after the client has gone: drained and dropped
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

    # -- shutdown -----------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Client gone: close the server's stdin, then SIGTERM, then SIGKILL, once."""
        if not self.shutdown_started.acquire(blocking=False):
            return
        threading.Thread(target=self._escalate, name="mcp-proxy-shutdown", daemon=True).start()

    def _escalate(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        self.server_stdin_closed = True
        try:
            proc.stdin.close()
        except OSError:
            pass
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
        return _exit_status(returncode)


def run_proxy(
    options: ProxyOptions, *, stdin_fd: int = 0, stdout_fd: int = 1, stderr_fd: int = 2
) -> int:
    """Run the server behind the brake until it exits; return the proxy's exit status.

    Must be called from the main thread (it installs the signal forwarders).
    Raises ``LogOpenError`` if the log cannot be opened (before the server starts)
    and ``SpawnError`` if the server cannot be started.
    """
    proxy = _Proxy(options, stdin_fd, stdout_fd, stderr_fd)
    proxy.open_log()
    try:
        return proxy.run()
    finally:
        with proxy.log_lock:
            proxy.close_log()
