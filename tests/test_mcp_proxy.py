"""``loop-brake mcp-proxy`` end to end with the official MCP Python SDK.

The SDK's stdio client starts ``loop-brake mcp-proxy -- python tests/mcp_server.py``
exactly as an MCP client would start a configured server; the server is an
SDK ``MCPServer`` that records every call it receives (tool, length, sha256;
never the arguments) in ``$MCP_TEST_CALLS``. Byte-level behaviour is pinned
in ``test_mcp_proxy_raw.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, run_cli

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from loop_brake_cli.core.canonical import call_hash  # noqa: E402
from loop_brake_cli.core.verdicts import deny_message  # noqa: E402

SERVER = str(ROOT / "tests" / "mcp_server.py")
CANARY = "CANARY-7d3b91e4-never-in-logs"
FIVE_MIB = 5 << 20


def proxy_params(env: dict[str, str], *options: str) -> StdioServerParameters:
    """The configuration a user would write: the proxy in front of the server."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "loop_brake_cli", "mcp-proxy", *options, "--", sys.executable, SERVER],
        env=env,
        cwd=ROOT,
    )


def received(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def text_of(result: Any) -> str:
    return result.content[0].text


def process_gone(pid: int, within: float = 120.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_sdk_client_third_identical_call_is_denied_and_never_reaches_the_server(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls.jsonl"
    log = tmp_path / "verdicts.jsonl"
    pid_file = tmp_path / "server.pid"
    stderr_path = tmp_path / "stderr.txt"
    env = {
        "MCP_TEST_CALLS": str(calls),
        "MCP_TEST_PID": str(pid_file),
        "MCP_TEST_STDERR": "mcp_server: hello from the server's stderr",
    }
    args = {"text": f"look up {CANARY}"}
    outcome: dict[str, Any] = {}

    async def session() -> None:
        with stderr_path.open("w") as errlog:
            async with stdio_client(proxy_params(env, "--log", str(log)), errlog=errlog) as (
                read,
                write,
            ):
                async with ClientSession(read, write) as client:
                    init = await client.initialize()
                    outcome["server"] = init.server_info.name
                    tools = await client.list_tools()
                    outcome["tools"] = sorted(tool.name for tool in tools.tools)
                    outcome["first"] = [await client.call_tool("echo", args) for _ in range(3)]
                    outcome["seen_after_denial"] = len(received(calls))
                    outcome["other"] = await client.call_tool("add", {"a": 2, "b": 3})
                    outcome["again"] = await client.call_tool("echo", args)

    anyio.run(session)

    assert outcome["server"] == "loop-brake-test-server"
    assert outcome["tools"] == ["add", "count_to", "echo"]
    first, second, third = outcome["first"]
    assert not first.is_error and text_of(first) == args["text"]
    assert not second.is_error
    assert third.is_error
    assert text_of(third) == deny_message("echo", 3, 3, call_hash("echo", args)[:12])
    assert outcome["seen_after_denial"] == 2  # the denied call never reached the server
    assert text_of(outcome["other"]) == "5"  # a different call resets the streak ...
    assert not outcome["again"].is_error  # ... so this one is count 1 again
    assert [entry["tool"] for entry in received(calls)] == ["echo", "echo", "add", "echo"]

    verdicts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v["toolName"], v["count"]) for v in verdicts] == [
        ("pass", "echo", 1),
        ("pass", "echo", 2),
        ("deny", "echo", 3),
        ("pass", "add", 1),
        ("pass", "echo", 1),
    ]
    assert {v["sessionId"] for v in verdicts} == {"mcp#1"}  # one connection
    stderr = stderr_path.read_text()
    assert "mcp_server: hello from the server's stderr" in stderr  # passed through
    assert "loop-brake mcp-proxy: denied tools/call" in stderr
    assert CANARY not in stderr
    assert CANARY not in log.read_text()
    # the client closed its end: the proxy shut the server down and exited
    assert process_gone(int(pid_file.read_text()))


@pytest.mark.skipif(shutil.which("tee") is None, reason="needs tee to tap the pipes")
def test_sdk_traffic_passes_unchanged_on_the_wire(tmp_path: Path) -> None:
    """Tap both sides of the proxy with tee: what the client sent is what the server
    got, and what the server wrote is what the client got, byte for byte, except
    the one denied call and the proxy's answer to it."""
    calls = tmp_path / "calls.jsonl"
    wire = tmp_path / "wire"
    wire.mkdir()
    env = {"MCP_TEST_CALLS": str(calls), "WIRE": str(wire), "PY": sys.executable, "SERVER": SERVER}
    inner = 'tee "$WIRE/proxy_to_server" | "$PY" "$SERVER" | tee "$WIRE/server_to_proxy"'
    outer = (
        'tee "$WIRE/client_to_proxy" '
        '| "$PY" -m loop_brake_cli mcp-proxy --log "$WIRE/log" -- sh -c \'' + inner + "' "
        '| tee "$WIRE/proxy_to_client"'
    )
    params = StdioServerParameters(command="sh", args=["-c", outer], env=env, cwd=ROOT)
    big = "\u00e9" + "x" * FIVE_MIB + "\u2713"
    progress: list[float] = []
    logged: list[Any] = []
    outcome: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_log(params: Any) -> None:
        logged.append(params.data)

    async def session() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as client:
                await client.initialize()
                await client.list_tools()
                outcome["big"] = await client.call_tool("echo", {"text": big})
                outcome["counted"] = await client.call_tool(
                    "count_to", {"n": 3}, progress_callback=on_progress
                )
                for _ in range(3):
                    outcome["last"] = await client.call_tool("add", {"a": 1, "b": 1})
                await client.send_ping()

    anyio.run(session)

    assert text_of(outcome["big"]) == big
    assert progress == [1, 2, 3]
    assert logged == ["counted to 3"]
    assert outcome["last"].is_error
    entries = received(calls)
    assert entries[0]["length"] == len(big)  # the 5 MiB argument arrived intact
    assert entries[0]["sha256"] == hashlib.sha256(big.encode()).hexdigest()
    assert [entry["tool"] for entry in entries] == ["echo", "count_to", "add", "add"]

    def read(name: str) -> list[bytes]:
        return (wire / name).read_bytes().splitlines(keepends=True)

    client_to_proxy, proxy_to_server = read("client_to_proxy"), read("proxy_to_server")
    server_to_proxy, proxy_to_client = read("server_to_proxy"), read("proxy_to_client")
    withheld = [line for line in client_to_proxy if line not in proxy_to_server]
    assert len(withheld) == 1 and b'"tools/call"' in withheld[0] and b'"add"' in withheld[0]
    assert [line for line in client_to_proxy if line not in withheld] == proxy_to_server
    answered = [line for line in proxy_to_client if line not in server_to_proxy]
    assert len(answered) == 1 and b'"isError":true' in answered[0]
    assert [line for line in proxy_to_client if line not in answered] == server_to_proxy
    methods = {json.loads(line).get("method") for line in proxy_to_server}
    assert {"initialize", "notifications/initialized", "tools/list", "ping"} <= methods
    assert any(len(line) > FIVE_MIB for line in proxy_to_server)
    assert any(len(line) > FIVE_MIB for line in proxy_to_client)
    # the SDK's own traffic, recorded as a goose log, replays to the proxy's log
    recorded = wire / "recorded.log"
    recorded.write_bytes(b"".join(b"STDIN: " + line for line in client_to_proxy))
    replayed = run_cli("replay", "--verdicts", "--format", "mcp", str(recorded))
    assert replayed.stdout == (wire / "log").read_bytes()
    assert replayed.stdout.count(b'"verdict":"deny"') == 1
