"""Nothing a client sends switches the brake off (issue 36, items 1 to 4), checked from
outside: six identical calls, in each shape a client could send them, through
``mcp-proxy`` (a stdio SDK server), ``mcp-proxy --url`` and ``mcp-gateway`` (a real SDK
HTTP server), and the calls that reached the server counted by the server itself
(``$MCP_TEST_CALLS``). At most two may run; at ``c40a10b`` a continuation's params,
``NaN``, a byte-order mark, UTF-16 and a reused id each let all six run.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_env

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

import httpx2  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

CANARY = "CANARY-7d21-trust-boundary"
SERVER = [sys.executable, str(ROOT / "tests" / "mcp_server.py")]
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
MODERN = (
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},'
    b'"io.modelcontextprotocol/clientCapabilities":{}}'
)
MODERN_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
    "loop-brake-session": "probe",
}
ARGS = b'{"text":"' + CANARY.encode() + b'"}'


def call(request_id: bytes, extra: bytes = b"", args: bytes = ARGS, meta: bool = False) -> bytes:
    """A tools/call of ``echo`` as bytes, so every shape is exactly as written."""
    params = b'{"name":"echo","arguments":' + args + extra + (b"," + MODERN if meta else b"") + b"}"
    return (
        b'{"jsonrpc":"2.0","id":' + request_id + b',"method":"tools/call","params":' + params + b"}"
    )


VARIANTS: dict[str, Callable[[bool], list[bytes]]] = {
    "plain": lambda m: [call(str(n).encode(), meta=m) for n in range(1, 7)],
    # issue 36.1: a continuation's params alone prove nothing
    "inputResponses {}": lambda m: [
        call(str(n).encode(), b',"inputResponses":{}', meta=m) for n in range(1, 7)
    ],
    "requestState": lambda m: [
        call(str(n).encode(), b',"requestState":"s"', meta=m) for n in range(1, 7)
    ],
    "both": lambda m: [
        call(
            str(n).encode(),
            b',"inputResponses":{"q":{"action":"accept"}},"requestState":"s"',
            meta=m,
        )
        for n in range(1, 7)
    ],
    # issue 36.2: what the brake's parser refuses is never forwarded
    "NaN": lambda m: [
        call(str(n).encode(), args=b'{"text":"x","n":NaN}', meta=m) for n in range(1, 7)
    ],
    "Infinity": lambda m: [
        call(str(n).encode(), args=b'{"text":"x","n":[Infinity]}', meta=m) for n in range(1, 7)
    ],
    "-Infinity in the id": lambda m: [call(b"-Infinity", meta=m) for _ in range(6)],
    "a byte-order mark": lambda m: [
        b"\xef\xbb\xbf" + call(str(n).encode(), meta=m) for n in range(1, 7)
    ],
    "trailing text": lambda m: [call(str(n).encode(), meta=m) + b" //" for n in range(1, 7)],
    "invalid UTF-8": lambda m: [
        call(str(n).encode(), args=b'{"text":"\xff' + bytes([n]) + b'"}', meta=m)
        for n in range(1, 7)
    ],
    # issue 36.3: an id counts once only while its request is open
    "id 1 reused after each answer": lambda m: [call(b"1", meta=m) for _ in range(6)],
    'ids 1 and "1"': lambda m: [call(b"1" if n % 2 else b'"1"', meta=m) for n in range(6)],
    "an escaped method name": lambda m: [
        c.replace(b'"tools/call"', b'"tools\\/call"')
        for c in (call(str(n).encode(), meta=m) for n in range(1, 7))
    ],
}


def own(answers: list[dict[str, Any]]) -> str:
    """The answers the front-end wrote itself (errors and denials): never an argument.
    (The server's own answers echo the text back: that is the tool's result.)"""
    return json.dumps([a for a in answers if "error" in a or a.get("result", {}).get("isError")])


def executed(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


@contextmanager
def stdio_proxy(tmp: Path, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``mcp-proxy`` in front of the SDK stdio server, after the initialize handshake."""
    calls = tmp / f"calls-{len(list(tmp.glob('calls-*')))}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", *options, "--", *SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(MCP_TEST_CALLS=str(calls)),
        cwd=ROOT,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INIT + b"\n")
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()
        proc.stdin.write(INITIALIZED + b"\n")
        proc.stdin.flush()
        yield proc, calls
    finally:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        proc.wait(30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


NO_ANSWER = 30.0  # seconds: a guard that fails a test whose line is never answered


def send_each(proc: subprocess.Popen[bytes], lines: list[bytes]) -> list[dict[str, Any]]:
    """Each line, then its one answer (the server's or the proxy's). A line forwarded
    unjudged may get none (the SDK server drops what it cannot parse): that fails."""
    answers: list[dict[str, Any]] = []
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout
    for line in lines:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        got: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda q=got: q.put(out.readline()), daemon=True).start()
        try:
            answers.append(json.loads(got.get(timeout=NO_ANSWER)))
        except queue.Empty:
            proc.kill()
            pytest.fail(f"no answer to line {len(answers) + 1}: forwarded unjudged?")
    return answers


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_through_the_stdio_proxy_at_most_two_of_six_run(tmp_path: Path, variant: str) -> None:
    with stdio_proxy(tmp_path) as (proc, calls):
        answers = send_each(proc, VARIANTS[variant](False))
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(30)
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    assert executed(calls) <= 2, variant
    assert len(answers) == 6
    assert CANARY.encode() not in stderr + own(answers).encode()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_through_the_url_bridge_at_most_two_of_six_run(tmp_path: Path, variant: str) -> None:
    with upstream(tmp_path) as (url, calls):
        proc = subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--url", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(),
            cwd=ROOT,
        )
        try:
            send_each(proc, [INIT])
            proc.stdin.write(INITIALIZED + b"\n")  # type: ignore[union-attr]
            answers = send_each(proc, VARIANTS[variant](False))
        finally:
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(30)
            stderr = proc.stderr.read()  # type: ignore[union-attr]
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
        ran = executed(calls)
    assert ran <= 2, variant
    assert len(answers) == 6
    assert CANARY.encode() not in stderr + own(answers).encode()


