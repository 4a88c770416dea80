"""Per-tenant policies in the gateway (issue 37 item 5): the tenants file read with
located errors, a caller's tenant chosen by credential digest, a header the operator
names or a session-name prefix, and each tenant's calls judged under its own limits
in sessions of its own. A real gateway with three kinds of callers is at the end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from loop_brake_cli.mcp_gateway.decide import GatewayBrake
from loop_brake_cli.mcp_gateway.keys import SessionKey, digest
from loop_brake_cli.mcp_gateway.tenants import TenantError, load_tenants

CANARY = "CANARY-4b7e-tenant-argument"
TOKEN_A = "Bearer token-of-team-a-CANARY-91"
TENANTS = """\
header = "X-Team"

[default]
max_repeats = 3

[[tenant]]
name = "team-a"
max_repeats = 2
credentials = ["{a}"]

[[tenant]]
name = "blue"
policy = "blue.toml"
headers = ["blue"]
session_prefixes = ["ci-"]
"""


def write_tenants(tmp_path: Path, text: str = TENANTS) -> Path:
    (tmp_path / "blue.toml").write_text('[[tools]]\nmatch = "*"\nmax_repeats = 5\n')
    path = tmp_path / "tenants.toml"
    path.write_text(text.format(a=digest(TOKEN_A)))
    return path


def body(call_id: int, session: str, text: str = CANARY) -> bytes:
    params = {"name": "echo", "arguments": {"text": text}, "_meta": {"loop-brake/session": session}}
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def first_denied(brake: GatewayBrake, session: str, headers: dict[str, str]) -> int:
    """The number of the first identical call (1-based) the gateway denies."""
    for number in range(1, 10):
        decision = brake.decide(body(number, session), headers, None)
        if isinstance(decision, tuple):
            assert decision[0] == 200
            return number
        brake.answered(decision)
    raise AssertionError("never denied")


def test_each_tenant_gets_its_own_limits_and_the_rest_the_default(tmp_path: Path) -> None:
    tenants = load_tenants(str(write_tenants(tmp_path)), 3, None)
    log: list[dict[str, Any]] = []
    brake = GatewayBrake(9, log.append, lambda _text: None, tenants=tenants)
    assert first_denied(brake, "s", {"authorization": TOKEN_A}) == 2  # team-a: limit 2
    assert first_denied(brake, "s", {"x-team": "blue"}) == 5  # blue's policy: 5
    assert first_denied(brake, "ci-7", {}) == 5  # blue, by the session name's prefix
    assert first_denied(brake, "s", {"x-team": "red"}) == 3  # the default: 3, not -m 9
    sessions = {line["sessionId"] for line in log}
    assert sessions == {
        f"tenant:team-a/auth:{digest(TOKEN_A)}/name:s",
        "tenant:blue/name:s",
        "tenant:blue/name:ci-7",
        "name:s",
    }
    text = json.dumps(log) + brake.metrics.render().decode()
    assert CANARY not in text and TOKEN_A not in text
    assert (
        'loop_brake_calls_total{tenant="team-a",tool="echo",rule="streak",outcome="denied"} 1'
        in (brake.metrics.render().decode())
    )


def test_the_first_matching_tenant_wins_and_a_client_name_cannot_claim_a_tenant(
    tmp_path: Path,
) -> None:
    tenants = load_tenants(str(write_tenants(tmp_path)), 3, None)
    key = SessionKey(f"auth:{digest(TOKEN_A)}/name:ci-1", "meta")
    assert tenants.choose(key, {"x-team": "blue"}).name == "team-a"  # listed first
    forged = SessionKey("name:tenant:team-a/name:s", "meta")  # a client naming a tenant's key
    chosen, tenant = tenants.key(forged, {})
    assert tenant.name is None and chosen.name == "name:tenant:team-a/name:s"
    by_session_id = SessionKey("mcp-session:0123456789abcdef", "mcp-session-id")
    assert tenants.choose(by_session_id, {}).name is None  # no client name: no prefix match


def test_a_session_named_by_the_header_is_matched_by_its_prefix_too(tmp_path: Path) -> None:
    """session_prefixes match the name a client chose, by ``_meta`` or by the
    ``Loop-Brake-Session`` header alike."""
    tenants = load_tenants(str(write_tenants(tmp_path)), 3, None)
    for source in ("meta", "header"):
        chosen, tenant = tenants.key(SessionKey("name:ci-9", source), {})
        assert tenant.name == "blue" and chosen.name == "tenant:blue/name:ci-9", source


def test_a_tenant_without_limits_takes_the_default_s(tmp_path: Path) -> None:
    """A tenant naming neither policy nor max_repeats is judged under ``[default]``'s."""
    path = write_tenants(
        tmp_path,
        '[default]\nmax_repeats = 5\n\n[[tenant]]\nname = "ci"\nsession_prefixes = ["ci-"]\n',
    )
    tenants = load_tenants(str(path), 3, None)
    assert [(t.name, t.max_repeats) for t in tenants.tenants] == [("ci", 5)]
    brake = GatewayBrake(9, lambda _line: None, lambda _text: None, tenants=tenants)
    assert first_denied(brake, "ci-1", {}) == 5
    assert first_denied(brake, "other", {}) == 5


