"""The gateway as an ASGI application: Streamable HTTP in, the same upstream out.

Starlette serves the endpoint; ``upstream.Upstream`` (a lean HTTP/1.1 client with
keep-alive connections) speaks to the upstream server. A POST's body is read (at
most ``max_body`` bytes, else 413) and decided by ``GatewayBrake``; forwarded, it
goes upstream with its bytes unchanged, and the upstream's answer (a JSON body, an
SSE stream, 202) comes back streamed chunk by chunk, never held whole, except an
answer whose ``Content-Length`` the upstream gave, up to ``WATCH_BYTES``: read
whole, then answered in one piece with its length (the same bytes). The response
to a call a policy's ``warn_at`` warns is read whole too when it is JSON, or its
SSE stream line by line, so the warning can be added to that call's result
(``_warned``); everything else in it passes as it came. GET (the server's own stream) and
DELETE (the end of a session) pass through the same way.

Headers are passed by allow-list. To the upstream: the MCP transport's own
(``Accept``, ``Content-Type``, ``Mcp-Session-Id``, ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``, ``Last-Event-ID``), the client's
``Authorization`` only with ``forward_auth``, then the gateway's own ``--header``
values. Back to the client: ``Content-Type``, ``Mcp-Session-Id``, and with
``forward_auth`` ``WWW-Authenticate``. Nothing else crosses (no cookies, no
``Host``, no ``Loop-Brake-Session``).

On a loopback address the gateway only answers requests whose ``Host`` is a
loopback name and whose ``Origin``, if any, is a loopback origin, so a web page
cannot reach it through DNS rebinding. Every failure is an HTTP status with a
JSON-RPC error body naming the upstream without user info or query; nothing is
ever raised to the ASGI server (which would print a traceback).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse

from ..core.canonical import JSONInputError, parse_json
from ..mcp_shared.answers import INVALID_REQUEST, append_warning, request_error
from ..mcp_shared.headers import safe_url
from ..mcp_shared.spans import member_span
from ..mcp_shared.transport import transport_problem
from ..readers.wire.mcp import INPUT_REQUIRED
from .decide import Forward, GatewayBrake, Wait
from .limits import GatewayLimits, trim_memory
from .upstream import Upstream, UpstreamResponse

__all__ = ["DEFAULT_MAX_BODY", "Gateway", "GatewayConfig"]

DEFAULT_MAX_BODY = 4 << 20  # bytes of one POSTed message
UPSTREAM_FAILED = -32000  # the MCP SDK's CONNECTION_CLOSED: no answer can come
WATCH_BYTES = 1 << 20  # of an answer kept to see whether it asks for input (else: counted)
OPEN_WAIT = 1.0  # seconds a request waits for an open exchange with its id to end
HOUSEKEEPING = 1.0  # seconds between two ``Gateway.tidy``
TRIM_AFTER_BYTES = 32 << 20  # of request bodies read, then memory is given back when idle
TRIM_AFTER_SESSIONS = 1000  # sessions expired at once, then memory is given back
_KEY_HEADERS = ("authorization", "loop-brake-session", "mcp-session-id")
PROG = "loop-brake mcp-gateway"

_TO_UPSTREAM = frozenset(
    {
        "accept",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    }
)
_TO_CLIENT = frozenset({"content-type", "mcp-session-id", "cache-control"})
_LOOPBACK_HOST = re.compile(r"(127\.0\.0\.1|localhost|\[::1\])(:\d+)?", re.IGNORECASE)
_LOOPBACK_ORIGIN = re.compile(r"https?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?", re.IGNORECASE)


class GatewayConfig:
    """What the command line decided for the HTTP side."""

    def __init__(
        self,
        upstream: str,
        headers: list[tuple[str, str]],
        *,
        timeout: float,
        read_timeout: float,
        max_body: int = DEFAULT_MAX_BODY,
        forward_auth: bool = False,
        loopback: bool = True,
        limits: GatewayLimits | None = None,
    ) -> None:
        self.upstream = upstream
        self.headers = headers
        self.timeout = timeout
        self.read_timeout = read_timeout
        self.max_body = max_body
        self.forward_auth = forward_auth
        self.loopback = loopback
        self.limits = limits or GatewayLimits()

    def __repr__(self) -> str:  # never the header values
        return f"GatewayConfig(upstream={safe_url(self.upstream)!r})"


def _json(status: int, body: bytes) -> Response:
    return Response(body, status_code=status, media_type="application/json")


class Gateway:
    """The ASGI application: one upstream, one brake, many clients."""

    def __init__(
        self, config: GatewayConfig, brake: GatewayBrake, note: Callable[[str], None]
    ) -> None:
        self.config = config
        self.brake = brake
        self.note = note
        self.where = safe_url(config.upstream)
        self.client = Upstream(config.upstream, config.timeout, config.read_timeout)
        self.last_problem: str | None = None
        self.counters = brake.counters
        self._reading = 0  # POST bodies being read now
        self._read_bytes = 0  # bytes of bodies read since memory was last given back
        self._housekeeper: asyncio.Task[None] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            response = await self._handle(Request(scope, receive))
        except ClientDisconnect:
            return
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            self.note(f"internal error while handling a request ({type(exc).__name__})")
            response = _json(500, request_error(b"null", -32603, f"{PROG} failed"))
        await response(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._housekeeper = asyncio.get_running_loop().create_task(self._housekeeping())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._housekeeper is not None:
                    self._housekeeper.cancel()
                await self.brake.drain()
                await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _housekeeping(self) -> None:
        """Every ``HOUSEKEEPING`` seconds: ``tidy``."""
        while True:
            await asyncio.sleep(HOUSEKEEPING)
            self.tidy()

    def tidy(self) -> None:
        """Forget idle sessions; once a flood of bodies (or of sessions) has gone, give
        the freed memory back to the system (``limits.trim_memory``)."""
        expired = self.brake.expire()
        flood_over = self._read_bytes >= TRIM_AFTER_BYTES and self._reading == 0
        if flood_over or expired >= TRIM_AFTER_SESSIONS:
            self._read_bytes = 0
            trim_memory()

    def _allowed(self, request: Request) -> bool:
        if not self.config.loopback:
            return True
        host = request.headers.get("host", "")
        origin = request.headers.get("origin")
        if not _LOOPBACK_HOST.fullmatch(host):
            return False
        return origin is None or bool(_LOOPBACK_ORIGIN.fullmatch(origin))

    async def _handle(self, request: Request) -> Response:
        if not self._allowed(request):
            text = f"{PROG}: Host or Origin is not a loopback name"
            return _json(403, request_error(b"null", INVALID_REQUEST, text))
        method = request.method
        if method == "POST":
            return await self._post(request)
        if method in ("GET", "DELETE"):
            return await self._forward(request, None)
        return Response(status_code=405, headers={"allow": "GET, POST, DELETE"})

    async def _read_body(self, request: Request) -> bytes | None:
        limit = self.config.max_body
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        self._reading += 1
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
        finally:
            self._reading -= 1
            self._read_bytes += size
        return b"".join(chunks)

    async def _post(self, request: Request) -> Response:
        refused = _unreadable(request)
        if refused is not None:
            status, text = refused
            return _json(status, request_error(b"null", INVALID_REQUEST, f"{PROG}: {text}"))
        body = await self._read_body(request)
        if body is None:
            self.counters.bodies_too_large += 1
            limit = self.config.max_body
            text = f"{PROG}: the request body is larger than {limit} bytes"
            return _json(413, request_error(b"null", INVALID_REQUEST, text))
        headers = {name.lower(): value for name, value in request.headers.items()}
        client = request.client
        peer = f"{client.host}:{client.port}" if client is not None else None
        decision = await self.brake.decide_async(body, headers, peer)
        if isinstance(decision, Wait):  # its id is open in another exchange ending now
            try:
                await asyncio.wait_for(decision.ended.wait(), OPEN_WAIT)
            except TimeoutError:
                pass  # still open: the brake says duplicate
            decision = await self.brake.decide_async(body, headers, peer, wait=False)
        if not isinstance(decision, Forward):
            status, data = decision
            return _json(status, data)
        return await self._forward(request, body, decision)

    def _upstream_headers(self, request: Request) -> list[tuple[str, str]]:
        out = []
        for name, value in request.headers.items():
            lower = name.lower()
            if lower in _TO_UPSTREAM or lower.startswith("mcp-param-"):
                out.append((lower, value))
            elif lower == "authorization" and self.config.forward_auth:
                out.append((lower, value))
        given = {name.lower() for name, _ in self.config.headers}
        out = [(name, value) for name, value in out if name not in given]
        out.extend(self.config.headers)
        out.append(("accept-encoding", "identity"))  # the body is copied as it comes
        return out

    async def _forward(
        self, request: Request, body: bytes | None, forward: Forward | None = None
    ) -> Response:
        read_timeout = None if body is None else self.config.read_timeout
        try:
            response = await self.client.send(
                request.method, self._upstream_headers(request), body, read_timeout
            )
        except httpx2.HTTPError as exc:
            if forward is not None and forward.watched:
                self.brake.answered(forward)  # the exchange is over: its id is free
            problem = f"{self.where}: {transport_problem(exc, self.config.read_timeout)}"
            if problem != self.last_problem:
                self.note(problem)
            self.last_problem = problem
            text = f"{PROG}: upstream {problem}"
            id_bytes = _request_id(body) if body is not None else None
            return _json(502, request_error(id_bytes or b"null", UPSTREAM_FAILED, text))
        self.last_problem = None
        headers = {
            name: value
            for name, value in response.headers.items()
            if name in _TO_CLIENT or (self.config.forward_auth and name == "www-authenticate")
        }
        copy = self._copy(response)
        if forward is not None and forward.watched:
            copy = self._watched(copy, response.header("content-type"), forward)
        length = response.length
        if body is not None and length is not None and length <= WATCH_BYTES:
            # a body of known, bounded size (a JSON answer): read whole and answered in
            # one piece, with its length, rather than streamed (same bytes, less work)
            whole = b"".join([chunk async for chunk in copy])
            return Response(whole, status_code=response.status_code, headers=headers)
        return StreamingResponse(
            copy,
            status_code=response.status_code,
            headers=headers,
            background=BackgroundTask(response.aclose),
        )

    async def _watched(
        self, chunks: AsyncIterator[bytes], content_type: str, forward: Forward
    ) -> AsyncIterator[bytes]:
        """The upstream's answer to a forwarded tools/call, passed on (with its warning
        added, ``_warned``); when the exchange ends, however it ends, the brake hears
        of it, and of whether the answer asked for input."""
        reply = _Reply(forward.request_id, forward.warning)
        reply.on_asked = lambda state: self.brake.asked(forward, state)
        if self.brake.reads_results(forward):  # a policy's progress mode or [same_error]
            reply.on_result = lambda result: self.brake.result(forward, result)
        try:
            if forward.warning is not None:
                async for chunk in _warned(chunks, content_type, reply):
                    yield chunk
            else:
                async for chunk in _watching(chunks, content_type, reply):
                    yield chunk
        finally:
            self.brake.answered(forward)

    async def _copy(self, response: UpstreamResponse) -> AsyncIterator[bytes]:
        """The upstream's body as it arrives; a broken stream just ends (the client's
        SDK resolves the request), with one note."""
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx2.HTTPError as exc:
            self.note(f"{self.where}: {transport_problem(exc, self.config.read_timeout)}")
        finally:
            await response.aclose()


_UNSEEN: Any = object()  # no result read yet


class _Reply:
    """What the gateway looks for in the upstream's answer to one call: the JSON-RPC
    response to ``request_id``; it adds ``warning`` to it (if any) and notes whether
    it asked for input (``asked``, ``state``: the 2026-07-28 ``input_required``)."""

    __slots__ = ("request_id", "warning", "asked", "state", "on_asked", "on_result", "result")

    def __init__(self, request_id: Any, warning: str | None) -> None:
        self.request_id = request_id
        self.warning = warning
        self.asked = False
        self.state: Any = None
        self.on_asked: Callable[[Any], None] | None = None  # told at once (``asked``)
        self.on_result: Callable[[Any], Awaitable[None]] | None = None  # ``settle``
        self.result: Any = _UNSEEN  # the call's result, once seen, until told

    @property
    def wants_result(self) -> bool:
        """Whether the call's result is still to be read (for the brake)."""
        return self.on_result is not None and self.result is _UNSEEN

    async def settle(self) -> None:
        """The call's result, once seen, told to the brake (``on_result``), before the
        bytes that carry it reach the client: its next call finds the result counted."""
        if self.on_result is not None and self.result is not _UNSEEN:
            on_result, self.on_result = self.on_result, None
            await on_result(self.result)

    def message(self, data: bytes) -> bytes | None:
        """``data`` with the warning added when it is the response to the call (the
        warning is then spent), else None; either way, notes an ``input_required``."""
        try:
            value = parse_json(data)
        except JSONInputError:
            return None
        if not isinstance(value, dict) or "method" in value or "id" not in value:
            return None
        got = value["id"]
        if type(got) is not type(self.request_id) or got != self.request_id:
            return None
        result = value.get("result")
        if self.wants_result:  # as wire.mcp reads an answer: a JSON-RPC error is a result too
            self.result = result if "result" in value else {"error": value.get("error")}
        if isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED:
            self.asked, self.state = True, result.get("requestState")
            if self.on_asked is not None:
                self.on_asked(self.state)
        if self.warning is None:
            return None
        changed = append_warning(data, self.warning)
        self.warning = None
        return None if changed is data else changed


