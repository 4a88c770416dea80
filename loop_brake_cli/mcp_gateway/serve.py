"""Run the gateway: uvicorn on the listen address, quiet logging, the log file.

uvicorn's own logging is reduced to one line per warning, without tracebacks
(``_Plain``): an exception's text or locals could hold a request body. No access
log: a URL's query may carry a token.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from ..core.table import StoreError
from ..mcp_shared.headers import safe_url
from ..mcp_shared.pipes import write_all
from ..mcp_shared.verdict_log import VerdictLog
from ..render.visible import visible
from .app import Gateway, GatewayConfig
from .counters import GatewayCounters
from .decide import GatewayBrake
from .limits import bounded_protocol
from .metrics import metrics_endpoint

__all__ = ["ListenError", "StdioUpstream", "is_loopback", "parse_listen", "run_gateway"]

PROG = "loop-brake mcp-gateway"
TOKEN_HEADER = "x-loop-brake-upstream-token"  # the stdio upstream answers only with it
TOKEN_VARIABLE = "LOOP_BRAKE_UPSTREAM_TOKEN"  # how the child is given the token


class ListenError(ValueError):
    """A ``--listen`` value that is not HOST:PORT."""


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a host and a port."""
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not host or int(port) > 65535:
        raise ListenError(f"--listen must be HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class StdioUpstream:
    """``--upstream -- CMD ARGS``: the child that serves a stdio server over HTTP on a
    private loopback port (``stdio_upstream``), started before the gateway listens.

    Private twice over (issue 36.12): its address is never printed, and it answers
    only requests that carry a token drawn at random for this run, which the child
    gets in its environment (not on its command line, which ``ps`` shows to every
    user) and the gateway sends with every upstream request; the stdio server itself
    never sees it. So no client reaches the server around the brake."""

    START_TIMEOUT = 60.0  # seconds for the child (and the stdio server) to start

    def __init__(self, command: list[str]) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.token = secrets.token_urlsafe(32)
        self.header = (TOKEN_HEADER, self.token)
        module = "loop_brake_cli.mcp_gateway.stdio_upstream"
        argv = [sys.executable, "-m", module, str(self.port), "--", *command]
        env = {**os.environ, TOKEN_VARIABLE: self.token}
        # Its stdin is a pipe from us that it reads until the end: when the gateway
        # ends in any way (a signal during start-up included), the child sees the end
        # of the pipe and stops, so no server outlives its gateway.
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env
        )
        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ListenError(f"the stdio server {command[0]!r} could not be started")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ListenError(f"the stdio server {command[0]!r} did not start within 60 s")

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def note(text: str) -> None:
    """One line for people on stderr; every control in it shown, none obeyed (a
    session name a client chose is escaped where it is quoted, ``render.visible``)."""
    try:
        write_all(2, f"{PROG}: {visible(text, lines=True)}\n".encode("utf-8", "replace"))
    except OSError:
        pass


class _Plain(logging.Formatter):
    """A log record as one line: its message, never a traceback or stack."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{PROG}: {record.getMessage()}"


def _quiet_uvicorn() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Plain())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers = [handler] if name == "uvicorn" else []
        logger.setLevel(logging.WARNING)
        logger.propagate = name != "uvicorn"


def run_gateway(
    listen: tuple[str, int],
    config: GatewayConfig,
    brake_options: dict[str, Any],
    log_path: str | None,
    stdio: list[str] | None = None,
) -> int:
    """Serve until SIGINT or SIGTERM; the exit status (0 after a clean stop).

    Raises ``LogOpenError`` before listening if the log cannot be opened."""
    host, port = listen
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    child = None
    if stdio is not None:
        try:
            child = StdioUpstream(stdio)
        except ListenError:
            sock.close()
            raise
        config.upstream = child.url
        config.headers = [*config.headers, child.header]
        note(f"started the stdio server {visible(stdio[0])!r} (the gateway is its only client)")
    try:
        shown = None if child is None else f"the stdio server {visible(stdio[0])!r}"  # type: ignore[index]
        return _serve(sock, host, port, config, brake_options, log_path, shown)
    finally:
        if child is not None:
            child.stop()


def _serve(
    sock: socket.socket,
    host: str,
    port: int,
    config: GatewayConfig,
    brake_options: dict[str, Any],
    log_path: str | None,
    upstream_shown: str | None = None,
) -> int:
    options = dict(brake_options)
    serve_metrics = options.pop("serve_metrics", options.get("metrics") is not None)
    exporter = options.pop("otel", None)  # --otel: a telemetry.otel.Exporter, or None
    log = VerdictLog(log_path, note)
    counters = GatewayCounters()
    brake = GatewayBrake(log=log.write, note=note, counters=counters, **options)
    _ask_store(options.get("store"))
    app: Any = Gateway(config, brake, note)
    if serve_metrics:  # --metrics: GET /metrics is served here
        app = metrics_endpoint(app, brake.metrics)
    if exporter is not None:  # the same families, read at each export
        exporter.observe(brake.metrics)
    _quiet_uvicorn()
    limits = config.limits
    _enough_descriptors(limits.max_connections)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            http=bounded_protocol(AutoHTTPProtocol, limits, counters),
            timeout_keep_alive=limits.keep_alive,  # type: ignore[arg-type]
            log_config=None,
            access_log=False,
            lifespan="on",
            server_header=False,
            # a connection is the peer it comes from: never what its X-Forwarded-For
            # says (uvicorn believes it from 127.0.0.1 by default), which would let a
            # client pick its --anonymous connection streak and its calls' id scope
            proxy_headers=False,
            timeout_graceful_shutdown=2,
        )
    )
    shown = f"[{host}]" if ":" in host else host
    upstream = upstream_shown or safe_url(config.upstream)
    note(f"listening on http://{shown}:{port}/ (any path), upstream {upstream}")
    if not is_loopback(host):
        note(
            "not a loopback address: every client that reaches it uses the upstream "
            "(and the gateway's --header credentials)"
        )
    # uvicorn stops on SIGINT/SIGTERM, then raises the signal again for the handler
    # it found: ours takes it, so a requested stop is exit status 0, not 130 or 143.
    previous = {signum: signal.signal(signum, _stopped) for signum in STOP_SIGNALS}
    try:
        server.run(sockets=[sock])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        brake.close()  # the denials still being counted are summed up
        log.close()
        sock.close()
    return 0


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _ask_store(store: Any) -> None:
    """With ``--store redis://``: connect before listening, so a server whose
    ``maxmemory-policy`` evicts streaks is said once now, at start, not at the first
    call (``RedisStore.connect``). A server that does not answer yet is the calls'
    failure (each decided uncounted, said by the brake); its policy is then read at its
    first answer."""
    from .store_calls import concurrent_store

    if not concurrent_store(store):  # SQLite, or no store: no server to ask
        return
    try:
        store.connect()
    except StoreError:
        pass


def _enough_descriptors(connections: int) -> None:
    """Raise the soft limit on open files toward the hard one, so ``--max-connections``
    (plus the upstream's and the store's sockets) can be open at once: a process that
    runs out accepts nothing for a second at a time."""
    try:
        import resource
    except ImportError:  # not on this system
        return
    wanted = connections * 2 + 256  # each proxied request also holds an upstream socket
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            top = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, top), hard))
    except (OSError, ValueError):
        pass


def _stopped(_signum: int, _frame: Any) -> None:
    """A stop signal uvicorn has already acted on."""


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a refusal is one clear error (and port 0
    is told as the port it became)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets that say
    # so, and without it every answer waited for a delayed ACK (+40 ms per call).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
