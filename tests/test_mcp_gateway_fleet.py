"""Several gateways behind one address share streaks through ``--store redis://`` (and a bridge).

A real redis-server on a loopback port (``tests/redis_server.py``: skipped where it
is missing, failing in CI), a real SDK Streamable HTTP upstream, two gateway
processes, SDK clients: the calls of one session alternate between the two
gateways and the third is denied, as one gateway would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")
pytest.importorskip("redis", reason="redis-py is in the test extra: pip install -e '.[test]'")

from mcp import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

ARGS = {"text": "same"}


def test_calls_alternating_between_two_gateways_are_denied_at_the_third(tmp_path: Path) -> None:
    redis = RedisServer().start()
    outcome: dict[str, Any] = {}
    # exact counts: no decision may miss the default 1 s --store-deadline on a loaded machine
    store = ("--store", redis.url, "--store-deadline", "120")
    try:
        with (
            upstream(tmp_path) as (up, calls),
            gateway(tmp_path, up, *store) as (one, log_one, _e1),
            gateway(tmp_path, up, *store) as (two, log_two, _e2),
        ):

            async def run() -> None:
                meta = {"loop-brake/session": "fleet"}
                async with (
                    Client(streamable_http_client(one)) as first,
                    Client(streamable_http_client(two)) as second,
                ):
                    outcome["results"] = [
                        await client.call_tool("echo", ARGS, meta=meta)
                        for client in (first, second, first, second)
                    ]
                    outcome["other"] = await second.call_tool(
                        "echo", ARGS, meta={"loop-brake/session": "x"}
                    )

            anyio.run(run)
            outcome["seen"] = len(calls.read_text().splitlines())
    finally:
        redis.stop()
    assert [r.is_error for r in outcome["results"]] == [False, False, True, True]
    assert not outcome["other"].is_error  # another session: its own streak
    assert outcome["seen"] == 3  # two of session fleet, one of session x
    lines = [
        json.loads(line) for log in (log_one, log_two) for line in log.read_text().splitlines()
    ]
    counts = sorted((v["count"], v["verdict"]) for v in lines if v["sessionId"] == "name:fleet")
    assert counts == [(1, "pass"), (2, "pass"), (3, "deny"), (4, "deny")]


def test_a_bridge_started_again_keeps_its_sessions_streak_in_the_store(tmp_path: Path) -> None:
    """mcp-proxy --url --store --session KEY: the streak is the store's, so a bridge the
    client starts again (same KEY) goes on counting where the last one stopped."""
    redis = RedisServer().start()
    try:
        with upstream(tmp_path) as (up, calls):
            args = ["-m", "loop_brake_cli", "mcp-proxy", "--url", up]
            args += ["--store", redis.url, "--session", "agent-7"]
            params = StdioServerParameters(command=sys.executable, args=args, cwd=ROOT)

            async def run(count: int) -> list[bool]:
                with (tmp_path / "stderr.txt").open("a") as err:
                    async with Client(stdio_client(params, errlog=err)) as client:
                        results = [await client.call_tool("echo", ARGS) for _ in range(count)]
                return [r.is_error for r in results]

            assert anyio.run(run, 2) == [False, False]
            assert anyio.run(run, 1) == [True]
            assert len(calls.read_text().splitlines()) == 2
    finally:
        redis.stop()
