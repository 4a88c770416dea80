"""The remote side of ``mcp-proxy --url``: one client message in, the server's messages out.

The MCP Streamable HTTP transport
(https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http):
each client message is POSTed to the endpoint; the server answers a
notification or a response with 202, and a request with a JSON body or an SSE
stream carrying notifications, requests of its own (progress, sampling,
elicitation) and finally the response. A session id the server issues on
``initialize`` is sent back on every later request, and a GET stream then
carries what the server sends outside any request. A 2026-07-28 (modern)
client instead puts its protocol version in each request's ``params._meta``;
the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers must echo
it, and a cancellation is the closing of the request's stream, never a POST.

HTTP and SSE are spoken by ``httpx2`` (the MCP SDK's HTTP client); the header
names and their encoding come from the SDK. Each server message is handed on
as one stdio line as soon as it is complete: a JSON body is streamed through in
chunks (a raw line break inside JSON can only be whitespace, so it becomes a
space), an SSE event is held until its end (``MAX_EVENT_BYTES``).

Every failure becomes a JSON-RPC error for the request it concerns, with text
that names the server's address without user info or query (``safe_url``),
never a header value, and never a traceback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..core.canonical import JSONInputError, parse_json
from ..mcp_shared.answers import error_line
from ..mcp_shared.headers import safe_url
from ..mcp_shared.transport import transport_problem
from ..readers.output import json_line

__all__ = ["MAX_EVENT_BYTES", "RemoteServer", "UNREACHABLE"]

MAX_EVENT_BYTES = 64 << 20  # one SSE event (one server message): larger is an error
UNREACHABLE = -32000  # the MCP SDK's CONNECTION_CLOSED: no answer can come
HTTP_FAILED = -32603  # INTERNAL_ERROR: the server answered with an HTTP error
SESSION_HEADER = "mcp-session-id"
MAX_ERROR_BYTES = 1 << 20  # an error body read to hand its JSON-RPC error on
GET_RETRY_DELAY = 1.0  # seconds before the GET stream is opened again


def _flatten(chunk: bytes) -> bytes:
    """A piece of one JSON text made safe for a stdio line: raw CR and LF outside
    strings are whitespace (inside strings JSON forbids them), so they become spaces."""
    return chunk.replace(b"\r", b" ").replace(b"\n", b" ")


class RemoteServer:
    """One remote MCP endpoint and the transport state of the bridge's connection to it.

    ``send`` may be called from several threads at once (one per request in flight)."""

    def __init__(
        self,
        url: str,
        headers: list[tuple[str, str]],
        timeout: float,
        read_timeout: float,
    ) -> None:
        self.url = url
        self.where = safe_url(url)
        self.read_timeout = read_timeout
        self.client = httpx2.Client(
            headers=headers,
            timeout=httpx2.Timeout(timeout, read=read_timeout),
            follow_redirects=False,
            trust_env=False,
        )
        self.session_id: str | None = None
        self.protocol_version: str | None = None  # negotiated by initialize (before 2026)
        self.modern = False  # the client speaks 2026-07-28 (per-request envelope)
        self._lock = threading.Lock()
        self._in_flight: dict[Any, Any] = {}  # request id key -> open response
        self.closed = threading.Event()

    # -- headers ---------------------------------------------------------------
    def _headers(self, message: Any) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream"}
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        params = message.get("params") if isinstance(message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        if isinstance(version, str):
            self.modern = version in MODERN_PROTOCOL_VERSIONS
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
            method = message.get("method")
            if isinstance(method, str):
                headers[MCP_METHOD_HEADER] = method
                key = NAME_BEARING_METHODS.get(method)
                name = params.get(key) if key is not None else None  # type: ignore[union-attr]
                if isinstance(name, str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
        elif self.protocol_version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = self.protocol_version
        return headers

    # -- one message -----------------------------------------------------------
    def send(
        self,
        body: bytes,
        message: Any,
        id_bytes: bytes | None,
        deliver: Callable[[bytes], None],
    ) -> str | None:
        """POST one client message; ``deliver`` gets each server message as a line.

        ``id_bytes`` is a request's id as the client wrote it (None for a
        notification or response): its failure is delivered as a JSON-RPC error.
        Returns what went wrong, for a note, or None."""
        key = _key_of(message) if id_bytes is not None else None
        try:
            with self.client.stream(
                "POST",
                self.url,
                content=body,
                headers={**self._headers(message), "content-type": "application/json"},
            ) as response:
                if key is not None:
                    with self._lock:
                        self._in_flight[key] = response
                try:
                    return self._answer(response, message, id_bytes, deliver)
                finally:
                    if key is not None:
                        with self._lock:
                            if self._in_flight.get(key) is response:
                                del self._in_flight[key]
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            if self.closed.is_set():
                return None  # we closed it: the client has gone
            problem = f"{self.where}: {transport_problem(exc, self.read_timeout)}"
            if id_bytes is not None:
                deliver(error_line(id_bytes, UNREACHABLE, f"loop-brake mcp-proxy: {problem}"))
            return problem

    def _answer(
        self, response: Any, message: Any, id_bytes: bytes | None, deliver: Callable[[bytes], None]
    ) -> str | None:
        status = response.status_code
        if status >= 300:
            return self._http_error(response, message, id_bytes, deliver)
        if isinstance(message, dict) and message.get("method") == "initialize":
            self.session_id = response.headers.get(SESSION_HEADER) or self.session_id
            deliver = self._reading_version(deliver)
        if status == 202 or id_bytes is None:
            return None
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type == "application/json":
            deliver(b"".join(self._json_body(response)) + b"\n")
        elif content_type == "text/event-stream":
            for event in httpx2.EventSource(response, max_event_size=MAX_EVENT_BYTES):
                if event.event == "message" and event.data:
                    deliver(_flatten(event.data.encode("utf-8")) + b"\n")
        else:
            text = f"loop-brake mcp-proxy: {self.where} answered with content type {content_type!r}"
            deliver(error_line(id_bytes, HTTP_FAILED, text))
            return text
        return None

    def _json_body(self, response: Any) -> Iterator[bytes]:
        for chunk in response.iter_bytes():
            yield _flatten(chunk)

    def _reading_version(self, deliver: Callable[[bytes], None]) -> Callable[[bytes], None]:
        """``deliver`` that also keeps the protocol version an initialize result names."""

        def reading(line: bytes) -> None:
            try:
                value = parse_json(line.rstrip(b"\n"))
            except JSONInputError:
                value = None
            result = value.get("result") if isinstance(value, dict) else None
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(version, str):
                self.protocol_version = version
            deliver(line)

        return reading

    def _http_error(
        self, response: Any, message: Any, id_bytes: bytes | None, deliver: Callable[[bytes], None]
    ) -> str:
        status = response.status_code
        if status == 404 and self.session_id is not None:
            self.session_id = None
            text = f"{self.where} ended the session (HTTP 404); reconnect the client"
        else:
            text = f"{self.where} answered HTTP {status}"
        if id_bytes is None:
            return text
        error: Any = None
        if response.headers.get("content-type", "").startswith("application/json"):
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_ERROR_BYTES:
                    body = b""
                    break
            try:
                value = parse_json(body)
            except JSONInputError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("error"), dict):
                error = value["error"]
        if error is not None:  # the server's own JSON-RPC error: handed on with our id
            line = json_line({"jsonrpc": "2.0", "id": None, "error": error})
            deliver(line.replace(b'"id":null', b'"id":' + id_bytes, 1))
        else:
            deliver(error_line(id_bytes, HTTP_FAILED, f"loop-brake mcp-proxy: {text}"))
        return text

    # -- cancellation, the GET stream, the end -----------------------------------
    def cancel(self, message: Any) -> bool:
        """A client's ``notifications/cancelled``: True when it is spoken by closing the
        request's stream (2026-07-28) rather than sent on."""
        params = message.get("params") if isinstance(message, dict) else None
        if not isinstance(params, dict) or "requestId" not in params:
            return False
        with self._lock:
            response = self._in_flight.get(_id_key(params["requestId"]))
        if response is not None and self.modern:
            response.close()
        return self.modern

    def listen(self, deliver: Callable[[bytes], None]) -> None:
        """The GET stream of a session (what the server sends outside any request),
        opened again after it ends, until the server refuses it or we close."""
        while not self.closed.is_set() and self.session_id is not None:
            try:
                with self.client.stream(
                    "GET",
                    self.url,
                    headers=self._headers(None),
                    timeout=httpx2.Timeout(10, read=None),
                ) as response:
                    if response.status_code != 200:
                        return  # 405: the server offers no such stream
                    for event in httpx2.EventSource(response, max_event_size=MAX_EVENT_BYTES):
                        if event.event == "message" and event.data:
                            deliver(_flatten(event.data.encode("utf-8")) + b"\n")
            except (httpx2.HTTPError, httpx2.StreamError):
                pass
            self.closed.wait(GET_RETRY_DELAY)

    def close(self) -> None:
        """End the session (DELETE, as the SDK's client does) and every open stream."""
        self.closed.set()
        session = self.session_id
        with self._lock:
            responses = list(self._in_flight.values())
        for response in responses:
            response.close()
        if session is not None:
            try:
                self.client.request(
                    "DELETE", self.url, headers=self._headers(None), timeout=2.0
                ).close()
            except httpx2.HTTPError:
                pass
        self.client.close()


def _id_key(request_id: Any) -> Any:
    return request_id.__class__, request_id if not isinstance(request_id, dict | list) else None


def _key_of(message: Any) -> Any:
    return _id_key(message.get("id")) if isinstance(message, dict) else None