def test_a_credential_longer_than_its_digest_is_refused(tmp_path: Path) -> None:
    """Only the 16 hex digits of a digest: 64 hex digits (a token, or a whole sha256
    pasted) is a located error that does not quote it."""
    pasted = "0123456789abcdef" * 4
    path = write_tenants(tmp_path, f'[[tenant]]\nname = "a"\ncredentials = ["{pasted}"]\n')
    with pytest.raises(TenantError) as caught:
        load_tenants(str(path), 3, None)
    assert caught.value.problems[0].startswith(f"{path}:3: [[tenant]] 1: each of credentials")
    assert pasted not in str(caught.value)


def test_mistakes_are_located_and_never_quote_a_credential(tmp_path: Path) -> None:
    path = write_tenants(
        tmp_path,
        '[[tenant]]\nname = "a"\ncredentials = ["' + TOKEN_A + '"]\n\n'
        '[[tenant]]\nname = "a"\nmax_repeats = 0\nheaders = ["x"]\ncolour = 1\n'
        '[[tenant]]\nname = "b c"\n',
    )
    with pytest.raises(TenantError) as caught:
        load_tenants(str(path), 3, None)
    problems = caught.value.problems
    assert problems == [
        f"{path}:3: [[tenant]] 1: each of credentials must be the 16 hex digits of a "
        "credential's digest (the auth:... of a verdict line), never the credential",
        f"{path}:1: [[tenant]] 1 (a): no credentials, headers or session_prefixes",
        f"{path}:9: [[tenant]] 2: unknown key 'colour'",
        f"{path}:6: [[tenant]] 2: the name 'a' is taken",
        f"{path}:7: [[tenant]] 2 (a): max_repeats must be >= 1",
        f"{path}:8: [[tenant]] 2: headers needs a top-level header = NAME",
        f"{path}:11: [[tenant]] 3: name must be 1-64 of A-Z a-z 0-9 . _ -",
    ]
    assert TOKEN_A not in str(caught.value)
    (tmp_path / "bad.toml").write_text('header = "X"\n[[tenant]\n')
    with pytest.raises(TenantError, match=r"bad\.toml:2: not TOML"):
        load_tenants(str(tmp_path / "bad.toml"), 3, None)
    with pytest.raises(TenantError) as missing:
        load_tenants(str(tmp_path / "none.toml"), 3, None)
    assert missing.value.unopened


def test_the_command_refuses_a_bad_tenants_file_before_listening(tmp_path: Path) -> None:
    from conftest import run_cli

    path = write_tenants(tmp_path, '[[tenant]]\nname = "a"\ncredentials = ["' + TOKEN_A + '"]\n')
    upstream = ("--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:0")
    result = run_cli("mcp-gateway", *upstream, "--tenants", str(path))
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert f"--tenants: {path}:3: [[tenant]] 1: each of credentials" in stderr
    assert TOKEN_A not in stderr and "Traceback" not in stderr
    result = run_cli("mcp-gateway", *upstream, "--tenants", str(tmp_path / "none.toml"))
    assert result.returncode == 3 and b"cannot be read" in result.stderr
    (tmp_path / "blue.toml").write_text("progress = 1\n")  # a tenant's bad policy, located
    path.write_text('[[tenant]]\nname = "b"\npolicy = "blue.toml"\nsession_prefixes = ["x"]\n')
    result = run_cli("mcp-gateway", *upstream, "--tenants", str(path))
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert f"{path}:3: [[tenant]] 1 (b): its policy: {tmp_path / 'blue.toml'}:1:" in stderr


