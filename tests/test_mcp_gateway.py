"""``loop-brake mcp-gateway``: SDK Streamable HTTP clients, the gateway, a real SDK HTTP server.

Every part is real and separate: the upstream is ``tests/mcp_http_server.py`` on
the SDK's own Streamable HTTP transport, the gateway runs as ``python -m
loop_brake_cli mcp-gateway`` on a loopback port, and the clients are the SDK's
``Client`` over ``streamable_http_client`` (its default mode speaks the stateless
2026-07-28 protocol; ``legacy`` the initialize handshake with ``Mcp-Session-Id``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

import httpx2  # noqa: E402
import mcp_types  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from remote_helpers import free_port, gateway, upstream  # noqa: E402

from loop_brake_cli.core.canonical import call_hash  # noqa: E402
from loop_brake_cli.core.verdicts import deny_message  # noqa: E402
from loop_brake_cli.mcp_gateway.keys import digest  # noqa: E402

CANARY = "CANARY-5e02c7aa-never-printed"


def connect(
    url: str, mode: str = "auto", headers: dict[str, str] | None = None, **kw: Any
) -> Client:
    http = httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=60))
    # The SDK's client takes SSE events of at most 1 MiB unless told: the 5 MB result.
    transport = streamable_http_client(url, http_client=http, max_sse_event_size=16 << 20)
    return Client(transport, mode=mode, **kw)


def in_session(name: str) -> dict[str, Any]:
    return {"loop-brake/session": name}


def received(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["tool"] for line in path.read_text().splitlines()]


def verdicts(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def text_of(result: Any) -> str:
    return result.content[0].text


def test_session_a_is_denied_at_its_third_call_and_session_b_passes(tmp_path: Path) -> None:
    args = {"text": "hello"}
    outcome: dict[str, Any] = {}
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, log, stderr):

        async def run() -> None:
            async with connect(url) as client:
                outcome["a"] = [
                    await client.call_tool("echo", args, meta=in_session("a")) for _ in range(3)
                ]
                outcome["b"] = await client.call_tool("echo", args, meta=in_session("b"))

        anyio.run(run)
        outcome["seen"] = received(calls)
    first, second, third = outcome["a"]
    assert text_of(first) == text_of(second) == "hello"
    assert not first.is_error and not second.is_error
    assert third.is_error
    assert text_of(third) == deny_message("echo", 3, 3, call_hash("echo", args)[:12])
    assert not outcome["b"].is_error and text_of(outcome["b"]) == "hello"
    assert outcome["seen"] == ["echo", "echo", "echo"]  # a, a, b: the denial never went upstream
    lines = verdicts(log)
    assert [(v["verdict"], v["sessionId"], v["count"], v["sessionSource"]) for v in lines] == [
        ("pass", "name:a", 1, "meta"),
        ("pass", "name:a", 2, "meta"),
        ("deny", "name:a", 3, "meta"),
        ("pass", "name:b", 1, "meta"),
    ]
    assert "in session name:a (meta)" in stderr.read_text()


def test_a_stdio_server_the_gateway_starts(tmp_path: Path) -> None:
    """--upstream -- CMD ARGS: the SDK test server over stdio, served by the gateway."""
    calls = tmp_path / "stdio-calls.jsonl"
    server = (sys.executable, str(ROOT / "tests" / "mcp_server.py"))
    outcome: dict[str, Any] = {}
    env = {"MCP_TEST_CALLS": str(calls)}
    with gateway(tmp_path, "--", env=env, stdio=server) as (url, log, stderr):

        async def run() -> None:
            async with connect(url) as client:
                outcome["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                outcome["a"] = [
                    await client.call_tool("echo", {"text": "s"}, meta=in_session("a"))
                    for _ in range(3)
                ]
                outcome["b"] = await client.call_tool("echo", {"text": "s"}, meta=in_session("b"))

        anyio.run(run)
    assert outcome["tools"] == ["add", "count_to", "echo"]
    assert [r.is_error for r in outcome["a"]] == [False, False, True]
    assert not outcome["b"].is_error
    assert received(calls) == ["echo", "echo", "echo"]
    assert "started the stdio server" in stderr.read_text()
    assert [v["verdict"] for v in verdicts(log)] == ["pass", "pass", "deny", "pass"]


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _exits_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` (not our child) ends within ``seconds``: a pidfd becomes
    readable when it exits (an event; the bound only fails the test)."""
    import os
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], seconds)[0])
    finally:
        os.close(fd)


@pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or sys.version_info < (3, 9),
    reason="needs Linux's /proc children and pidfd_open",
)
def test_a_stdio_server_never_outlives_its_gateway(tmp_path: Path) -> None:
    """--upstream -- CMD: a gateway ended by SIGKILL (no clean-up of its own) takes its
    stdio server with it: the child serving it reads the gateway's pipe to its end."""
    import os
    import signal
    import subprocess

    from remote_helpers import wait_listening

    port = free_port()
    server = [sys.executable, str(ROOT / "tests" / "mcp_server.py")]
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-gateway"]
    command += ["--listen", f"127.0.0.1:{port}", "--upstream", "--", *server]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    left: list[int] = []
    try:
        wait_listening(port, proc)
        (child,) = _children(proc.pid)  # the private HTTP server of the stdio server
        left = [child, *_children(child)]
        proc.kill()
        proc.wait()
        for pid in left:
            assert _exits_within(pid, 60), f"process {pid} outlived its gateway"
    finally:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_session_sources_in_order_and_credentials_only_as_digests(tmp_path: Path) -> None:
    """Loop-Brake-Session, then Authorization (a digest); a _meta name under a credential
    is scoped by it, so two tokens never share a streak whatever names they pick."""
    token_1, token_2 = f"Bearer one-{CANARY}", f"Bearer two-{CANARY}"
    outcome: dict[str, Any] = {}
    with upstream(tmp_path) as (up, _calls), gateway(tmp_path, up) as (url, log, stderr):

        async def run() -> None:
            async with connect(url, headers={"Loop-Brake-Session": "h"}) as client:
                outcome["header"] = [
                    await client.call_tool("add", {"a": 1, "b": 1}) for _ in range(3)
                ]
            async with connect(url, headers={"Authorization": token_1}) as client:
                outcome["auth"] = [
                    await client.call_tool("add", {"a": 2, "b": 2}) for _ in range(3)
                ]
                for _ in range(2):
                    await client.call_tool("add", {"a": 3, "b": 3}, meta=in_session("shared"))
            async with connect(url, headers={"Authorization": token_2}) as client:
                outcome["other"] = await client.call_tool(
                    "add", {"a": 3, "b": 3}, meta=in_session("shared")
                )

        anyio.run(run)
    assert [r.is_error for r in outcome["header"]] == [False, False, True]
    assert [r.is_error for r in outcome["auth"]] == [False, False, True]
    assert not outcome["other"].is_error  # same name, another credential: its own streak
    lines = verdicts(log)
    sources = [(v["sessionId"], v["sessionSource"], v["count"]) for v in lines]
    one, two = digest(token_1), digest(token_2)
    assert sources == [
        ("name:h", "header", 1),
        ("name:h", "header", 2),
        ("name:h", "header", 3),
        (f"auth:{one}", "authorization", 1),
        (f"auth:{one}", "authorization", 2),
        (f"auth:{one}", "authorization", 3),
        (f"auth:{one}/name:shared", "meta", 1),
        (f"auth:{one}/name:shared", "meta", 2),
        (f"auth:{two}/name:shared", "meta", 1),
    ]
    assert CANARY not in log.read_text() + stderr.read_text()


