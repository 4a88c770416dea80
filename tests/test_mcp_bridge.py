"""``loop-brake mcp-proxy --url``: a stdio SDK client, the bridge, a real SDK HTTP server.

The client is the SDK's own (``Client`` over ``stdio_client``, started as a
client configuration starts a server); the server is ``tests/mcp_http_server.py``
on the SDK's Streamable HTTP transport, in its own process on a loopback port.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, run_cli

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

import mcp_types  # noqa: E402
from mcp import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from remote_helpers import free_port, upstream  # noqa: E402

from loop_brake_cli.core.canonical import call_hash  # noqa: E402
from loop_brake_cli.core.verdicts import deny_message  # noqa: E402

CANARY = "CANARY-b81f3e0c-never-printed"


def bridge(url: str, *options: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "loop_brake_cli", "mcp-proxy", "--url", url, *options],
        env=env,
        cwd=ROOT,
    )


def received(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["tool"] for line in path.read_text().splitlines()]


def text_of(result: Any) -> str:
    return result.content[0].text


async def _accept(_context: Any, _params: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content={"answer": "yes"})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_third_identical_call_is_denied_by_the_bridge(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "verdicts.jsonl"
    errlog = tmp_path / "stderr.txt"
    args = {"text": "hello"}
    outcome: dict[str, Any] = {}
    with upstream(tmp_path) as (url, calls):

        async def session() -> None:
            with errlog.open("w") as err:
                async with Client(
                    stdio_client(bridge(url, "--log", str(log)), errlog=err), mode=mode
                ) as client:
                    client.session  # noqa: B018 - connected
                    outcome["calls"] = [await client.call_tool("echo", args) for _ in range(3)]
                    outcome["seen"] = received(calls)
                    outcome["other"] = await client.call_tool("add", {"a": 2, "b": 3})

        anyio.run(session)
    first, second, third = outcome["calls"]
    assert (first.is_error, text_of(first)) == (False, "hello")
    assert (second.is_error, text_of(second)) == (False, "hello")
    assert third.is_error
    assert text_of(third) == deny_message("echo", 3, 3, call_hash("echo", args)[:12])
    assert outcome["seen"] == ["echo", "echo"]  # the denied call never reached the server
    assert text_of(outcome["other"]) == "5"
    verdicts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v["toolName"], v["count"]) for v in verdicts] == [
        ("pass", "echo", 1),
        ("pass", "echo", 2),
        ("deny", "echo", 3),
        ("pass", "add", 1),
    ]
    assert {v["sessionId"] for v in verdicts} == {"mcp#1"}


def test_progress_elicitation_and_a_5_mb_result_pass_through(tmp_path: Path) -> None:
    progress: list[tuple[float, float | None]] = []
    outcome: dict[str, Any] = {}
    with upstream(tmp_path) as (url, _calls):

        async def on_progress(done: float, total: float | None, _message: str | None) -> None:
            progress.append((done, total))

        async def session() -> None:
            async with Client(bridge(url), mode="legacy", elicitation_callback=_accept) as client:
                outcome["count"] = await client.call_tool(
                    "count_to", {"n": 3}, progress_callback=on_progress
                )
                outcome["big"] = await client.call_tool("big", {"size": 5 << 20})
                outcome["ask"] = await client.call_tool("ask", {"question": "go on?"})

        anyio.run(session)
    assert text_of(outcome["count"]) == "done"
    assert progress == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
    assert text_of(outcome["big"]) == "x" * (5 << 20)
    assert text_of(outcome["ask"]) == "accept:yes"  # the server's request reached the client


def test_a_5_mb_json_body_streams_through(tmp_path: Path) -> None:
    """A server that answers with plain JSON bodies (no SSE): the body is copied in
    chunks, not read whole first."""
    with upstream(tmp_path, "--json") as (url, _calls):

        async def session() -> str:
            async with Client(bridge(url), mode="legacy") as client:
                return text_of(await client.call_tool("big", {"size": 5 << 20}))

        assert anyio.run(session) == "x" * (5 << 20)


def test_upstream_down_is_a_clear_error_without_a_traceback(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp?key={CANARY}"  # nothing listens there
    errlog = tmp_path / "stderr.txt"
    caught: list[BaseException] = []

    async def session() -> None:
        with errlog.open("w") as err:
            try:
                transport = stdio_client(bridge(url), errlog=err)
                async with Client(transport, mode="legacy") as client:
                    await client.call_tool("echo", {"text": "x"})
            except BaseException as exc:  # noqa: BLE001 - an ExceptionGroup from the task group
                caught.append(exc)

    anyio.run(session)
    errors = [exc for exc in _leaves(caught) if isinstance(exc, MCPError)]
    assert errors, caught
    assert "cannot connect" in str(errors[0]) and "127.0.0.1" in str(errors[0])
    stderr = errlog.read_text()
    assert "cannot connect (refused or unreachable)" in stderr
    assert "Traceback" not in stderr
    assert CANARY not in stderr + str(errors[0])  # the URL's query is never shown


def _leaves(errors: list[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in errors:
        inner = getattr(exc, "exceptions", None)  # an exception group (3.11+ name)
        if inner is not None:
            out.extend(_leaves(list(inner)))
        else:
            out.append(exc)
    return out


def test_client_leaving_mid_call_ends_the_bridge_quietly(tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.txt"
    with upstream(tmp_path) as (url, calls):

        async def session() -> None:
            with errlog.open("w") as err:
                client_transport = stdio_client(bridge(url), errlog=err)
                async with (
                    Client(client_transport, mode="legacy") as client,
                    anyio.create_task_group() as group,
                ):
                    # leave once the upstream runs the call: the event, not a guessed second
                    group.start_soon(client.call_tool, "wait", {"seconds": 30})
                    while "wait" not in received(calls):
                        await anyio.sleep(0.01)
                    group.cancel_scope.cancel()

        anyio.run(session)
        assert received(calls) == ["wait"]

        async def again() -> str:  # the server is fine and serves the next client
            async with Client(bridge(url), mode="legacy") as client:
                return text_of(await client.call_tool("echo", {"text": "next"}))

        assert anyio.run(again) == "next"
    assert "Traceback" not in errlog.read_text()


def test_header_values_reach_the_server_but_never_any_output(tmp_path: Path) -> None:
    """The canary: a token from the environment and one on the command line reach the
    server; neither they nor an argument appear on stderr, in the log or in a result."""
    log = tmp_path / "verdicts.jsonl"
    errlog = tmp_path / "stderr.txt"
    token = f"tok-{CANARY}"
    outcome: dict[str, Any] = {}
    env = {"LB_TEST_TOKEN": token}
    with upstream(tmp_path) as (url, _calls):

        async def session() -> None:
            options = (
                "--header",
                "Authorization: Bearer env:LB_TEST_TOKEN",
                "--header",
                f"X-Other: {CANARY}",
                "--log",
                str(log),
            )
            with errlog.open("w") as err:
                transport = stdio_client(bridge(url, *options, env=env), errlog=err)
                async with Client(transport, mode="legacy") as client:
                    outcome["who"] = text_of(await client.call_tool("whoami", {}))
                    outcome["echo"] = [
                        await client.call_tool("echo", {"text": CANARY}) for _ in range(3)
                    ]

        anyio.run(session)
    expected = hashlib.sha256(f"Bearer {token}".encode()).hexdigest()
    assert outcome["who"] == expected
    assert outcome["echo"][2].is_error
    assert CANARY not in text_of(outcome["echo"][2])
    for path in (log, errlog):
        assert CANARY not in path.read_text(), path


def test_header_errors_name_the_header_never_the_value() -> None:
    for spec, expected in (
        (f"Authorization Bearer {CANARY}", "--header must be 'NAME: VALUE'"),
        ("Authorization: Bearer env:LB_NO_SUCH_VARIABLE", "LB_NO_SUCH_VARIABLE is not set"),
        (f"Mcp-Session-Id: {CANARY}", "set by the MCP transport itself"),
    ):
        result = run_cli("mcp-proxy", "--url", "http://127.0.0.1:9/mcp", "--header", spec)
        stderr = result.stderr.decode()
        assert result.returncode == 2, stderr
        assert expected in stderr
        assert CANARY not in result.stdout.decode() + stderr


def test_a_tool_that_asks_for_input_is_one_call_not_two(tmp_path: Path) -> None:
    """Issue 36.1 through the bridge: the 2026-07-28 client retries a call whose answer
    asked for input (``confirm``); the retry continues it, so the third call is denied."""
    log = tmp_path / "verdicts.jsonl"
    results: list[Any] = []
    with upstream(tmp_path) as (url, calls):

        async def session() -> None:
            async with Client(
                bridge(url, "--log", str(log)), elicitation_callback=_accept
            ) as client:
                for _ in range(3):
                    results.append(await client.call_tool("confirm", {"action": "deploy"}))

        anyio.run(session)
        ran = received(calls)
    assert [r.is_error for r in results] == [False, False, True]
    assert ran == ["confirm", "confirm"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v["count"]) for v in lines] == [("pass", 1), ("pass", 2), ("deny", 3)]
