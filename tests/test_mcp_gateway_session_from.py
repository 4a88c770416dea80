"""``mcp-gateway --session-from``: the sources an operator believes, through real processes.

A client with one credential that names a new session in ``_meta`` for every call
is never denied by default (each name starts a streak: pinned here as today's
behaviour); with ``--session-from authorization`` its names are ignored and its
third identical call is denied in its credential's streak. The upstream is the SDK
test server, the gateway ``python -m loop_brake_cli mcp-gateway``, the client the
SDK's ``Client``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import run_cli

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

import httpx2  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

from loop_brake_cli.core.canonical import call_hash  # noqa: E402
from loop_brake_cli.core.verdicts import deny_message  # noqa: E402
from loop_brake_cli.mcp_gateway.keys import digest  # noqa: E402

CANARY = "CANARY-7d1f03b2-session-from"
TOKEN = "Bearer agent-token-CANARY-7d1f"


def connect(url: str, headers: dict[str, str] | None = None) -> Client:
    http = httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=60))
    return Client(streamable_http_client(url, http_client=http))


def calls_seen(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def fresh_names(url: str, args: dict[str, Any]) -> list[Any]:
    """Three identical calls under one credential, each naming a new session in _meta."""

    async def run() -> list[Any]:
        async with connect(url, {"Authorization": TOKEN}) as client:
            return [
                await client.call_tool("echo", args, meta={"loop-brake/session": f"run-{n}"})
                for n in range(3)
            ]

    return anyio.run(run)


def test_a_new_session_name_per_call_is_denied_only_with_session_from(tmp_path: Path) -> None:
    args = {"text": CANARY}
    auth = f"auth:{digest(TOKEN)}"
    with upstream(tmp_path) as (up, calls):
        with gateway(tmp_path, up) as (url, log, stderr):
            results = fresh_names(url, args)
        # today's behaviour, pinned: every fresh name is a streak of its own
        assert [r.is_error for r in results] == [False, False, False]
        assert calls_seen(calls) == 3
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert [(v["verdict"], v["sessionId"], v["sessionSource"]) for v in lines] == [
            ("pass", f"{auth}/name:run-{n}", "meta") for n in range(3)
        ]
        texts = [log.read_text(), stderr.read_text()]

        with gateway(tmp_path, up, "--session-from", "authorization") as (url, log, stderr):
            results = fresh_names(url, args)
            refused: list[str] = []

            async def unauthenticated() -> None:  # a name alone is no longer believed
                async with connect(url) as client:
                    try:
                        await client.call_tool("echo", args, meta={"loop-brake/session": "x"})
                    except MCPError as exc:
                        refused.append(str(exc))

            anyio.run(unauthenticated)
        assert [r.is_error for r in results] == [False, False, True]
        denial = results[2].content[0].text
        assert denial == deny_message("echo", 3, 3, call_hash("echo", args)[:12])
        assert calls_seen(calls) == 3 + 2  # the denied call never reached the upstream
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        judged = [(v["verdict"], v["sessionId"], v["count"], v["sessionSource"]) for v in lines[:3]]
        assert judged == [
            ("pass", auth, 1, "authorization"),
            ("pass", auth, 2, "authorization"),
            ("deny", auth, 3, "authorization"),
        ]
        assert lines[3:] == [{"verdict": "error", "error": "no session key (refused)"}]
        assert len(refused) == 1
        assert "--session-from authorization" in refused[0]
        assert "an Authorization header" in refused[0]
        assert "loop-brake/session" not in refused[0]  # not told to send what is ignored
        err = stderr.read_text()
        assert f"in session {auth} (authorization)" in err
        texts += [log.read_text(), err, denial, refused[0]]
    for text in texts:
        assert CANARY not in text and TOKEN not in text


def test_session_from_mistakes_are_one_line_exit_2_before_listening() -> None:
    cases = [
        ("", "--session-from: name at least one source"),
        (",", "--session-from: name at least one source"),
        ("meta,", "--session-from: an empty source"),
        ("meta,cookie", "--session-from: unknown source 'cookie'"),
        ("connection", "--session-from: connection is not a source a client names"),
    ]
    with socket.socket() as taken:  # a gateway that got past the check exits, never hangs
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        for value, expected in cases:
            result = run_cli(
                "mcp-gateway",
                "--listen",
                listen,
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--session-from",
                value,
            )
            stderr = result.stderr.decode()
            assert result.returncode == 2, (value, stderr)
            assert stderr.startswith(f"loop-brake mcp-gateway: {expected}"), (value, stderr)
            assert len(stderr.splitlines()) == 1, (value, stderr)
            assert "Traceback" not in stderr and result.stdout == b""


def test_the_refusal_names_only_believed_sources_and_is_unchanged_by_default() -> None:
    from loop_brake_cli.mcp_gateway.decide import NO_KEY, no_key_message
    from loop_brake_cli.mcp_gateway.keys import NAMING_SOURCES

    assert no_key_message(NAMING_SOURCES) is NO_KEY
    text = no_key_message(("header", "mcp-session-id"))
    assert "(--session-from header,mcp-session-id)" in text
    assert "send a Loop-Brake-Session header or an Mcp-Session-Id" in text
    assert "_meta" not in text and "Authorization" not in text