def test_two_tenants_and_the_default_through_one_real_gateway(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    from remote_helpers import gateway, upstream
    from test_mcp_gateway import connect, in_session, verdicts

    path = write_tenants(tmp_path)
    denied_at: dict[str, int] = {}
    with (
        upstream(tmp_path) as (up, _calls),
        gateway(tmp_path, up, "--tenants", str(path), "--metrics") as (url, log, stderr),
    ):

        async def caller(who: str, headers: dict[str, str]) -> None:
            async with connect(url, headers=headers) as client:
                for number in range(1, 10):
                    result = await client.call_tool("echo", {"text": CANARY}, meta=in_session("s"))
                    if result.is_error:
                        denied_at[who] = number
                        return

        async def run() -> None:
            await caller("team-a", {"Authorization": TOKEN_A})
            await caller("blue", {"X-Team": "blue"})
            await caller("anyone", {})

        anyio.run(run)
    assert denied_at == {"team-a": 2, "blue": 5, "anyone": 3}
    sessions = {line["sessionId"] for line in verdicts(log)}
    assert sessions == {
        f"tenant:team-a/auth:{digest(TOKEN_A)}/name:s",
        "tenant:blue/name:s",
        "name:s",
    }
    for where in (log.read_text(), stderr.read_text()):
        assert CANARY not in where and TOKEN_A not in where


def test_the_sample_tenants_file_is_the_one_the_docs_show_and_it_loads() -> None:
    from conftest import ROOT

    sample = ROOT / "samples" / "tenants" / "tenants.toml"
    docs = (ROOT / "docs" / "mcp-proxy.md").read_text()
    assert "```toml\n" + sample.read_text() + "```" in docs
    tenants = load_tenants(str(sample), 3, None)
    assert [(t.name, t.max_repeats) for t in tenants.tenants] == [("batch", 10), ("ci", None)]
    assert tenants.tenants[1].policy is not None and tenants.header == "x-team"
    ci = SessionKey("name:ci-42", "meta")
    assert tenants.choose(ci, {}).name == "ci"


def test_tenants_sharing_a_real_store_keep_their_own_limits(tmp_path: Path) -> None:
    """With --store every tenant counts in the same store (a worker pool), apart."""
    import asyncio

    from loop_brake_cli.stores import open_store

    tenants = load_tenants(str(write_tenants(tmp_path)), 3, None)
    store = open_store(str(tmp_path / "state.sqlite"))
    brake = GatewayBrake(9, lambda _line: None, lambda _text: None, tenants=tenants, store=store)

    async def first_denied_async(headers: dict[str, str]) -> int:
        for number in range(1, 10):
            decision = await brake.decide_async(body(number, "s"), headers, None)
            if isinstance(decision, tuple):
                return number
            brake.answered(decision)
            await decision.ended.wait()
        raise AssertionError("never denied")

    async def run() -> list[int]:
        return [
            await first_denied_async({"authorization": TOKEN_A}),
            await first_denied_async({"x-team": "blue"}),
            await first_denied_async({}),
        ]

    try:
        assert asyncio.run(run()) == [2, 5, 3]
    finally:
        brake.close()
    names = {row.session for row in store.sessions()[0]}
    assert names == {f"tenant:team-a/auth:{digest(TOKEN_A)}/name:s", "tenant:blue/name:s", "name:s"}


def test_session_prefixes_no_believed_source_can_match_are_a_located_mistake(
    tmp_path: Path,
) -> None:
    """--session-from without meta and header: a prefix of a name no client can give the
    gateway would silently never match, so the file is refused (the command: exit 2)."""
    path = write_tenants(tmp_path)
    with pytest.raises(TenantError) as caught:
        load_tenants(str(path), 3, None, client_names=False)
    assert str(caught.value) == (
        f"{path}:15: [[tenant]] 2 (blue): session_prefixes never match: --session-from "
        "believes no session name a client chooses (neither meta nor header)"
    )
    assert load_tenants(str(path), 3, None, client_names=True).tenants[1].prefixes == ("ci-",)
    import socket

    from conftest import run_cli

    with socket.socket() as taken:  # a gateway that got past the check exits, never hangs
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        upstream = ("--upstream", "http://127.0.0.1:9/mcp", "--listen", listen)
        result = run_cli(
            "mcp-gateway", *upstream, "--tenants", str(path), "--session-from", "mcp-session-id"
        )
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert stderr.splitlines() == [f"loop-brake mcp-gateway: --tenants: {caught.value}"]


def test_a_credential_still_picks_its_tenant_when_only_names_are_believed(
    tmp_path: Path,
) -> None:
    """--session-from meta: Authorization no longer keys a call, but it still scopes the
    name it is under, so its tenant (chosen by credential digest) is still its own."""
    tenants = load_tenants(str(write_tenants(tmp_path)), 3, None)
    log: list[dict[str, Any]] = []
    brake = GatewayBrake(9, log.append, lambda _text: None, tenants=tenants, session_from=("meta",))
    assert first_denied(brake, "s", {"authorization": TOKEN_A}) == 2  # team-a: limit 2
    assert {line["sessionId"] for line in log} == {f"tenant:team-a/auth:{digest(TOKEN_A)}/name:s"}
