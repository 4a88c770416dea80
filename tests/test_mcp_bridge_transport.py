"""``loop-brake mcp-proxy --url`` against a scripted Streamable HTTP peer: what the
transport says the bridge does at its edges (docs/mcp-proxy.md, the MCP transport).

The SDK's server cannot be asked for a redirect, a 404 or an error body on cue, so
the peer here is a plain HTTP server that answers each request as the test scripts
it and keeps every request it got (method, path, headers, body). The bridge is the
real command in a subprocess; the client is this test, one line at a time, each
next line written once the answer to the last has been read (the bridge sends each
request on a thread of its own: the order is the test's, not a race).
"""

from __future__ import annotations

import json
import platform
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_env

SESSION = "sess-7f3a"
VERSION = "2025-06-18"
MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class Peer(ThreadingHTTPServer):
    """The scripted server: ``requests`` as received; ``hold`` released by the test."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.holding = threading.Event()  # a "hold" call has arrived
        self.release = threading.Event()  # the test lets it be answered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"

    def seen(self, method: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if method is None or r["method"] == method]


class _Handler(BaseHTTPRequestHandler):
    server: Peer

    def log_message(self, *_args: Any) -> None:  # quiet
        pass

    def _record(self, body: Any) -> None:
        with self.server.lock:
            self.server.requests.append(
                {
                    "verb": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "method": body.get("method") if isinstance(body, dict) else None,
                    "body": body,
                }
            )

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - no stream outside requests here
        self._record(None)
        self._send(405)

    def do_DELETE(self) -> None:  # noqa: N802
        self._record(None)
        with self.server.lock:  # the session ended while a call was still held?
            self.server.requests[-1]["while_held"] = not self.server.release.is_set()
        self._send(200)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        self._record(body)
        if self.path != "/mcp":
            self._send(200, {"jsonrpc": "2.0", "id": body.get("id"), "result": {}})
            return
        method, ident = body.get("method"), body.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "peer", "version": "1"},
            }
            self._send(
                200, {"jsonrpc": "2.0", "id": ident, "result": result}, {"Mcp-Session-Id": SESSION}
            )
            return
        if "id" not in body:
            self._send(202)
            return
        name = body.get("params", {}).get("name")
        if name == "redirect":
            self._send(307, headers={"Location": self.server.url.replace("/mcp", "/elsewhere")})
        elif name == "refuse":
            error = {"code": -32602, "message": "no such tool"}
            self._send(400, {"jsonrpc": "2.0", "id": "not-yours", "error": error})
        elif name == "gone":
            self._send(404)
        else:
            if name == "hold":
                self.server.holding.set()
                self.server.release.wait(120)
            text = {"content": [{"type": "text", "text": f"ok {name}"}]}
            self._send(200, {"jsonrpc": "2.0", "id": ident, "result": text})


@contextmanager
def peer() -> Iterator[Peer]:
    server = Peer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


class Client:
    """The bridge in a subprocess, spoken to one JSON-RPC line at a time."""

    def __init__(self, url: str, *options: str, stdout: Any = subprocess.PIPE) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--url", url, *options],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=cli_env(),
            cwd=ROOT,
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, message: dict[str, Any], skip: tuple[Any, ...] = ()) -> dict[str, Any]:
        """Send a request and read its answer: the next response whose id is not in
        ``skip`` (answers to earlier requests still in flight)."""
        self.send(message)
        return self.answer(skip)

    def answer(self, skip: tuple[Any, ...] = ()) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the bridge ended before answering"
            answer = json.loads(line)
            if "method" not in answer and answer.get("id") not in skip:
                return answer

    def end(self) -> tuple[int, str]:
        """Close the bridge's stdin (the client leaves); its status and stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        err = self.proc.stderr.read().decode()
        return self.proc.wait(timeout=120), err


def call(ident: Any, name: str, modern: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {"n": str(ident)}}  # never denied
    if modern:
        params["_meta"] = {VERSION_KEY: MODERN}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _open_session(client: Client) -> None:
    assert client.ask(INITIALIZE)["result"]["protocolVersion"] == VERSION
    client.send(INITIALIZED)


def test_the_session_and_its_version_go_on_every_request_and_the_end_deletes_it() -> None:
    """The session id the server issued on initialize, and the protocol version it
    negotiated, are sent on every later request; the client leaving ends the session
    with a DELETE. A legacy client's cancellation is a notification sent on."""
    with peer() as server:
        client = Client(server.url)
        _open_session(client)
        assert client.ask(call(2, "echo"))["result"]["content"][0]["text"] == "ok echo"
        client.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        )
        assert client.ask(call(3, "echo"))["id"] == 3
        status, err = client.end()
        assert status == 0, err
        (first, *later) = [r for r in server.seen() if r["verb"] == "POST"]
        assert first["method"] == "initialize" and "mcp-session-id" not in first["headers"]
        assert [r["method"] for r in later] == [
            "notifications/initialized",
            "tools/call",
            "notifications/cancelled",
            "tools/call",
        ]
        for request in later:
            assert request["headers"]["mcp-session-id"] == SESSION, request
            assert request["headers"]["mcp-protocol-version"] == VERSION, request
        (delete,) = [r for r in server.seen() if r["verb"] == "DELETE"]
        assert delete["headers"]["mcp-session-id"] == SESSION
        assert "Traceback" not in err