def test_legacy_clients_count_by_mcp_session_id_and_everything_passes_through(
    tmp_path: Path,
) -> None:
    """The initialize handshake: the upstream's Mcp-Session-Id keys the streak; progress,
    an elicitation request from the server and a 5 MB result stream through."""
    progress: list[float] = []
    outcome: dict[str, Any] = {}

    async def accept(_context: Any, _params: Any) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"answer": "yes"})

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        progress.append(done)

    with upstream(tmp_path) as (up, _calls), gateway(tmp_path, up) as (url, log, _stderr):

        async def run() -> None:
            async with connect(url, "legacy", elicitation_callback=accept) as client:
                outcome["echo"] = [await client.call_tool("echo", {"text": "x"}) for _ in range(3)]
                outcome["count"] = await client.call_tool(
                    "count_to", {"n": 3}, progress_callback=on_progress
                )
                outcome["big"] = await client.call_tool("big", {"size": 5 << 20})
                outcome["ask"] = await client.call_tool("ask", {"question": "go on?"})
            async with connect(url, "legacy") as client:  # a new session starts afresh
                outcome["fresh"] = await client.call_tool("echo", {"text": "x"})

        anyio.run(run)
    assert [r.is_error for r in outcome["echo"]] == [False, False, True]
    assert text_of(outcome["count"]) == "done" and progress == [1.0, 2.0, 3.0]
    assert text_of(outcome["big"]) == "x" * (5 << 20)
    assert text_of(outcome["ask"]) == "accept:yes"
    assert not outcome["fresh"].is_error
    lines = verdicts(log)
    assert {v["sessionSource"] for v in lines} == {"mcp-session-id"}
    assert len({v["sessionId"] for v in lines}) == 2
    assert all(v["sessionId"].startswith("mcp-session:") for v in lines)


def test_a_call_naming_no_session_is_refused_or_counted_per_connection(tmp_path: Path) -> None:
    errors: list[str] = []
    outcome: dict[str, Any] = {}
    with upstream(tmp_path) as (up, calls):
        with gateway(tmp_path, up) as (url, log, _stderr):

            async def refused() -> None:
                async with connect(url) as client:
                    try:
                        await client.call_tool("echo", {"text": "x"})
                    except MCPError as exc:
                        errors.append(str(exc))

            anyio.run(refused)
        assert received(calls) == []
        assert len(errors) == 1 and 'params._meta["loop-brake/session"]' in errors[0]
        assert "--anonymous connection" in errors[0]
        assert verdicts(log) == [{"verdict": "error", "error": "no session key (refused)"}]

        with gateway(tmp_path, up, "--anonymous", "connection") as (url, log, _stderr):

            async def per_connection() -> None:
                async with connect(url) as client:
                    outcome["one"] = [
                        await client.call_tool("echo", {"text": "y"}) for _ in range(3)
                    ]
                async with connect(url) as client:
                    outcome["two"] = await client.call_tool("echo", {"text": "y"})

            anyio.run(per_connection)
        assert [r.is_error for r in outcome["one"]] == [False, False, True]
        assert not outcome["two"].is_error  # another connection: not the first one's streak
        assert {v["sessionSource"] for v in verdicts(log)} == {"connection"}


def test_client_authorization_reaches_the_upstream_only_when_told(tmp_path: Path) -> None:
    token = f"Bearer {CANARY}"
    seen: dict[str, str] = {}
    with upstream(tmp_path) as (up, _calls):
        for options, label in (((), "default"), (("--forward-auth",), "forwarded")):
            with gateway(tmp_path, up, *options) as (url, log, stderr):

                async def run() -> str:
                    async with connect(url, headers={"Authorization": token}) as client:
                        return text_of(await client.call_tool("whoami", {}))

                seen[label] = anyio.run(run)
            assert CANARY not in log.read_text() + stderr.read_text()
    assert seen == {"default": "none", "forwarded": hashlib.sha256(token.encode()).hexdigest()}


