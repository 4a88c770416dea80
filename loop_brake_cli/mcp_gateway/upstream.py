"""The gateway's HTTP/1.1 client to its upstream: keep-alive connections, bytes as they come.

The gateway first spoke to its upstream through ``httpx2`` (the MCP SDK's client,
on httpcore, anyio and h11): about 40% of the gateway's own CPU per forwarded call
went there (a profile under ``bench/gateway_load.py``, docs/performance.md), more
than the decision and the client's side together. This client does what the
gateway needs and no more: one request at a time per connection, idle connections
kept for the next request, the request's head and body written in one ``send``,
the answer's head parsed once, its body framed by ``Content-Length``, the chunked
transfer coding, or the connection's end, and handed on as it arrives.

Failures are raised as ``httpx2``'s exception classes (``ConnectError``,
``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``, ``ReadError``,
``RemoteProtocolError``), so ``mcp_shared.transport.transport_problem`` words them
as it words the bridge's; TLS (an ``https://`` upstream) verifies with ``httpx2``'s
own context, as before. No redirect is followed, no proxy read from the
environment; user info in the URL is sent as Basic authorization, as ``httpx2``
sent it.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2

__all__ = ["Upstream", "UpstreamResponse"]

CHUNK = 65536  # bytes read at most at once from the upstream
MAX_IDLE = 256  # idle connections kept for reuse (more are closed)
_NO_BODY = frozenset({204, 304})
_TIMEOUT: Any = getattr(asyncio, "timeout", None)  # Python 3.11+; else wait_for (a task)


async def _within(seconds: float, work: Any) -> Any:
    """``await work`` within ``seconds``, else ``TimeoutError``."""
    if _TIMEOUT is None:
        return await asyncio.wait_for(work, seconds)
    async with _TIMEOUT(seconds):
        return await work


class Upstream:
    """Requests to one upstream URL (``send``); ``aclose`` closes idle connections."""

    def __init__(self, url: str, timeout: float, read_timeout: float | None) -> None:
        parts = urlsplit(url)
        self.tls = parts.scheme.lower() == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.tls else 80)
        self.timeout = timeout
        self.read_timeout = read_timeout
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        self.target = target
        shown = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        self.host_header = shown if parts.port in (None, default) else f"{shown}:{parts.port}"
        self.auth: str | None = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self.auth = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        self._ssl: Any = None
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _reader, writer in idle:
            writer.close()

    async def send(
        self,
        method: str,
        headers: list[tuple[str, str]],
        body: bytes | None,
        read_timeout: float | None,
    ) -> UpstreamResponse:
        """Send one request; its answer once its head has arrived (the body is read
        through ``UpstreamResponse.aiter_raw``). ``read_timeout``: the longest wait
        for any read (None: none, for the server's own GET stream)."""
        head = self._head(method, headers, body)
        reader, writer = await self._connection()
        try:
            writer.write(head + body if body else head)
            if writer.transport.get_write_buffer_size():
                try:
                    await _within(self.timeout, writer.drain())
                except (TimeoutError, asyncio.TimeoutError):
                    raise httpx2.WriteTimeout("timed out while sending") from None
            response = UpstreamResponse(self, reader, writer, method, read_timeout)
            await response.read_head()
        except BaseException:
            writer.close()
            raise
        return response

    def _head(self, method: str, headers: list[tuple[str, str]], body: bytes | None) -> bytes:
        lines = [f"{method} {self.target} HTTP/1.1", f"host: {self.host_header}"]
        for name, value in headers:
            if self.auth is not None and name.lower() == "authorization":
                continue  # the URL's user info is the authorization, as httpx2 did
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise httpx2.LocalProtocolError("a header holds a line break")
            lines.append(f"{name}: {value}")
        if self.auth is not None:
            lines.append(f"authorization: {self.auth}")
        if body is not None:
            lines.append(f"content-length: {len(body)}")
        lines.append("\r\n")
        return "\r\n".join(lines).encode("latin-1", "replace")

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """An idle connection still open, else a new one."""
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()  # the server ended it while it was idle
        if self.tls and self._ssl is None:
            self._ssl = httpx2.create_ssl_context(trust_env=False)
        try:
            return await _within(  # type: ignore[no-any-return]
                self.timeout,
                asyncio.open_connection(
                    self.host, self.port, ssl=self._ssl if self.tls else None, limit=CHUNK
                ),
            )
        except (TimeoutError, asyncio.TimeoutError):
            raise httpx2.ConnectTimeout("timed out while connecting") from None
        except OSError as exc:  # refused, unreachable, a TLS failure (ssl.SSLError)
            raise httpx2.ConnectError(type(exc).__name__) from None

    def _release(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection whose answer was read whole: kept for the next request."""
        if len(self._idle) < MAX_IDLE and not writer.is_closing():
            self._idle.append((reader, writer))
        else:
            writer.close()


class UpstreamResponse:
    """One answer: ``status_code``, ``headers`` (lower-case names, repeated ones joined
    with ", " as ``httpx2`` joined them), ``header(name)``, the body as it arrives
    (``aiter_raw``), and ``aclose`` (the connection kept if the body was read whole
    and the server keeps it open, else closed)."""

    def __init__(
        self,
        upstream: Upstream,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        method: str,
        read_timeout: float | None,
    ) -> None:
        self._upstream = upstream
        self._reader = reader
        self._writer: asyncio.StreamWriter | None = writer
        self._method = method
        self._read_timeout = read_timeout
        self.status_code = 0
        self.headers: dict[str, str] = {}
        self._length: int | None = None  # bytes of body left (Content-Length)
        self._chunked = False
        self._reusable = False
        self._done = False  # the body was read whole

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)

    @property
    def length(self) -> int | None:
        """The body's size when the server said it (``Content-Length``), else None."""
        return self._length

    async def _read(self, work: Any) -> Any:
        try:
            if self._read_timeout is None:
                return await work
            return await _within(self._read_timeout, work)
        except (TimeoutError, asyncio.TimeoutError):
            raise httpx2.ReadTimeout("no data within the read timeout") from None
        except asyncio.LimitOverrunError:
            raise httpx2.RemoteProtocolError("a line of the answer is too long") from None
        except asyncio.IncompleteReadError:
            raise httpx2.RemoteProtocolError("the server closed the connection early") from None
        except OSError:
            raise httpx2.ReadError("the connection broke off") from None

    async def read_head(self) -> None:
        """The status line and headers (informational 1xx answers skipped)."""
        while True:
            head = await self._read(self._reader.readuntil(b"\r\n\r\n"))
            lines = head[:-4].decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise httpx2.RemoteProtocolError("the answer is not HTTP/1.1")
            self.status_code = int(code)
            if self.status_code >= 200 or self.status_code == 101:
                break
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise httpx2.RemoteProtocolError("a header line has no colon")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers
        connection = headers.get("connection", "").lower()
        self._reusable = version == "HTTP/1.1" and "close" not in connection
        if self._method == "HEAD" or self.status_code in _NO_BODY or self.status_code < 200:
            self._length = 0
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif "content-length" in headers:
            declared = headers["content-length"].split(",")[0].strip()
            if not declared.isdigit():
                raise httpx2.RemoteProtocolError("the Content-Length is not a number")
            self._length = int(declared)
        else:
            self._reusable = False  # the body ends with the connection
        if self._length == 0:
            self._done = True

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (the chunked coding taken off)."""
        if self._done:
            return
        if self._chunked:
            async for chunk in self._chunks():
                yield chunk
        elif self._length is not None:
            left = self._length
            while left:
                data = await self._read(self._reader.read(min(left, CHUNK)))
                if not data:
                    raise httpx2.RemoteProtocolError("the server closed the connection early")
                left -= len(data)
                yield data
        else:
            while data := await self._read(self._reader.read(CHUNK)):
                yield data
        self._done = True

    async def _chunks(self) -> AsyncIterator[bytes]:
        reader = self._reader
        while True:
            line = await self._read(reader.readuntil(b"\r\n"))
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpx2.RemoteProtocolError("a chunk size is not a number") from None
            if size == 0:
                while await self._read(reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailer fields, not passed on
                return
            while size:
                data = await self._read(reader.read(min(size, CHUNK)))
                if not data:
                    raise httpx2.RemoteProtocolError("the server closed the connection early")
                size -= len(data)
                yield data
            if await self._read(reader.readexactly(2)) != b"\r\n":
                raise httpx2.RemoteProtocolError("a chunk does not end with a line break")

    async def aread(self) -> bytes:
        """The whole body (for an answer whose ``length`` is known and small)."""
        return b"".join([chunk async for chunk in self.aiter_raw()])

    async def aclose(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        if self._done and self._reusable:
            self._upstream._release(self._reader, writer)
        else:
            writer.close()
