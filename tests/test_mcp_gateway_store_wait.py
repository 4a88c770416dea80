"""A slow store slows only the calls that need it (issue 37 item 1).

A real redis-server frozen by SIGSTOP (it takes connections, answers nothing until
SIGCONT) stands for a store as slow as the test wants, with no timing margin: a
``tools/call`` sent to the gateway waits on it, and while that call is provably
waiting (its request sits unread in the server's socket: ``/proc/net/tcp``), a
``tools/list`` and a call in another session are answered. After SIGCONT the
waiting call is counted and answered. With a ``--store-deadline`` shorter than the
freeze, the call is answered without the store (allowed uncounted) while the
server is still frozen, and the fail-open is said once.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")
pytest.importorskip("redis", reason="redis-py is in the test extra: pip install -e '.[test]'")

import httpx2  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

CANARY = "CANARY-7d21-store-wait"
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "store-wait", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def headers(method: str) -> dict[str, str]:
    named = {"mcp-name": "echo"} if method == "tools/call" else {}
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        **named,
    }


def call(call_id: int, session: str, text: str = CANARY) -> bytes:
    meta = {**MODERN, "loop-brake/session": session}
    params = {"name": "echo", "arguments": {"text": text}, "_meta": meta}
    return json.dumps({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params})


def tools_list(call_id: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/list", "params": {"_meta": MODERN}}
    return json.dumps(message)


def unread_requests(port: int) -> int:
    """How many of the server's connections hold bytes it has not read (a request sent
    to a frozen server): from Linux's /proc/net/tcp, the receive queue of each socket
    whose local port is the server's."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, queues = fields[1], fields[3], fields[4]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                if int(queues.split(":")[1], 16) > 0:
                    count += 1
    return count


def wait_unread(port: int, within: float = 120.0) -> None:
    """Until a request waits unread at the frozen server (``within`` is a hang guard)."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux's /proc/net/tcp to see a request waiting at the store")
    deadline = time.monotonic() + within
    while unread_requests(port) == 0:
        assert time.monotonic() < deadline, "the gateway never asked the store"
        time.sleep(0.01)


def post(url: str, data: bytes, method: str) -> httpx2.Response:
    with httpx2.Client(timeout=120) as http:
        return http.post(url, content=data, headers=headers(method))


def result(answer: httpx2.Response) -> dict[str, Any]:
    text = answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def test_tools_list_and_other_sessions_are_answered_while_a_call_waits_on_the_store(
    tmp_path: Path,
) -> None:
    redis = RedisServer().start()
    waiting: dict[str, Any] = {}
    try:
        slow = f"{redis.url}?socket_timeout=120"  # the store never times out on its own
        options = ("--store", slow, "--store-deadline", "120")
        with upstream(tmp_path) as (up, calls), gateway(tmp_path, up, *options) as (url, log, err):
            first = post(url, call(1, "a"), "tools/call")  # connects the pool, counts 1
            assert first.status_code == 200 and not result(first)["result"].get("isError")
            redis.freeze()
            try:

                def blocked() -> None:
                    waiting["answer"] = post(url, call(2, "a"), "tools/call")

                thread = threading.Thread(target=blocked)
                thread.start()
                wait_unread(redis.port)  # the call is waiting on the store now
                listed = post(url, tools_list(3), "tools/list")
                still_waiting = "answer" not in waiting
            finally:
                redis.thaw()
            thread.join(120)
            assert not thread.is_alive()
            executed = len(calls.read_text().splitlines())
        notes = err.read_text()
    finally:
        redis.stop()
    assert listed.status_code == 200
    assert [tool["name"] for tool in result(listed)["result"]["tools"]]
    assert still_waiting  # tools/list was answered while the call still waited
    answer = waiting["answer"]
    assert answer.status_code == 200 and not result(answer)["result"].get("isError")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["count"], v["verdict"], v.get("rule")) for v in lines] == [
        (1, "pass", None),
        (2, "pass", None),
    ]  # counted in the store after it returned, not decided without it
    assert executed == 2
    assert "fail-open" not in notes
    assert "Task was destroyed" not in notes  # every end told to the store before exit
    assert CANARY not in notes + log.read_text()


def test_a_decision_past_the_deadline_is_allowed_uncounted_while_the_store_is_frozen(
    tmp_path: Path,
) -> None:
    redis = RedisServer().start()
    try:
        slow = f"{redis.url}?socket_timeout=120"
        options = ("--store", slow, "--store-deadline", "0.05")
        with upstream(tmp_path) as (up, calls), gateway(tmp_path, up, *options) as (url, log, err):
            first = post(url, call(1, "a"), "tools/call")
            redis.freeze()
            try:
                late = [post(url, call(n, "a"), "tools/call") for n in (2, 3)]
            finally:
                redis.thaw()
            after = post(url, call(4, "b"), "tools/call")  # the store answers again
            executed = len(calls.read_text().splitlines())
        notes = err.read_text()
    finally:
        redis.stop()
    assert [a.status_code for a in (first, *late)] == [200, 200, 200]
    assert not any(result(a)["result"].get("isError") for a in (first, *late))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    # answered while the store was frozen: decided without it (rule store, count 0);
    # the calls before and after may or may not make the short deadline
    by_id = {v["callId"].rsplit("/", 1)[1]: v for v in lines}
    assert [(by_id[n]["verdict"], by_id[n].get("rule"), by_id[n]["count"]) for n in "23"] == [
        ("pass", "store", 0),
        ("pass", "store", 0),
    ]
    # said once per outage: never twice without the store answering in between
    said = [
        "failed" if "no decision within 0.05 s (--store-deadline)" in line else "answered"
        for line in notes.splitlines()
        if "--store-deadline" in line or "answers again" in line
    ]
    assert "failed" in said
    assert all(pair != ("failed", "failed") for pair in zip(said, said[1:], strict=False))
    assert "allowed (fail-open)" in notes
    assert after.status_code == 200 and not result(after)["result"].get("isError")
    assert executed == 4
    assert CANARY not in notes + log.read_text()