def test_limits_upstream_down_and_foreign_hosts_are_clear_http_errors(tmp_path: Path) -> None:
    dead = f"http://user:{CANARY}@127.0.0.1:{free_port()}/mcp?key={CANARY}"  # a token in the URL
    with gateway(tmp_path, dead, "--max-body", "2048") as (url, log, stderr):
        with httpx2.Client(timeout=60) as http:
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": CANARY}, "_meta": in_session("s")},
            }
            down = http.post(
                url, json=call, headers={"accept": "application/json, text/event-stream"}
            )
            big = dict(call, params=dict(call["params"], arguments={"text": "z" * 4096}))
            too_big = http.post(url, json=big)
            foreign = http.post(url, json=call, headers={"host": "evil.example:80"})
            origin = http.post(url, json=call, headers={"origin": "https://evil.example"})
    assert down.status_code == 502
    body = down.json()
    assert body["id"] == 7 and "cannot connect" in body["error"]["message"]
    assert "127.0.0.1" in body["error"]["message"]
    assert too_big.status_code == 413 and "larger than 2048 bytes" in too_big.text
    assert foreign.status_code == 403 and origin.status_code == 403
    err = stderr.read_text()
    assert "cannot connect (refused or unreachable)" in err
    assert "Traceback" not in err
    assert CANARY not in err + log.read_text() + down.text


def test_a_client_leaving_mid_call_leaves_the_gateway_serving(tmp_path: Path) -> None:
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, _log, stderr):

        async def leave() -> None:
            """Leave once the upstream runs the call (the event, not a guessed second)."""
            async with connect(url) as client, anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool("wait", {"seconds": 30}, meta=in_session("w"))

                group.start_soon(call)
                while "wait" not in received(calls):
                    await anyio.sleep(0.01)
                group.cancel_scope.cancel()

        anyio.run(leave)

        async def again() -> str:
            async with connect(url) as client:
                return text_of(
                    await client.call_tool("echo", {"text": "next"}, meta=in_session("n"))
                )

        assert anyio.run(again) == "next"
        assert received(calls) == ["wait", "echo"]
    assert "Traceback" not in stderr.read_text()


def test_canary_header_values_and_arguments_never_appear(tmp_path: Path) -> None:
    """--header from the environment and literal, a client's Authorization, arguments:
    none in the gateway's stdout (checked empty by the fixture), stderr, log or answers."""
    env = {"LB_GATEWAY_TOKEN": f"env-{CANARY}"}
    options = (
        "--header",
        "Authorization: Bearer env:LB_GATEWAY_TOKEN",
        "--header",
        f"X-K: {CANARY}",
    )
    answers: list[str] = []
    with (
        upstream(tmp_path) as (up, _calls),
        gateway(tmp_path, up, *options, env=env) as (
            url,
            log,
            stderr,
        ),
    ):

        async def run() -> None:
            async with connect(url, headers={"Authorization": f"Bearer c-{CANARY}"}) as client:
                who = text_of(await client.call_tool("whoami", {}))
                answers.append(who)
                for _ in range(3):
                    result = await client.call_tool("echo", {"text": CANARY}, meta=in_session("k"))
                    if result.is_error:
                        answers.append(text_of(result))

        anyio.run(run)
    assert answers[0] == hashlib.sha256(f"Bearer env-{CANARY}".encode()).hexdigest()
    assert len(answers) == 2  # the denial
    for text in (log.read_text(), stderr.read_text(), answers[1]):
        assert CANARY not in text


