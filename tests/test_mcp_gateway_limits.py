"""The gateway's bounds (issue 37 item 2): sessions in memory, slow and half-open
connections, too many connections.

Sessions: ``GatewayBrake`` with ``max_sessions`` evicts the least recently used (a
session that returns starts afresh; counted), and with ``session_idle`` forgets the
sessions unused that long when asked to ``expire`` (on a clock the test moves).

Connections, over real sockets to a real gateway process: a connection that sends
nothing, half a request's headers, or part of its body is cut once
``--request-timeout`` has passed (the test waits for the close, an event; it never
sleeps), while whole requests are answered; a connection beyond ``--max-connections``
is answered 503 at once.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.table import BoundedMemoryTable

CANARY = "CANARY-e810-gateway-limits"


MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "limits", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def call(call_id: int, session: str) -> bytes:
    params = {
        "name": "echo",
        "arguments": {"text": CANARY},
        "_meta": {**MODERN, "loop-brake/session": session},
    }
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def test_sessions_beyond_max_sessions_are_evicted_and_counted() -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    from loop_brake_cli.mcp_gateway.decide import Forward, GatewayBrake

    log: list[dict[str, Any]] = []
    brake = GatewayBrake(3, log.append, lambda _text: None, max_sessions=2)
    for call_id, session in enumerate(["a", "a", "b", "c", "a"], 1):
        decision = brake.decide(call(call_id, session), {}, None)
        assert isinstance(decision, Forward)
        brake.answered(decision)
    # c evicted a (least recently used); a returns with a new streak
    assert [(v["sessionId"], v["count"]) for v in log] == [
        ("name:a", 1),
        ("name:a", 2),
        ("name:b", 1),
        ("name:c", 1),
        ("name:a", 1),
    ]
    brake.expire()  # no idle expiry asked: nothing expires, the evictions are told
    assert brake.counters.sessions_evicted == 2  # a, then b
    assert brake.counters.sessions_expired == 0
    assert len(brake.brake) == 2


def test_idle_sessions_expire_on_a_clock_and_the_table_shrinks() -> None:
    now = [0.0]
    table = BoundedMemoryTable(10_000, idle=60.0, clock=lambda: now[0])
    digest = call_digest("echo", {"q": 1})
    for index in range(5_000):
        table.count_call(f"s{index}", "echo", digest, None, 3)
    now[0] = 30.0
    table.count_call("s0", "echo", digest, None, 3)  # used again: not idle
    table.count_call("late", "echo", digest, None, 3)
    now[0] = 60.0
    assert table.expire() == 4_999  # every session unused since 0
    assert sorted(table._slots) == ["late", "s0"]
    assert table.expired == 4_999 and table.evictions == 0
    state, _ = table.count_call("s0", "echo", digest, None, 3)
    assert state.count == 3  # s0's streak went on
    state, _ = table.count_call("s1", "echo", digest, None, 3)
    assert state.count == 1  # s1 was forgotten: a new streak
    now[0] = 200.0
    assert table.expire() == 3
    assert len(table) == 0
    table.count_call("x", "echo", digest, None, 3)
    table.reset("x")
    assert table.expire() == 0  # a reset session is gone from the clock too


def test_an_idle_expiry_needs_a_bound() -> None:
    from loop_brake_cli.core.brake import LoopBrake
    from loop_brake_cli.core.table import memory_table

    with pytest.raises(ValueError, match="max_sessions"):
        memory_table(None, idle=5)
    with pytest.raises(ValueError, match="session_idle"):
        LoopBrake(3, session_idle=5)


# -- over real sockets ----------------------------------------------------------------


CUT_WITHIN = 30.0
"""Seconds a stalled connection may stay open past the test's start: six times the
``--request-timeout`` of 5 s, ample on a loaded machine (the timer is the gateway's,
and it is idle otherwise), and short enough that a gateway that never cuts fails the
test (bench/mutants.py counts a run past 60 s as a hang, not a failure)."""


def closed_by_server(sock: socket.socket, deadline: float) -> bool:
    """Wait until the gateway closes ``sock`` (a FIN or a reset); False if it is still
    open at ``deadline`` (``time.monotonic()``)."""
    sock.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def raw(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    if data:
        sock.sendall(data)
    return sock


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


@pytest.fixture(params=["installed", "pure-python"])
def http_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The gateway's environment: as installed (the ``mcp`` extra brings httptools and
    uvloop, which uvicorn picks), or with both hidden, so uvicorn falls back to h11 and
    asyncio's loop, as where their wheels are missing: the bounds hold on both.

    Yields the environment; afterwards, a hidden module that was never asked for fails
    the test (then the fallback was not what ran)."""
    if request.param == "installed":
        yield {}
        return
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    asked = tmp_path / "asked"
    for name in ("httptools", "uvloop"):
        (shadow / f"{name}.py").write_text(
            "import os\n"
            "with open(os.environ['LOOP_BRAKE_TEST_ASKED'], 'a') as f:\n"
            "    f.write(__name__ + '\\n')\n"
            "raise ImportError('hidden by the test')\n"
        )
    path = os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH")) if p)
    yield {"PYTHONPATH": path, "LOOP_BRAKE_TEST_ASKED": str(asked)}
    assert sorted(set(asked.read_text().split())) == ["httptools", "uvloop"]


