"""``mcp-gateway`` at its edges, over real HTTP (issue 42's holes, issue 36 items 4, 7, 12):
body limits to the byte, a chunked body, the DNS-rebinding guard, encodings it will not
judge, a retry in one MCP session over a new connection, probes into other clients'
streaks, stderr lines a client cannot forge or flood, shadow mode, and the private port
of a stdio upstream.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

import httpx2  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

from loop_brake_cli.mcp_gateway.keys import digest  # noqa: E402

CANARY = "CANARY-4c0e-gateway-edges"
ACCEPT = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}
LEGACY = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "edges", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def body(
    call_id: object,
    session: str | None = "s",
    text: str = CANARY,
    tool: str = "echo",
    modern: bool = True,
) -> bytes:
    """A tools/call: 2026-07-28 (send it with ``ACCEPT``), or for a legacy session."""
    meta: dict[str, Any] = dict(MODERN) if modern else {}
    if session is not None:
        meta["loop-brake/session"] = session
    params: dict[str, Any] = {"name": tool, "arguments": {"text": text}}
    if meta:
        params["_meta"] = meta
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


def legacy_session(http: httpx2.Client, url: str, headers: dict[str, str] | None = None) -> str:
    """The initialize handshake; the upstream's Mcp-Session-Id."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "edges", "version": "1"},
        },
    }
    answer = http.post(url, json=init, headers={**LEGACY, **(headers or {})})
    session = answer.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    http.post(url, json=done, headers={**LEGACY, "mcp-session-id": session, **(headers or {})})
    return session


def verdicts(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def executed(calls: Path) -> list[str]:
    if not calls.exists():
        return []
    return [json.loads(line)["tool"] for line in calls.read_text().splitlines()]


def test_bodies_to_the_byte_and_a_chunked_body_without_content_length(tmp_path: Path) -> None:
    """Issue 42: --max-body holds for a chunked body (no Content-Length) as for a declared
    one, and a body of exactly the limit is taken."""
    with upstream(tmp_path) as (up, calls):
        with gateway(tmp_path, up, "--max-body", "1024") as (url, log, _err):
            with httpx2.Client(timeout=30) as http:
                session = legacy_session(http, url)
                headers = {**LEGACY, "mcp-session-id": session}
                exact = body(1, text="", modern=False)
                exact = body(1, text="z" * (1024 - len(exact)), modern=False)
                assert len(exact) == 1024
                over = body(
                    2, text="z" * (1025 - len(body(2, text="", modern=False))), modern=False
                )
                assert len(over) == 1025

                def chunks(data: bytes):
                    for at in range(0, len(data), 100):
                        yield data[at : at + 100]

                taken = [
                    http.post(url, content=exact, headers=headers),
                    http.post(
                        url, content=chunks(body(3, text="y" * 500, modern=False)), headers=headers
                    ),
                ]
                refused = [
                    http.post(url, content=over, headers=headers),
                    http.post(url, content=chunks(over), headers=headers),  # chunked
                ]
        assert executed(calls) == ["echo", "echo"]
    assert [a.status_code for a in taken] == [200, 200]
    assert [a.status_code for a in refused] == [413, 413]
    assert all("larger than 1024 bytes" in a.text for a in refused)
    assert "content-length" not in refused[1].request.headers  # sent chunked
    assert len(verdicts(log)) == 2


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("origin", "http://localhost.evil.example"),
        ("origin", "http://127.0.0.1.evil.example:80"),
        ("origin", "http://localhost:8808/../evil"),
        ("host", "localhost.evil.example"),
        ("host", "127.0.0.1:80@evil.example"),
    ],
)
def test_the_dns_rebinding_guard_matches_whole_names(
    tmp_path: Path, header: str, value: str
) -> None:
    """Issue 42: a guard that matched a prefix would take ``localhost.evil.example``."""
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, log, _err):
        with httpx2.Client(timeout=30) as http:
            answer = http.post(url, content=body(1), headers={**ACCEPT, header: value})
            fine = http.post(
                url, content=body(2), headers={**ACCEPT, "origin": "http://localhost:9"}
            )
        assert executed(calls) == ["echo"]
    assert answer.status_code == 403
    assert fine.status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"content-encoding": "gzip"},
        {"content-encoding": "deflate"},
        {"content-type": "application/json; charset=utf-16"},
        {"content-type": "application/json; charset=latin-1"},
    ],
)
def test_a_body_the_upstream_might_read_otherwise_is_refused(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    """Issue 36.2: never forward what was not judged as the upstream would read it."""
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, log, _err):
        with httpx2.Client(timeout=30) as http:
            answer = http.post(url, content=body(1), headers={**ACCEPT, **headers})
        assert executed(calls) == []
    assert answer.status_code == 415 and CANARY not in answer.text
    assert json.loads(answer.text)["error"]["code"] == -32600


