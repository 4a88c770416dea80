"""The bridge and the gateway in front of a real Node.js server: the MCP reference server
(@modelcontextprotocol/server-everything, TypeScript SDK) in Streamable HTTP mode.

A second implementation of the transport (stateful, the initialize handshake; the
Python SDK's default client first probes the 2026-07-28 ``server/discover`` and
falls back). Installed by ``.ci/run`` (``npm install`` in ``tests/js/everything``);
elsewhere the tests skip, in CI they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

from mcp import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from remote_helpers import NODE_MODULES, gateway, node_upstream  # noqa: E402

if not (shutil.which("node") and NODE_MODULES.is_dir()):
    if os.environ.get("CI"):
        pytest.fail(
            "CI: the Node.js MCP server is missing (node, or npm install in tests/js/everything)",
            pytrace=False,
        )
    pytest.skip(
        "the Node.js MCP server is not installed: npm install --prefix tests/js/everything",
        allow_module_level=True,
    )

SUM = {"a": 1, "b": 2}


async def calls_and_progress(client: Client, meta: dict[str, Any] | None) -> dict[str, Any]:
    progress: list[float] = []

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        progress.append(done)

    sums = [await client.call_tool("get-sum", SUM, meta=meta) for _ in range(3)]
    long = await client.call_tool(
        "trigger-long-running-operation",
        {"duration": 1, "steps": 2},
        progress_callback=on_progress,
        meta=meta,
    )
    return {"sums": sums, "long": long, "progress": progress}


def test_bridge_to_the_node_server(tmp_path: Path) -> None:
    log = tmp_path / "bridge.jsonl"
    with node_upstream(tmp_path) as url:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "loop_brake_cli", "mcp-proxy", "--url", url, "--log", str(log)],
            cwd=ROOT,
        )

        async def run() -> dict[str, Any]:
            with (tmp_path / "stderr.txt").open("w") as err:
                async with Client(stdio_client(params, errlog=err)) as client:
                    return await calls_and_progress(client, None)

        outcome = anyio.run(run)
    assert [r.is_error for r in outcome["sums"]] == [False, False, True]
    assert outcome["sums"][0].content[0].text == "The sum of 1 and 2 is 3."
    assert not outcome["long"].is_error and outcome["progress"] == [1.0, 2.0]
    verdicts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [v["verdict"] for v in verdicts] == ["pass", "pass", "deny", "pass"]
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_gateway_to_the_node_server(tmp_path: Path, mode: str) -> None:
    with node_upstream(tmp_path) as up, gateway(tmp_path, up) as (url, log, stderr):

        async def run() -> dict[str, Any]:
            async with Client(streamable_http_client(url), mode=mode) as client:
                return await calls_and_progress(client, {"loop-brake/session": "n"})

        outcome = anyio.run(run)
    assert [r.is_error for r in outcome["sums"]] == [False, False, True]
    assert not outcome["long"].is_error and outcome["progress"] == [1.0, 2.0]
    verdicts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v["sessionId"]) for v in verdicts] == [
        ("pass", "name:n"),
        ("pass", "name:n"),
        ("deny", "name:n"),
        ("pass", "name:n"),
    ]
    assert "Traceback" not in stderr.read_text()