HTTP_VARIANTS = {
    **VARIANTS,
    "UTF-16": lambda m: [c.decode().encode("utf-16") for c in VARIANTS["plain"](m)],
    "UTF-32 big-endian": lambda m: [c.decode().encode("utf-32-be") for c in VARIANTS["plain"](m)],
}


@pytest.mark.parametrize("variant", sorted(HTTP_VARIANTS))
def test_through_the_gateway_at_most_two_of_six_run(tmp_path: Path, variant: str) -> None:
    """The 2026-07-28 protocol (one POST per call, whose body the SDK server reads with
    ``json.loads``: a BOM, UTF-16, NaN and Infinity all pass it)."""
    with upstream(tmp_path, "--json") as (up, calls), gateway(tmp_path, up) as (url, log, err):
        with httpx2.Client(timeout=30) as client:
            answers = [
                client.post(url, content=body, headers=MODERN_HEADERS)
                for body in HTTP_VARIANTS[variant](True)
            ]
        ran = executed(calls)
    assert ran <= 2, variant
    assert all(a.status_code in (200, 400) for a in answers)
    mine = "".join(a.text for a in answers if a.status_code != 200 or '"isError":true' in a.text)
    assert CANARY not in mine + log.read_text() + err.read_text()


def test_the_refusals_say_why_and_quote_nothing(tmp_path: Path) -> None:
    """-32700 for what is not strict JSON, with the parser's reason (a column), id null;
    -32600 for a call the decoder cannot read, with the request's id."""
    with stdio_proxy(tmp_path) as (proc, calls):
        nan, bom, bad = send_each(
            proc,
            [
                call(b"7", args=b'{"text":"' + CANARY.encode() + b'","n":NaN}'),
                b"\xef\xbb\xbf" + call(b"8"),
                b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":["'
                + CANARY.encode()
                + b'"]}}',
            ],
        )
    assert (nan["id"], nan["error"]["code"]) == (None, -32700)
    assert "NaN is not a JSON value" in nan["error"]["message"]
    assert "not forwarded" in nan["error"]["message"]
    assert (bom["id"], bom["error"]["code"]) == (None, -32700)
    assert (bad["id"], bad["error"]["code"]) == (9, -32600)
    assert "params.name not a string" in bad["error"]["message"]
    assert CANARY not in json.dumps([nan, bom, bad])
    assert executed(calls) == 0


def test_a_reused_id_counts_again_after_a_denial_and_another_call_then_passes(
    tmp_path: Path,
) -> None:
    """A client that numbers every request 1: after a denial (the proxy's answer) the
    next, different call with id 1 is a call of its own, not the denied one again."""
    with stdio_proxy(tmp_path, "-m", "2") as (proc, calls):
        answers = send_each(
            proc,
            [call(b"1"), call(b"1"), call(b"1", args=b'{"text":"other"}'), call(b"1")],
        )
    assert [a["result"].get("isError", False) for a in answers] == [False, True, False, False]
    assert executed(calls) == 3