def test_a_header_that_names_the_session_given_twice_is_refused(tmp_path: Path) -> None:
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, _log, _err):
        with httpx2.Client(timeout=30) as http:
            answer = http.post(
                url,
                content=body(1, session=None),
                headers=[*ACCEPT.items(), ("loop-brake-session", "a"), ("loop-brake-session", "b")],
            )
        assert executed(calls) == []
    assert answer.status_code == 400 and "more than once" in answer.text


def test_a_retry_in_one_mcp_session_over_a_new_connection_is_the_same_request(
    tmp_path: Path,
) -> None:
    """Issue 42: the id is scoped by its MCP session, not the TCP connection, so the same
    request sent again while open over another connection is not counted again, and it
    is not forwarded either (the upstream would run it twice: issue 36.3): 409."""
    release = tmp_path / "release"
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, log, _err):
        first = httpx2.Client(timeout=120)
        session = legacy_session(first, url)
        headers = {**LEGACY, "mcp-session-id": session}
        held = body(5, tool="hold", modern=False).replace(
            b'{"text":"' + CANARY.encode() + b'"}', json.dumps({"path": str(release)}).encode()
        )
        outcome: dict[str, Any] = {}
        worker = threading.Thread(
            target=lambda: outcome.update(first=first.post(url, content=held, headers=headers)),
            daemon=True,
        )
        worker.start()
        while worker.is_alive() and not (log.exists() and log.read_text()):
            worker.join(0.02)  # until the first call was decided (or failed)
        assert log.read_text(), outcome
        with httpx2.Client(timeout=30) as second:  # a new TCP connection
            retry = second.post(url, content=held, headers=headers)
        release.touch()
        worker.join(60)
        first.close()
        with httpx2.Client(timeout=30) as third:  # answered: the id is free again
            again = third.post(url, content=held, headers=headers)
    lines = verdicts(log)
    assert retry.status_code == 409 and json.loads(retry.text)["id"] == 5
    assert outcome["first"].status_code == 200 and again.status_code == 200
    assert [(v["count"], v.get("duplicate", False)) for v in lines] == [
        (1, False),
        (1, True),
        (2, False),
    ]
    assert lines[0]["callId"] == lines[1]["callId"] == lines[2]["callId"]
    assert lines[0]["callId"].startswith("mcp-session:")
    assert executed(calls) == ["hold", "hold"]


def test_probes_into_other_clients_streaks_never_deny_nor_move_them(tmp_path: Path) -> None:
    """Issue 36.4: at c40a10b a client naming another's derived key joined its streak:
    its probe was denied (an oracle), and the victim's next call counted the probe."""
    token = f"Bearer {CANARY}-victim"
    with upstream(tmp_path) as (up, calls):
        with gateway(tmp_path, up, "--anonymous", "connection") as (url, log, err):
            with httpx2.Client(timeout=30) as victim, httpx2.Client(timeout=30) as prober:
                auth = {**ACCEPT, "authorization": token}
                for number in (1, 2):  # the victim's streaks, two calls each
                    assert (
                        victim.post(url, content=body(number, "a"), headers=auth).status_code == 200
                    )
                    victim.post(url, content=body(10 + number, None), headers=auth)
                    victim.post(url, content=body(20 + number, None), headers=ACCEPT)
                peer = verdicts(log)[-1]["sessionId"]
                assert peer.startswith("conn:")
                probes = [
                    f"auth:{digest(token)}/name:a",
                    f"auth:{digest(token)}",
                    peer,
                    f"a@auth:{digest(token)}",
                ]
                answers = []
                for number, name in enumerate(probes, 100):
                    for headers in (ACCEPT, {**ACCEPT, "authorization": "Bearer other"}):
                        answer = prober.post(url, content=body(number, name), headers=headers)
                        answers.append(json.loads(answer.text) if answer.text else {})
                third = [
                    victim.post(url, content=body(3, "a"), headers=auth),
                    victim.post(url, content=body(13, None), headers=auth),
                    victim.post(url, content=body(23, None), headers=ACCEPT),
                ]
    assert not any(a.get("result", {}).get("isError") for a in answers)  # no probe denied
    victim_lines = [v for v in verdicts(log) if v["callId"].endswith(("/3", "/13", "/23"))]
    assert [(v["count"], v["verdict"]) for v in victim_lines] == [(3, "deny")] * 3
    assert all(json.loads(t.text)["result"]["isError"] for t in third)
    assert CANARY not in log.read_text() + err.read_text()