def test_usage_errors_exit_2_before_listening_and_never_quote_a_value() -> None:
    from conftest import run_cli

    busy = free_port()
    cases = [
        (["--upstream", "http://127.0.0.1:9/mcp", "--header", f"X-Key {CANARY}"], "NAME: VALUE"),
        (
            ["--upstream", "http://127.0.0.1:9/mcp", "--header", "X: env:LB_UNSET_VAR"],
            "LB_UNSET_VAR",
        ),
        (["--upstream", f"ftp://u:{CANARY}@h/mcp"], "http:// or https://"),
        (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "8808"], "HOST:PORT"),
        (["--upstream", "http://127.0.0.1:9/mcp", "--listen", ":8808"], "HOST:PORT"),
        (["--upstream", "--"], "needs a server command"),
        ([], "give --upstream URL"),
        (["--upstream", "http://127.0.0.1:9/mcp", "--", "cat"], "goes after --upstream --"),
        (["--upstream", "http://127.0.0.1:9/mcp", "--metrics-sessions"], "needs --metrics"),
    ]
    for args, expected in cases:
        result = run_cli("mcp-gateway", "--listen", f"127.0.0.1:{busy}", *args)
        stderr = result.stderr.decode()
        assert result.returncode == 2, (args, stderr)
        assert expected in stderr, (args, stderr)
        assert CANARY not in stderr + result.stdout.decode()
        assert "Traceback" not in stderr
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli(
            "mcp-gateway", "--listen", f"127.0.0.1:{port}", "--upstream", "http://127.0.0.1:9/"
        )
    assert result.returncode == 2 and b"cannot listen on 127.0.0.1" in result.stderr


def test_only_loopback_addresses_are_loopback() -> None:
    """docs/mcp-proxy.md: the Host/Origin guard and the quiet start are for loopback
    addresses only; a private address (10.x, 192.168.x, fd00::) is served to whoever
    reaches it, with the line that says so."""
    from loop_brake_cli.mcp_gateway.serve import is_loopback

    for host in ("localhost", "127.0.0.1", "127.8.9.10", "::1"):
        assert is_loopback(host), host
    for host in ("10.0.0.1", "192.168.1.20", "172.16.0.1", "fd00::1", "0.0.0.0", "example.com"):
        assert not is_loopback(host), host


def scrape(url: str, host: str | None = None) -> tuple[int, str, str]:
    """GET /metrics of the gateway at ``url``: status, content type, body."""
    request = urllib.request.Request(url.rsplit("/", 1)[0] + "/metrics")
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.headers["content-type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["content-type"], exc.read().decode()


def test_metrics_scraped_after_a_scripted_loop(tmp_path: Path) -> None:
    """--metrics: GET /metrics in Prometheus text; the denied count is the calls the
    brake denied (the log's deny lines); no argument, no session name."""
    secret_session = "session-SECRET-0d1e"  # stderr names sessions (escaped); /metrics never
    with (
        upstream(tmp_path) as (up, _calls),
        gateway(tmp_path, up, "--metrics") as (url, log, stderr),
    ):

        async def run() -> None:
            async with connect(url) as client:
                for _ in range(6):
                    meta = in_session(secret_session)
                    await client.call_tool("echo", {"text": CANARY}, meta=meta)
                await client.call_tool("echo", {"text": "x"}, meta=in_session("b"))

        anyio.run(run)
        status, content_type, text = scrape(url)
        foreign = scrape(url, host="evil.example")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert foreign[0] == 403  # the gateway's Host rule holds for /metrics too
    denied = [line for line in verdicts(log) if line["verdict"] == "deny"]
    assert len(denied) == 4
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if not line.startswith("#")
    }
    assert samples['loop_brake_calls_total{tool="echo",rule="streak",outcome="denied"}'] == 4
    assert samples['loop_brake_calls_total{tool="echo",rule="streak",outcome="passed"}'] == 3
    assert samples["loop_brake_sessions_held"] == 2
    assert secret_session not in text
    for where in (text, stderr.read_text(), log.read_text()):
        assert CANARY not in where
    shown = (ROOT / "docs" / "metrics.md").read_text().split("A scrape after one session")[1]
    assert text == shown.split("```text\n")[1].split("```")[0]  # the docs show this scrape
