"""``args_ignore`` in every front-end, for real: filter, replay (summary, ``--verdicts``,
``--json``, ``--compare-policy``), the hook (SQLite and Redis), mcp-proxy, mcp-gateway,
the library on both stores, and an integration's denial data.

The calls poll one tool whose arguments differ only by a secret nonce at an ignored
path (and a second secret that never changes, at a path that is not ignored): the
third is denied on a policy hash, every front-end says it is one, and neither secret
appears in any output, log or store.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_env, run_cli

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.hook.runner import main as hook_main

NONCE = "canary-91ab-nonce-secret"
TOKEN = "canary-44ce-token-secret"
POLICY = """\
[[tools]]
match = "poll"
args_ignore = ["$.nonce", "$.auth['x-request-id']"]
"""
PREFIX = call_hash("poll", {"job": 42, "auth": {"token": TOKEN}})[:12]  # the policy hash


def args(n: int) -> dict[str, Any]:
    return {"job": 42, "nonce": f"{NONCE}-{n}", "auth": {"token": TOKEN, "x-request-id": n}}


def secret_free(*blobs: bytes | str) -> bool:
    joined = b"".join(b if isinstance(b, bytes) else b.encode() for b in blobs)
    return NONCE.encode() not in joined and TOKEN.encode() not in joined


@pytest.fixture
def policy(tmp_path: Path) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return str(path)


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.jsonl"
    lines = [
        json.dumps({"tool": "poll", "args": args(n), "sessionId": "s", "callId": f"c{n}"})
        for n in range(4)
    ]
    lines.append(json.dumps({"tool": "other", "args": args(9), "sessionId": "s"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def lines_of(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def test_filter(policy: str, events: Path) -> None:
    done = run_cli("filter", "--summary", "--policy", policy, str(events))
    rows = lines_of(done.stdout)
    assert [(r["verdict"], r["count"]) for r in rows] == [
        ("pass", 1),
        ("pass", 2),
        ("deny", 3),
        ("deny", 4),
        ("pass", 1),
    ]
    assert [r["hashPrefix"] for r in rows[:4]] == [PREFIX] * 4
    assert [r.get("policyHash") for r in rows] == [True] * 4 + [None]
    assert rows[4]["hashPrefix"] == call_hash("other", args(9))[:12]  # the contract's hash
    assert f"policy hash {PREFIX}\u2026" in rows[2]["message"]
    assert secret_free(done.stdout, done.stderr)
    plain = run_cli("filter", str(events))
    assert [r["count"] for r in lines_of(plain.stdout)] == [1] * 5
    assert b"policyHash" not in plain.stdout


def test_replay_summary_verdicts_json_and_compare(policy: str, events: Path) -> None:
    verdicts = run_cli(
        "replay", "--verdicts", "--format", "events", "--policy", policy, str(events)
    )
    kinds = [r["verdict"] for r in lines_of(verdicts.stdout)]
    assert kinds == ["pass", "pass", "deny", "deny", "pass"]
    assert all(r["policyHash"] for r in lines_of(verdicts.stdout)[:4])
    summary = run_cli("replay", "--format", "events", "--policy", policy, str(events))
    document = run_cli("replay", "--json", "--format", "events", "--policy", policy, str(events))
    assert json.loads(document.stdout)["totals"]["denied"] == 2
    compare = run_cli(
        "replay", "--compare-policy", policy, "--json", "--format", "events", str(events)
    )
    (session,) = json.loads(compare.stdout)["sessions"]
    assert (session["seedDenied"], session["policyDenied"]) == (0, 2), session
    for done in (verdicts, summary, document, compare):
        assert done.returncode in (0, 1), done.stderr
        assert secret_free(done.stdout, done.stderr)


def hook_input(n: int) -> bytes:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s",
            "tool_name": "poll",
            "tool_input": args(n),
            "tool_use_id": f"t{n}",
        }
    ).encode()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_hook(policy: str, tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    log = tmp_path / "hook.log"
    if backend == "redis":
        where = ["--store", request.getfixturevalue("redis_url")]
    else:
        where = ["--state", str(tmp_path / "state.db")]
    answers = []
    for n in range(3):
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", "claude-code", "--policy", policy, *where, "--log", str(log)]
        assert hook_main(argv, io.BytesIO(hook_input(n)), out, err) == 0
        answers.append(out.getvalue())
        assert secret_free(out.getvalue(), err.getvalue())
    assert answers[:2] == [b"", b""]
    reason = json.loads(answers[2])["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"policy hash {PREFIX}\u2026" in reason and "args_ignore" in reason
    (logged,) = lines_of(log.read_bytes())
    assert logged["policyHash"] is True and logged["hashPrefix"] == PREFIX
    assert secret_free(log.read_bytes())
    if backend == "sqlite":
        assert secret_free((tmp_path / "state.db").read_bytes())


def test_mcp_proxy(policy: str, tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    requests = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "poll", "arguments": args(n)},
            }
        )
        for n in range(3)
    ]
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--policy", policy]
    command += ["--log", str(log), "--", sys.executable, str(ROOT / "tests" / "echo_server.py")]
    done = subprocess.run(
        command,
        input="".join(r + "\n" for r in requests).encode(),
        capture_output=True,
        env=cli_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = lines_of(log.read_bytes())
    assert [(r["verdict"], r["policyHash"]) for r in rows] == [
        ("pass", True),
        ("pass", True),
        ("deny", True),
    ]
    (answer,) = [json.loads(line) for line in done.stdout.splitlines() if b'"isError":true' in line]
    text = answer["result"]["content"][0]["text"]
    assert f"policy hash {PREFIX}\u2026" in text
    assert f"policy hash {PREFIX}" in done.stderr.decode()  # the stderr note
    # the echo server echoes the forwarded calls (the secrets in them) on stdout: the
    # proxy's own words are the log, the denial answer and stderr
    assert secret_free(log.read_bytes(), done.stderr, json.dumps(answer))


def test_mcp_gateway_with_a_path_naming_the_secret(tmp_path: Path) -> None:
    """The gateway in front of a real SDK server; the ignored path is the secret itself."""
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    import anyio
    from remote_helpers import gateway, upstream
    from test_mcp_gateway import connect, in_session, received, text_of

    path = tmp_path / "policy.toml"
    path.write_text('[[tools]]\nmatch = "echo"\nargs_ignore = ["$.text"]\n', encoding="utf-8")
    outcome: dict[str, Any] = {}
    with (
        upstream(tmp_path) as (up, calls),
        gateway(tmp_path, up, "--policy", str(path)) as (url, log, stderr),
    ):

        async def run() -> None:
            async with connect(url) as client:
                outcome["a"] = [
                    await client.call_tool("echo", {"text": f"{NONCE}{n}"}, meta=in_session("a"))
                    for n in range(3)
                ]

        anyio.run(run)
        outcome["seen"] = received(calls)
    first, second, third = outcome["a"]
    assert not first.is_error and not second.is_error and third.is_error
    prefix = call_hash("echo", {})[:12]
    assert f"policy hash {prefix}\u2026" in text_of(third)
    assert outcome["seen"] == ["echo", "echo"]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["verdict"], r["hashPrefix"], r["policyHash"]) for r in rows] == [
        ("pass", prefix, True),
        ("pass", prefix, True),
        ("deny", prefix, True),
    ]
    assert secret_free(log.read_bytes(), stderr.read_bytes(), text_of(third))


@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis"])
def test_library_on_each_store(
    policy: str, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    store = {
        "memory": None,
        "sqlite": str(tmp_path / "state.db"),
        "redis": request.getfixturevalue("redis_url") if backend == "redis" else None,
    }[backend]
    brakes = [LoopBrake(policy=policy, store=store) for _ in range(2)]
    if store is None:
        brakes = brakes[:1] * 2  # one process: the same brake
    verdicts = [brakes[n % 2].check("poll", args(n), session_id="s") for n in range(3)]
    assert [(v.count, v.denied, v.policy_hash) for v in verdicts] == [
        (1, False, True),
        (2, False, True),
        (3, True, True),
    ]
    assert {v.hash_prefix for v in verdicts} == {PREFIX}
    with pytest.raises(Exception) as caught:
        brakes[0].enforce("poll", args(7), session_id="s")
    assert f"policy hash {PREFIX}" in str(caught.value)
    assert secret_free(repr(verdicts), str(caught.value), repr(caught.value.args))
    if backend == "sqlite":
        assert secret_free(Path(store).read_bytes())  # type: ignore[arg-type]
    other = brakes[0].check("other", args(1), session_id="s")
    assert not other.policy_hash and other.hash_prefix == call_hash("other", args(1))[:12]


def test_an_integrations_denial_data_marks_the_policy_hash(policy: str) -> None:
    from loop_brake_cli.integrations._denial import denial_fields
    from loop_brake_cli.integrations._session import SessionBrake, make_brake

    seam = SessionBrake(
        make_brake(None, policy=policy),
        session_key=None,
        default_key=lambda ctx: "s",
        where="test",
    )
    verdicts = [seam.judge("s", "poll", args(n)) for n in range(3)]
    fields = denial_fields(verdicts[-1])
    assert fields["policyHash"] is True and fields["hashPrefix"] == PREFIX
    assert "policyHash" not in denial_fields(
        LoopBrake().check("poll", args(0))._replace(denied=True)
    )
    assert secret_free(json.dumps(fields), verdicts[-1].message)


def test_mcp_sdk_integration(policy: str) -> None:
    """A real MCP SDK server with the brake attached under the policy; the SDK's client
    polls with a fresh secret nonce each time: the third call is refused, and the
    denial (text and ``_meta``) names the policy hash."""
    pytest.importorskip("mcp", reason="needs the mcp extra")
    import anyio
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from loop_brake_cli.integrations.mcp import attach

    ran: list[int] = []
    server = MCPServer("braked")

    @server.tool()
    def poll(job: int, nonce: str, auth: dict) -> str:
        """Poll a job."""
        ran.append(job)
        return "pending"

    attach(server, policy=policy)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool("poll", args(n)) for n in range(3)]

    results = anyio.run(main)
    assert [r.is_error for r in results] == [False, False, True]
    assert ran == [42, 42]
    denial = results[2]
    assert f"policy hash {PREFIX}\u2026" in denial.content[0].text
    meta = denial.meta["loop-brake/denial"]
    assert meta["policyHash"] is True and meta["hashPrefix"] == PREFIX
    assert secret_free(denial.content[0].text, json.dumps(meta))