def test_half_open_and_slow_requests_are_cut_and_whole_ones_answered(
    tmp_path: Path, http_stack: dict[str, str]
) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    import httpx2
    from remote_helpers import gateway, upstream

    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    with (
        upstream(tmp_path) as (up, calls),
        gateway(tmp_path, up, "--request-timeout", "5", env=http_stack) as (url, log, err),
    ):
        port = port_of(url)
        stalled = [
            raw(port),  # connects, sends nothing
            raw(port, head),  # half its headers
            raw(  # whole headers, a tenth of its body
                port,
                head + b"content-type: application/json\r\ncontent-length: 100000\r\n\r\n"
                b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"' + b"y" * 10_000,
            ),
        ]
        with httpx2.Client(timeout=120) as http:
            answer = http.post(url, content=call(7, "whole"), headers=HEADERS)
        deadline = time.monotonic() + CUT_WITHIN
        cut = [closed_by_server(sock, deadline) for sock in stalled]
        for sock in stalled:
            sock.close()
        with httpx2.Client(timeout=120) as http:  # still serving after the cuts
            again = http.post(url, content=call(8, "whole"), headers=HEADERS)
        executed = len(calls.read_text().splitlines())
    assert cut == [True, True, True]
    assert answer.status_code == 200 and again.status_code == 200
    assert executed == 2  # the stalled call never reached the upstream
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [v["callId"].rsplit("/", 1)[1] for v in logged] == ["7", "8"]
    assert CANARY not in err.read_text()


def listing(port: int) -> bytes:
    """A whole ``tools/list`` request (raw HTTP/1.1, kept alive)."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN}}
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
        "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/list\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def status_line(sock: socket.socket, within: float = 120.0) -> bytes:
    """The first line of the answer on ``sock`` (the rest is left unread); ``within``
    turns a hang into a failure."""
    sock.settimeout(within)
    seen = b""
    while b"\r\n" not in seen:
        chunk = sock.recv(1)
        assert chunk, "closed before an answer"
        seen += chunk
    return seen


def test_a_connection_beyond_max_connections_is_answered_503(
    tmp_path: Path, http_stack: dict[str, str]
) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    from remote_helpers import gateway, upstream

    options = ("--max-connections", "2", "--request-timeout", "600", "--keep-alive", "600")
    with (
        upstream(tmp_path) as (up, _calls),
        gateway(tmp_path, up, *options, env=http_stack) as (url, _log, _err),
    ):
        port = port_of(url)
        # one after the other, each answered: the gateway then holds exactly these two
        # (the start-up probe's connection, accepted with the first, is gone by its answer)
        held, served = [], []
        for _ in range(2):
            held.append(raw(port, listing(port)))
            served.append(status_line(held[-1]))
        extra = raw(port)  # sends nothing: refused at once, or (served) left waiting
        # the 503 is written as the connection is made: a gateway that serves it instead
        # waits for its request (600 s), and the test fails at this bound, not later
        refused = status_line(extra, within=CUT_WITHIN)
        rest = b""
        while chunk := extra.recv(65536):
            rest += chunk
        extra.close()
        held.pop().close()
        deadline = time.monotonic() + 120  # a hang guard: the gateway sees the close soon
        while True:  # a new connection is served once the gateway saw one close
            probe = raw(port, listing(port))
            status = status_line(probe)
            probe.close()
            if b" 503 " not in status:
                break
            assert time.monotonic() < deadline, "the closed connection was never let go"
            time.sleep(0.01)
        for sock in held:
            sock.close()
    assert served == [b"HTTP/1.1 200 OK\r\n"] * 2
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert b"too many connections" in rest
    assert status.startswith(b"HTTP/1.1 200 ")
