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