def test_a_request_written_right_after_initialize_waits_for_its_session() -> None:
    """A client that writes its next lines without waiting for initialize's answer:
    initialize is sent alone, so what follows carries the session id it issued."""
    with peer() as server:
        client = Client(server.url)
        client.send(INITIALIZE)
        client.send(INITIALIZED)
        client.send(call(2, "echo"))
        assert {client.answer()["id"], client.answer()["id"]} == {1, 2}
        status, err = client.end()
        assert status == 0, err
        (request,) = server.seen("tools/call")
        assert request["headers"].get("mcp-session-id") == SESSION


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(platform.machine())


def _reading(pid: int) -> bool | None:
    """Whether the process's main thread is blocked reading (its stdin, here); None once
    it has exited (Linux's /proc/PID/syscall: the number of the call it is in)."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == str(READ_SYSCALL)
    except (OSError, IndexError):
        return None


def _wait_until(condition: Any) -> None:
    deadline = time.monotonic() + 120  # a bound that fails the test, not a margin
    while not condition():
        assert time.monotonic() < deadline, "the condition never came"
        time.sleep(0.005)


@pytest.mark.skipif(
    READ_SYSCALL is None or not Path("/proc/self/syscall").exists(),
    reason="needs Linux's /proc/PID/syscall (x86_64 or aarch64)",
)
def test_a_call_in_flight_when_the_client_leaves_is_still_answered() -> None:
    """docs/mcp-proxy.md: at the client's end the calls in flight get
    --shutdown-timeout to finish; their answers are written, then the session ends.
    The held call is released only once the bridge has acted on the end of its input
    (its main thread no longer blocked reading it): an answer that got in first would
    prove nothing."""
    with peer() as server:
        client = Client(server.url, "--shutdown-timeout", "120")
        _open_session(client)
        client.send(call(2, "hold"))
        assert server.holding.wait(120), "the held call never reached the server"
        pid = client.proc.pid
        _wait_until(lambda: _reading(pid))  # back to reading the client's next line
        assert client.proc.stdin is not None
        client.proc.stdin.close()  # the client leaves while the call is held
        _wait_until(lambda: not _reading(pid))  # the bridge saw the end of its input
        server.release.set()
        assert client.answer()["result"]["content"][0]["text"] == "ok hold"
        status, err = client.end()
        assert status == 0, err
        (delete,) = [r for r in server.seen() if r["verb"] == "DELETE"]
        assert not delete["while_held"], "the session was ended under a call in flight"


def test_a_redirect_is_not_followed_an_error_body_keeps_our_id_and_a_404_ends_the_session() -> None:
    """A redirect would take the request (and the --header credentials) elsewhere: it
    is an error for that request. A server's own JSON-RPC error comes back with the
    client's id. A 404 on a session means the server ended it: said once, and the
    next request carries no stale session id (nor is it DELETEd at the end)."""
    with peer() as server:
        client = Client(server.url)
        _open_session(client)
        redirected = client.ask(call(2, "redirect"))
        assert redirected["error"]["code"] == -32603
        assert "HTTP 307" in redirected["error"]["message"]
        assert client.ask(call("three", "refuse")) == {
            "jsonrpc": "2.0",
            "id": "three",
            "error": {"code": -32602, "message": "no such tool"},
        }
        assert "error" in client.ask(call(4, "gone"))
        assert client.ask(call(5, "echo"))["result"]["content"][0]["text"] == "ok echo"
        status, err = client.end()
        assert status == 0, err
        assert [r["path"] for r in server.seen()].count("/elsewhere") == 0
        last = server.seen("tools/call")[-1]
        assert last["body"]["id"] == 5 and "mcp-session-id" not in last["headers"]
        assert err.count("ended the session (HTTP 404)") == 1, err
        assert [r for r in server.seen() if r["verb"] == "DELETE"] == []


def test_a_modern_clients_cancellation_closes_the_stream_and_is_never_posted() -> None:
    """2026-07-28: a cancellation is the closing of the request's stream, never a POST."""
    with peer() as server:
        client = Client(server.url)
        client.send(call(7, "hold", modern=True))
        assert server.holding.wait(120), "the held call never reached the server"
        client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 7, VERSION_KEY: MODERN},
            }
        )
        # lines are handled in order: once 8 is answered, the cancellation was handled
        assert client.ask(call(8, "echo", modern=True), skip=(7,))["id"] == 8
        server.release.set()
        client.end()
        assert [r["method"] for r in server.seen() if r["verb"] == "POST"] == [
            "tools/call",
            "tools/call",
        ]
        assert server.seen("tools/call")[1]["headers"]["mcp-protocol-version"] == MODERN


def test_a_server_that_cannot_be_reached_is_said_once() -> None:
    """Every request gets its error; stderr says why once, not once per request."""
    with socket.socket() as bound:  # bound, never listening: refused, and no one else's
        bound.bind(("127.0.0.1", 0))
        client = Client(f"http://127.0.0.1:{bound.getsockname()[1]}/mcp")
        for ident in (1, 2, 3):
            answer = client.ask(call(ident, "echo"))
            assert "cannot connect" in answer["error"]["message"], answer
        status, err = client.end()
    assert status == 0 and err.count("cannot connect") == 1, err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stdout_is_exit_5() -> None:
    with peer() as server, open("/dev/full", "wb") as full:
        client = Client(server.url, stdout=full)
        client.send(INITIALIZE)
        status, err = client.end()
    assert status == 5, err
    assert err.count("\n") == 1 and "Traceback" not in err
