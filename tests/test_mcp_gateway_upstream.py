"""The gateway's own HTTP/1.1 client to its upstream (``mcp_gateway/upstream.py``).

Each test runs a real asyncio server on a free loopback port that answers with the
exact bytes the test wrote (framings an MCP server may use: ``Content-Length``, the
chunked coding with extensions and trailers, a body ended by the connection's end,
an informational 1xx first) and records what it received: the body the client gets
is the bytes sent, a connection is reused only when its answer was read whole and
the server keeps it, one the server closed while idle is never used, the URL's user
info is sent as Basic authorization, and each failure is the ``httpx2`` class that
``transport_problem`` words (refused, a body cut short, no data within the read
timeout). The gateway's behaviour through it is ``tests/test_mcp_gateway*.py``'s.

A connection is counted as the peer it comes from, never as its ``X-Forwarded-For``
header says. On the clients' side, the gateway joins the writes of one loop turn into one send
(``limits.Corked``): an answer written just before its connection closes (a client
that sent ``Connection: close``) still arrives whole.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Callable
from typing import Any

import pytest

httpx2 = pytest.importorskip("httpx2", reason="the mcp extra: pip install -e '.[test]'")

from loop_brake_cli.mcp_gateway.upstream import Upstream  # noqa: E402
from loop_brake_cli.mcp_shared.transport import transport_problem  # noqa: E402

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
PLAIN = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"


class Server:
    """A loopback server: ``answer(request_head, body)`` gives the bytes to send back
    (and whether to close the connection after them)."""

    def __init__(self, answer: Callable[[bytes, bytes], tuple[bytes, bool]]) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []
        self.server: Any = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                data, close = self.answer(head, body)
                writer.write(data)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def close(self) -> None:
        self.server.close()
        for writer in self.writers:
            writer.close()


def run(test: Callable[[], Any]) -> Any:
    return asyncio.run(test())


async def fetch(upstream: Upstream, body: bytes | None = b"{}") -> tuple[int, dict, bytes]:
    response = await upstream.send("POST" if body is not None else "GET", [], body, 5.0)
    try:
        data = b"".join([chunk async for chunk in response.aiter_raw()])
    finally:
        await response.aclose()
    return response.status_code, response.headers, data


def test_a_content_length_body_comes_whole_and_the_connection_is_kept() -> None:
    async def test() -> None:
        server = Server(lambda head, body: (PLAIN % (len(BODY), BODY), False))
        upstream = Upstream(await server.start(), 5.0, 5.0)
        for _ in range(3):
            status, headers, data = await fetch(upstream)
            assert (status, headers["content-type"], data) == (200, "application/json", BODY)
        assert server.connections == 1 and len(server.requests) == 3
        head, body = server.requests[0]
        assert head.startswith(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:")
        assert b"\r\ncontent-length: 2\r\n" in head and body == b"{}"
        await upstream.aclose()
        await server.close()

    run(test)


def test_a_chunked_body_with_extensions_and_trailers_is_passed_as_its_bytes() -> None:
    stream = b"event: message\r\ndata: " + BODY + b"\r\n\r\n"
    answer = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
        b"\r\n" + b"%x;name=value\r\n%s\r\n" % (10, stream[:10])
    )
    answer += b"%x\r\n%s\r\n0\r\nx-trailer: 1\r\n\r\n" % (len(stream) - 10, stream[10:])

    async def test() -> None:
        server = Server(lambda head, body: (answer, False))
        upstream = Upstream(await server.start(), 5.0, 5.0)
        for _ in range(2):
            status, headers, data = await fetch(upstream)
            assert (status, data) == (200, stream)
            assert headers["content-type"] == "text/event-stream"
        assert server.connections == 1  # read whole: kept
        await upstream.aclose()
        await server.close()

    run(test)


def test_a_body_that_ends_with_the_connection_closes_it() -> None:
    answer = b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\n\r\n" + BODY

    async def test() -> None:
        server = Server(lambda head, body: (answer, True))
        upstream = Upstream(await server.start(), 5.0, 5.0)
        assert await fetch(upstream) == (202, {"content-type": "application/json"}, BODY)
        assert await fetch(upstream) == (202, {"content-type": "application/json"}, BODY)
        assert server.connections == 2
        await upstream.aclose()
        await server.close()

    run(test)


def test_a_connection_the_server_closed_while_idle_is_not_used() -> None:
    async def test() -> None:
        server = Server(lambda head, body: (PLAIN % (len(BODY), BODY), False))
        upstream = Upstream(await server.start(), 5.0, 5.0)
        assert (await fetch(upstream))[2] == BODY
        idle_reader = upstream._idle[0][0]
        for writer in server.writers:  # the server's keep-alive time is up
            writer.close()
        while not idle_reader.at_eof():  # the end has reached the client
            await asyncio.sleep(0.01)
        assert (await fetch(upstream))[2] == BODY
        assert server.connections == 2 and len(server.requests) == 2
        await upstream.aclose()
        await server.close()

    run(test)


def test_an_answer_not_read_whole_closes_its_connection() -> None:
    big = b"x" * 200_000

    async def test() -> None:
        server = Server(lambda head, body: (PLAIN % (len(big), big), False))
        upstream = Upstream(await server.start(), 5.0, 5.0)
        response = await upstream.send("POST", [], b"{}", 5.0)
        assert response.length == len(big)
        async for _chunk in response.aiter_raw():
            break  # the client left mid-answer
        await response.aclose()
        assert upstream._idle == []
        assert (await fetch(upstream))[2] == big
        assert server.connections == 2
        await upstream.aclose()
        await server.close()

    run(test)


def test_the_urls_user_info_is_the_authorization_and_headers_pass_in_order() -> None:
    async def test() -> None:
        server = Server(lambda head, body: (PLAIN % (len(BODY), BODY), False))
        url = await server.start()
        upstream = Upstream(url.replace("http://", "http://us%40er:p%3Ass@") + "?k=v", 5.0, 5.0)
        headers = [("accept", "application/json"), ("Authorization", "Bearer client")]
        response = await upstream.send("POST", headers, b"{}", 5.0)
        await response.aread()
        await response.aclose()
        head = server.requests[0][0].decode()
        token = base64.b64encode(b"us@er:p:ss").decode()
        assert head.startswith("POST /mcp?k=v HTTP/1.1\r\n")
        assert f"\r\naccept: application/json\r\nauthorization: Basic {token}\r\n" in head
        assert "Bearer" not in head
        with pytest.raises(httpx2.LocalProtocolError):
            await upstream.send("POST", [("x-bad", "a\r\nx-injected: 1")], b"{}", 5.0)
        await upstream.aclose()
        await server.close()

    run(test)


def test_failures_are_the_classes_transport_problem_words() -> None:
    async def test() -> None:
        held: list[Any] = []
        short = Server(lambda head, body: (PLAIN % (len(BODY) + 5, BODY), True))
        silent = Server(lambda head, body: (b"", False))
        cut_url, silent_url = await short.start(), await silent.start()
        await silent.close()  # its port now refuses
        with pytest.raises(httpx2.ConnectError) as refused:
            await Upstream(silent_url, 5.0, 5.0).send("POST", [], b"{}", 5.0)
        assert transport_problem(refused.value, 5.0) == "cannot connect (refused or unreachable)"
        response = await Upstream(cut_url, 5.0, 5.0).send("POST", [], b"{}", 5.0)
        with pytest.raises(httpx2.RemoteProtocolError) as cut:
            async for chunk in response.aiter_raw():
                held.append(chunk)
        assert b"".join(held) == BODY
        assert transport_problem(cut.value, 5.0) == "the connection broke off"
        mute = Server(lambda head, body: (b"HTTP/1.1 200 OK\r\n", False))  # then nothing
        upstream = Upstream(await mute.start(), 5.0, 0.05)
        with pytest.raises(httpx2.ReadTimeout) as late:
            await upstream.send("POST", [], b"{}", 0.05)
        assert transport_problem(late.value, 0.05) == "no data for 0.05 s"
        await short.close()
        await mute.close()

    run(test)


def test_an_answer_before_the_connection_closes_arrives_whole(tmp_path) -> None:
    from remote_helpers import free_port, gateway

    nowhere = f"http://127.0.0.1:{free_port()}/mcp"  # answered by the gateway itself
    with gateway(tmp_path, nowhere) as (url, _log, _stderr):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(
                b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
                b"content-type: application/json\r\ncontent-length: 8\r\n\r\nnot json"
            )
            received = b""
            while data := sock.recv(65536):
                received += data
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.startswith(b"content-length")
    )
    assert len(body) == length and b'"code":-32700' in body


def test_a_connection_is_its_peer_whatever_its_x_forwarded_for_says(tmp_path) -> None:
    """``--anonymous connection``: three identical calls over one connection, each
    claiming another address, are one streak (the third denied)."""
    import json

    from remote_helpers import free_port, gateway

    nowhere = f"http://127.0.0.1:{free_port()}/mcp"  # a forwarded call's answer is 502
    params = {"name": "echo", "arguments": {"text": "z"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    with gateway(tmp_path, nowhere, "--anonymous", "connection") as (url, log, _stderr):
        with httpx2.Client(timeout=60) as client:  # one keep-alive connection
            statuses = [
                client.post(
                    url,
                    content=body,
                    headers={"content-type": "application/json", "x-forwarded-for": f"10.0.0.{n}"},
                ).status_code
                for n in range(3)
            ]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert statuses == [502, 502, 200]
    assert [line["verdict"] for line in lines] == ["pass", "pass", "deny"]
    assert len({line["sessionId"] for line in lines}) == 1
    assert "10.0.0" not in lines[0]["sessionId"]
