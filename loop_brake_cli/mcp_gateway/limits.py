"""The gateway's bounds on its clients: connections, slow requests, idle keep-alive, memory.

uvicorn holds a connection for as long as its client keeps it: one that connects and
sends nothing, or half a request's headers, or a body a byte a minute (slowloris), is
held forever, and 1,500 such connections were still open after 11 s (issue 37). So
the gateway serves HTTP through a subclass of uvicorn's own protocol
(``bounded_protocol``) that adds:

* ``max_connections``: a connection beyond it is answered ``503`` and closed at once
  (``GatewayCounters.connections_refused``);
* ``request_timeout``: each request (its headers and its whole body) must arrive within
  it from the moment the connection opens or its previous answer ends, else the
  connection is closed (``requests_timed_out``): a connection that sends nothing, half
  its headers, or part of its body is cut then. A request that arrived whole is never
  cut, however long its answer streams;
* ``keep_alive``: uvicorn's own idle time between requests (at most
  ``request_timeout`` in effect).

Memory: a flood of large request bodies is freed when they end, but glibc's malloc
keeps freed heap pages mapped, so the process's RSS stayed up (216 MB after 40
stalled 4 MiB bodies). ``trim_memory`` asks glibc to return them (``malloc_trim``);
the gateway's housekeeping calls it once a flood of bodies or sessions has gone.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from typing import Any

from .counters import GatewayCounters

__all__ = [
    "DEFAULT_KEEP_ALIVE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "Corked",
    "GatewayLimits",
    "bounded_protocol",
    "trim_memory",
]

DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_REQUEST_TIMEOUT = 30.0  # seconds for a request's headers and body to arrive
DEFAULT_KEEP_ALIVE = 5.0  # seconds an idle connection is kept between requests
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 47\r\n"
    b"connection: close\r\n\r\nloop-brake mcp-gateway: too many connections\r\n\r\n"
)


class GatewayLimits:
    """The HTTP side's bounds (module docstring)."""

    def __init__(
        self,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        keep_alive: float = DEFAULT_KEEP_ALIVE,
    ) -> None:
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self.keep_alive = keep_alive


def bounded_protocol(
    base: type[asyncio.Protocol], limits: GatewayLimits, counters: GatewayCounters
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``base`` (h11's or httptools') with the gateway's bounds:
    given to ``uvicorn.Config(http=...)``. Relies on what both share: ``connections``
    (the server's open connections), ``cycle`` (the request in progress) and its
    ``more_body`` (False once the whole request has arrived), ``on_response_complete``."""

    class Bounded(base):  # type: ignore[valid-type, misc]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                counters.connections_refused += 1
                transport.write(_BUSY)
                transport.close()
                return
            self.transport = Corked(transport)  # flow control stays on the real one
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request has its own time to arrive

        def _arm(self) -> None:
            self._disarm()
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(limits.request_timeout, self._late)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _late(self) -> None:
            """The request's time is up: cut the connection unless the request arrived
            whole (its answer may take as long as it takes; its end re-arms)."""
            self._deadline = None
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete and not cycle.more_body:
                return
            if self.transport.is_closing():
                return
            counters.requests_timed_out += 1
            self.transport.abort()  # no reply: its client is not sending, or not there

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{base.__name__}"
    return Bounded


class Corked:
    """A transport whose writes within one turn of the event loop go out as one
    ``send``: uvicorn writes an answer's head, its body and the end of its body as
    three writes, each a system call that on loopback also does the receiver's work
    (a third of the gateway's CPU per call, in a profile under ``bench/gateway_load.py``).
    The writes are joined and sent at the loop's next turn; ``close`` sends what is
    pending first, ``abort`` drops it. Everything else is the transport's own."""

    __slots__ = ("_transport", "_pending", "_loop")

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._pending: list[bytes] | None = None
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._pending is None:
            self._pending = [data]
            self._loop.call_soon(self.flush)
        else:
            self._pending.append(data)

    def flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def get_write_buffer_size(self) -> int:
        pending = sum(map(len, self._pending)) if self._pending else 0
        return pending + int(self._transport.get_write_buffer_size())

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_trim: Any = None


def trim_memory() -> bool:
    """Give freed heap memory back to the system (glibc's ``malloc_trim(0)``); False
    where there is no glibc (then nothing is done)."""
    global _trim
    if _trim is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _trim = libc.malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _trim = False
    if _trim is False:
        return False
    _trim(0)
    return True