async def _watching(
    chunks: AsyncIterator[bytes], content_type: str, reply: _Reply
) -> AsyncIterator[bytes]:
    """Every chunk as it came, read aside (before it is passed on, so a retry the
    client sends at once finds the call awaiting it) for an ``input_required``: a
    JSON body (up to ``WATCH_BYTES``), or each SSE ``data:`` line that names it
    (lines longer than that are not read: such a call's retry is then counted)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind not in ("application/json", "text/event-stream"):
        async for chunk in chunks:
            yield chunk
        return
    marker = INPUT_REQUIRED.encode()
    seen = bytearray()
    overflow = False
    async for chunk in chunks:
        if kind == "application/json":
            if not overflow:
                seen += chunk
                overflow = len(seen) > WATCH_BYTES
                if not overflow and marker in seen and not reply.asked:
                    reply.message(bytes(seen))  # once the body is whole, it parses
                elif not overflow and reply.wants_result and seen.rstrip().endswith(b"}"):
                    reply.message(bytes(seen))  # the result, once the body is whole
            await reply.settle()
            yield chunk
            continue
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not overflow:
                    seen += chunk[start:]
                    overflow = len(seen) > WATCH_BYTES
                break
            if not overflow:
                seen += chunk[start:end]
                _sse_line(bytes(seen), reply)
            seen.clear()
            overflow = False
            start = end + 1
        await reply.settle()
        yield chunk


def _sse_line(line: bytes, reply: _Reply) -> None:
    """One SSE line of the answer: a ``data:`` line that may ask for input is read."""
    if line.startswith(b"data:") and (reply.wants_result or INPUT_REQUIRED.encode() in line):
        data = line[5:].rstrip(b"\r").removeprefix(b" ")
        reply.message(data)


async def _warned(
    chunks: AsyncIterator[bytes], content_type: str, reply: _Reply
) -> AsyncIterator[bytes]:
    """The upstream's answer to a warned call with the warning added to its result: a
    JSON body whole, an SSE stream line by line (the ``data:`` line of the response
    with the call's id); any other answer, and every other line, as it came."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        body = b"".join([chunk async for chunk in chunks])
        changed = reply.message(body)
        await reply.settle()
        yield changed or body
        return
    if kind != "text/event-stream":
        async for chunk in chunks:
            yield chunk
        return
    pending = b""
    async for chunk in chunks:
        if reply.warning is None:  # told: the rest passes as it comes
            yield chunk
            continue
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if not cut:
            continue
        lines, pending = pending[:cut].split(b"\n")[:-1], pending[cut:]
        for index, line in enumerate(lines):
            if reply.warning is not None and line.startswith(b"data:"):
                end = b"\r" if line.endswith(b"\r") else b""
                data = line[5 : len(line) - len(end)].removeprefix(b" ")
                changed = reply.message(data)
                if changed is not None:
                    lines[index] = b"data: " + changed + end
        await reply.settle()
        yield b"\n".join(lines) + b"\n"
        if reply.warning is None and pending:  # the rest of the line after the warned response
            yield pending
            pending = b""
    if pending:
        yield pending


def _unreadable(request: Request) -> tuple[int, str] | None:
    """Why a POST's body cannot be judged as the upstream would read it, or None: a
    content encoding (the upstream might inflate what the brake cannot read), a
    charset other than UTF-8, or a header that names the session given twice."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return 415, "a Content-Encoding is not accepted (send the body as is)"
    content_type = request.headers.get("content-type", "")
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            return 415, "only a UTF-8 body is accepted (Content-Type charset)"
    for name in _KEY_HEADERS:
        if len(request.headers.getlist(name)) > 1:
            return 400, f"the {name} header is given more than once"
    return None


def _request_id(body: bytes) -> bytes | None:
    """A request's id as the client wrote it, for an error answered on its behalf."""
    try:
        value = parse_json(body)
    except JSONInputError:
        return None
    if not isinstance(value, dict) or "id" not in value or "method" not in value:
        return None
    span = member_span(body, "id")
    return body[span[0] : span[1]] if span else None