def test_stderr_lines_escape_client_names_and_sum_up_repeats(tmp_path: Path) -> None:
    """Issue 36.7: a session name with a line break and an escape forged log lines, and
    every denied call was a line of its own."""
    forged = "x\nloop-brake mcp-gateway: all clear \x1b]0;owned\x07"
    with upstream(tmp_path) as (up, _calls), gateway(tmp_path, up) as (url, log, err):
        with httpx2.Client(timeout=30) as http:
            for number in range(25):
                http.post(url, content=body(number, forged), headers=ACCEPT)
    lines = err.read_text().splitlines()
    assert all(line.startswith("loop-brake mcp-gateway: ") for line in lines)
    assert "\x1b" not in err.read_text()
    denial_lines = [line for line in lines if "denied" in line or "denials" in line]
    assert len(denial_lines) == 3  # the first, at 10, and the rest summed up at the stop
    assert "name:x\\x0aloop-brake mcp-gateway: all clear \\x1b]0;owned\\x07" in denial_lines[0]
    assert "denied 10 times in a row" in denial_lines[1]
    assert denial_lines[2].split(": ", 1)[1].startswith("13 more denials of the same call")
    assert len(verdicts(log)) == 25


def test_shadow_mode_adds_no_warning(tmp_path: Path) -> None:
    """Issue 42: under --shadow the upstream's answers pass unchanged, warned or not."""
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    with upstream(tmp_path, "--json") as (up, calls):
        with gateway(tmp_path, up, "--shadow", "--policy", str(policy)) as (url, log, _err):
            with httpx2.Client(timeout=30) as http:
                answers = [
                    json.loads(http.post(url, content=body(n), headers=ACCEPT).text)
                    for n in range(4)
                ]
        assert executed(calls) == ["echo"] * 4
    assert [len(a["result"]["content"]) for a in answers] == [1, 1, 1, 1]
    assert [v.get("warnAt") for v in verdicts(log)][:2] == [None, 2]


def test_a_stdio_upstream_is_private(tmp_path: Path) -> None:
    """Issue 36.12: at c40a10b the gateway printed the private upstream's URL, and a client
    that used it went around the brake. Not printed now, and it answers no one else."""
    calls = tmp_path / "stdio-calls.jsonl"
    server = (sys.executable, str(ROOT / "tests" / "mcp_server.py"))
    with gateway(tmp_path, "--", env={"MCP_TEST_CALLS": str(calls)}, stdio=server) as (
        url,
        log,
        err,
    ):
        with httpx2.Client(timeout=120) as http:
            through = http.post(url, content=body(2), headers=ACCEPT)  # served: the child is up
            port = _child_port(log)
            direct = http.post(f"http://127.0.0.1:{port}/mcp", content=body(1), headers=ACCEPT)
    assert direct.status_code == 403
    assert through.status_code == 200
    assert executed(calls) == ["echo"]
    text = err.read_text()
    assert f":{port}" not in text and "the stdio server" in text


def _child_port(log: Path) -> int:
    """The private port of this gateway's stdio upstream (the gateway is found by its
    ``--log``, which is this test's), read as ``ps`` shows its child's command."""
    commands = {}
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        commands[entry.name] = (argv, parent)
    gateways = {pid for pid, (argv, _) in commands.items() if str(log).encode() in argv}
    for argv, parent in commands.values():
        module = b"loop_brake_cli.mcp_gateway.stdio_upstream"
        if parent in gateways and module in argv:
            return int(argv[argv.index(module) + 1])
    raise AssertionError("no stdio upstream child found")


def test_a_tool_that_asks_for_input_is_one_call_not_two(tmp_path: Path) -> None:
    """Issue 36.1, the legitimate side: the SDK's 2026-07-28 client retries a call the
    server answered with ``input_required`` (``confirm`` asks through a resolver); that
    retry continues the call, so two confirmed calls pass and the third is denied."""
    import anyio
    import mcp_types
    from test_mcp_gateway import connect, in_session, text_of

    async def accept(_context: Any, _params: Any) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"answer": "yes"})

    results: list[Any] = []
    with upstream(tmp_path) as (up, calls), gateway(tmp_path, up) as (url, log, _err):

        async def run() -> None:
            async with connect(url, elicitation_callback=accept) as client:
                for _ in range(3):
                    results.append(
                        await client.call_tool(
                            "confirm", {"action": "deploy"}, meta=in_session("m")
                        )
                    )

        anyio.run(run)
        ran = executed(calls)
    assert [text_of(r) for r in results[:2]] == ["deploy:yes", "deploy:yes"]
    assert results[2].is_error and "denied before it ran" in text_of(results[2])
    assert ran == ["confirm", "confirm"]
    assert [(v["verdict"], v["count"]) for v in verdicts(log)] == [
        ("pass", 1),
        ("pass", 2),
        ("deny", 3),
    ]
