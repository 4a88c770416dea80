"""The gateway's decision for one POSTed body, without HTTP: what is answered, what is logged."""

from __future__ import annotations

import json
from typing import Any

from loop_brake_cli.mcp_gateway.decide import GatewayBrake

CANARY = "CANARY-31d9-argument"


def brake(**options: Any) -> tuple[GatewayBrake, list[dict[str, Any]], list[str]]:
    log: list[dict[str, Any]] = []
    notes: list[str] = []
    return GatewayBrake(3, log.append, notes.append, **options), log, notes


def body(call_id: str, session: str = "s", **params: Any) -> bytes:
    p = {"name": "echo", "arguments": {"text": CANARY}, "_meta": {"loop-brake/session": session}}
    p.update(params)
    return ('{"jsonrpc":"2.0","id":' + call_id + ',"method":"tools/call","params":').encode() + (
        json.dumps(p).encode() + b"}"
    )


def test_the_third_call_is_answered_with_the_id_as_written() -> None:
    gateway, log, notes = brake()
    assert gateway.decide(body("1"), {}, None) is None
    assert gateway.decide(body("2"), {}, None) is None
    status, answer = gateway.decide(body("12345678901234567891"), {}, None)  # type: ignore[misc]
    assert status == 200
    assert answer.startswith(b'{"jsonrpc":"2.0","id":12345678901234567891,"result":')
    assert json.loads(answer)["result"]["isError"] is True
    assert [line["verdict"] for line in log] == ["pass", "pass", "deny"]
    assert all(line["sessionSource"] == "meta" for line in log)
    assert CANARY not in json.dumps(log) + "".join(notes) + answer.decode()


def test_continuations_batches_and_other_messages() -> None:
    gateway, log, _notes = brake()
    for number in range(5):  # the same call resent with answers: one call going on
        state = {"requestState": f"r{number}"} if number else {}
        assert gateway.decide(body(str(number), **state), {}, None) is None
    assert [line["count"] for line in log] == [1]
    batch = b"[" + body("9") + b"]"
    status, answer = gateway.decide(batch, {}, None)  # type: ignore[misc]
    assert status == 400 and b"batch" in answer
    assert gateway.decide(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {}, None) is None
    assert gateway.decide(b"[]", {}, None) is None
    assert gateway.decide(b"{not json", {}, None) is None
    assert log[-1]["verdict"] == "error"


def test_shadow_forwards_what_it_would_deny() -> None:
    gateway, log, notes = brake(shadow=True)
    for number in range(3):
        assert gateway.decide(body(str(number)), {}, None) is None
    assert log[-1]["verdict"] == "deny"
    assert notes and notes[0].startswith("shadow: would deny")


def test_window_denies_a_call_seen_three_times_among_others() -> None:
    """Issue 29's [window] in the gateway: A, B, A, C, A in one session, the fifth denied
    with rule window; nothing of the arguments in the log, the notes or the answer."""
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("[window]\ncalls = 5\nmax_repeats = 3\n", "inline.toml")
    gateway, log, notes = brake(policy=policy)
    texts = [CANARY, "b", CANARY, "c"]
    for number, text in enumerate(texts):
        assert gateway.decide(body(str(number), arguments={"text": text}), {}, None) is None
    status, answer = gateway.decide(body("9"), {}, None)  # type: ignore[misc]
    assert status == 200 and json.loads(answer)["result"]["isError"] is True
    assert [(line["verdict"], line["rule"]) for line in log] == [("pass", "streak")] * 4 + [
        ("deny", "window")
    ]
    assert (log[-1]["window"], log[-1]["seen"], log[-1]["limit"]) == (5, 3, 3)
    assert CANARY not in json.dumps(log) + "".join(notes) + answer.decode()


def test_same_error_is_refused_before_listening(tmp_path) -> None:
    """The gateway reads no results: a [same_error] policy is exit 2, as progress is."""
    from conftest import run_cli

    policy = tmp_path / "policy.toml"
    policy.write_text("[same_error]\nafter = 2\n")
    result = run_cli("mcp-gateway", "--policy", str(policy), "--upstream", "http://127.0.0.1:9/mcp")
    assert result.returncode == 2
    assert b"a policy with progress or [same_error] is not supported" in result.stderr
