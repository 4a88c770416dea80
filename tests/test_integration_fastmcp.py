"""The brake in a real FastMCP server (``fastmcp`` 4.x middleware), called by FastMCP's
own ``Client`` in memory and over stdio (a real server process), as a stuck agent
calls a tool: the same call again and again."""

from __future__ import annotations

import asyncio
import logging
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastmcp", reason="needs the fastmcp extra")

from fastmcp import Client, FastMCP  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.fastmcp import attach, dispose  # noqa: E402

CANARY = "sk-canary-f4a9e2"
META = "loop-brake/denial"


def make_server(ran: list[str], result: Any = None) -> FastMCP:
    server = FastMCP("tools")

    @server.tool
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return server


async def calls(server: FastMCP, queries: list[str], mode: str = "legacy") -> list[Any]:
    async with Client(server, mode=mode) as client:
        return [await client.call_tool("search", {"q": q}, raise_on_error=False) for q in queries]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_a_tool_error_then_a_different_call_runs() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3)
    results = asyncio.run(calls(server, ["weather"] * 4 + ["news"]))
    assert ran == ["weather", "weather", "news"]
    assert [r.is_error for r in results] == [False, False, True, True, False]
    assert results[2].content[0].text == denial(3) and results[3].content[0].text == denial(4)
    fields = results[2].meta[META]
    assert fields["code"] == "LOOP_BRAKE" and fields["count"] == 3 and fields["maxRepeats"] == 3


def test_parallel_identical_calls_of_one_client() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            same = [
                client.call_tool("search", {"q": "weather"}, raise_on_error=False) for _ in range(3)
            ]
            return list(await asyncio.gather(*same))

    results = asyncio.run(main())
    assert ran == ["weather", "weather"]
    assert sorted(r.is_error for r in results) == [False, False, True]


def test_two_clients_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3)

    async def main() -> list[list[Any]]:
        return list(await asyncio.gather(*[calls(server, ["weather"] * 3) for _ in range(2)]))

    for results in asyncio.run(main()):
        assert [r.is_error for r in results] == [False, False, True]
    assert len(ran) == 4


def test_stateless_requests_in_memory_are_their_own_sessions() -> None:
    ran: list[str] = []
    server = make_server(ran)
    brake = attach(server, max_repeats=2)
    # FastMCP's default client (the 2026-07-28 protocol): every request its own session.
    results = asyncio.run(calls(server, ["weather"] * 3, mode="auto"))
    assert [r.is_error for r in results] == [False] * 3 and len(ran) == 3
    assert len(brake) <= 3


SERVER = """
import sys
sys.path.insert(0, {root!r})
from fastmcp import FastMCP
from loop_brake_cli.integrations.fastmcp import attach

server = FastMCP("tools")

@server.tool
def search(q: str) -> str:
    return "results for " + q

attach(server, max_repeats=3)
server.run()
"""


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_stdio_server_brakes_its_one_client_in_either_protocol(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "server.py"
    root = str(Path(__file__).resolve().parent.parent)
    script.write_text(textwrap.dedent(SERVER.format(root=root)))
    from fastmcp.client.transports import PythonStdioTransport

    async def main() -> list[Any]:
        transport = PythonStdioTransport(script, python_cmd=sys.executable)
        async with Client(transport, mode=mode) as client:
            return [
                await client.call_tool("search", {"q": q}, raise_on_error=False)
                for q in ["weather"] * 3 + ["news"]
            ]

    results = asyncio.run(main())
    assert [r.is_error for r in results] == [False, False, True, False]
    assert results[2].content[0].text == denial(3)


def test_stop_is_a_tool_error_with_the_stop_message(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    server = make_server([])
    attach(server, max_repeats=3, policy=str(policy))
    results = asyncio.run(calls(server, ["weather"] * 4))
    assert [r.is_error for r in results] == [False, False, True, True]
    assert results[3].content[0].text.startswith("loop brake: 2 calls in a row were denied")
    assert results[3].meta[META]["rule"] == "stop"


def test_progress_feeds_results(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    server = make_server([], result=lambda: f"tick {next(ticks)}")
    attach(server, max_repeats=3, policy=str(policy))
    assert [r.is_error for r in asyncio.run(calls(server, ["job"] * 4))] == [False] * 4
    stuck = make_server([], result=lambda: "tick 0")
    attach(stuck, max_repeats=3, policy=str(policy))
    assert [r.is_error for r in asyncio.run(calls(stuck, ["job"] * 3))] == [False, False, True]


def test_canary_reaches_no_result_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    caplog.set_level(logging.INFO)
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=2)
    results = asyncio.run(calls(server, [CANARY] * 3))
    denials = [r for r in results if r.is_error]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [str(r.content) + str(r.meta) for r in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


def test_dispose_restores_the_server() -> None:
    ran: list[str] = []
    server = make_server(ran)
    brake = attach(server, max_repeats=2)
    asyncio.run(calls(server, ["weather"]))
    dispose(server)
    results = asyncio.run(calls(server, ["weather"] * 3))
    assert [r.is_error for r in results] == [False] * 3 and len(ran) == 4
    assert len(brake) == 0


def test_a_client_that_reuses_its_request_id_is_braked(tmp_path: Path) -> None:
    """Issue 36.3: six identical calls all with JSON-RPC id 1 over real stdio: the
    third and later are denied (the brake gives each call an id of its own)."""
    from jsonrpc_stdio import calls_with_one_id

    script = tmp_path / "server.py"
    root = str(Path(__file__).resolve().parent.parent)
    script.write_text(textwrap.dedent(SERVER.format(root=root)))
    answers = calls_with_one_id(
        [sys.executable, str(script)], [("search", {"q": "weather"})] * 6, tmp_path / "stderr"
    )
    assert [a["result"].get("isError", False) for a in answers] == [False, False] + [True] * 4
    assert answers[2]["result"]["content"][0]["text"] == denial(3)
