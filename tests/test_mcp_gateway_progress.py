"""The gateway reads the results it forwards (issue 37 item 5): a policy's progress
mode (a changed result restarts the streak) and ``[same_error]`` (identical errors
in a row deny the tool's next call), from digests only, as every front-end does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.mcp_gateway.decide import Forward, GatewayBrake

CANARY = "CANARY-2c5d-progress-argument"
RESULT_CANARY = "CANARY-result-text-77"


def policy(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return load_policy(str(path))


def body(call_id: int, tool: str = "echo", text: str = CANARY) -> bytes:
    params = {"name": tool, "arguments": {"text": text}, "_meta": {"loop-brake/session": "s"}}
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def text_result(text: str, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def run(brake: GatewayBrake, results: list[dict[str, Any]], tool: str = "echo") -> list[str]:
    """One call per result, each answered with it (told as the application tells it);
    each call's verdict: "pass" or the denial's rule."""
    verdicts: list[str] = []

    async def go() -> None:
        for number, result in enumerate(results):
            decision = await brake.decide_async(
                body(number, tool, f"{CANARY}{number}" if tool == "fail" else CANARY), {}, None
            )
            if isinstance(decision, tuple):
                verdicts.append("denied")
                continue
            assert isinstance(decision, Forward)
            assert brake.reads_results(decision)
            await brake.result(decision, result)
            brake.answered(decision)
            await decision.ended.wait()
            verdicts.append("pass")

    asyncio.run(go())
    return verdicts


@pytest.mark.parametrize("store", [False, True])
def test_a_changing_result_restarts_the_streak_an_identical_one_does_not(
    tmp_path: Path, store: bool
) -> None:
    from loop_brake_cli.stores import open_store

    def gateway() -> tuple[GatewayBrake, list[dict[str, Any]]]:
        log: list[dict[str, Any]] = []
        table = (
            open_store(str(tmp_path / f"s{len(list(tmp_path.iterdir()))}.sqlite"))
            if store
            else None
        )
        rules = policy(tmp_path, "progress = true\n")
        return GatewayBrake(3, log.append, lambda _t: None, policy=rules, store=table), log

    brake, _log = gateway()
    changing = [text_result(f"{RESULT_CANARY} {n}") for n in range(6)]
    assert run(brake, changing) == ["pass"] * 6
    brake.close()
    brake, log = gateway()
    same = [text_result(RESULT_CANARY)] * 4
    assert run(brake, same) == ["pass", "pass", "denied", "denied"]
    brake.close()
    assert [line["verdict"] for line in log] == ["pass", "pass", "deny", "deny"]
    assert log[2]["identicalResults"] == 2
    assert RESULT_CANARY not in json.dumps(log) and CANARY not in json.dumps(log)


def test_the_same_error_again_denies_the_tools_next_call(tmp_path: Path) -> None:
    log: list[dict[str, Any]] = []
    rules = policy(tmp_path, "[same_error]\nafter = 2\n")
    brake = GatewayBrake(9, log.append, lambda _t: None, policy=rules)
    errors = [text_result(RESULT_CANARY, error=True)] * 3
    assert run(brake, errors, tool="fail") == ["pass", "pass", "denied"]
    assert log[2]["rule"] == "same_error" and log[2]["errors"] == 2
    assert RESULT_CANARY not in json.dumps(log)


def test_without_such_a_policy_no_result_is_read(tmp_path: Path) -> None:
    brake = GatewayBrake(3, lambda _l: None, lambda _t: None)
    decision = brake.decide(body(1), {}, None)
    assert isinstance(decision, Forward) and not brake.reads_results(decision)


@pytest.mark.parametrize("json_answers", [False, True])
def test_progress_and_same_error_through_a_real_gateway(tmp_path: Path, json_answers: bool) -> None:
    """SSE answers (the SDK's default) and plain JSON bodies (--json)."""
    pytest.importorskip("mcp", reason="the MCP SDK is in the test extra")
    from remote_helpers import gateway, upstream
    from test_mcp_gateway import connect, in_session, verdicts

    rules = tmp_path / "policy.toml"
    rules.write_text("progress = true\n[same_error]\nafter = 2\n")
    outcome: dict[str, list[bool]] = {}
    options = ("--json",) if json_answers else ()
    with (
        upstream(tmp_path, *options) as (up, _calls),
        gateway(tmp_path, up, "--policy", str(rules)) as (url, log, stderr),
    ):

        async def calls() -> None:
            async with connect(url) as client:
                meta = in_session("p")
                outcome["tick"] = [
                    (await client.call_tool("tick", {}, meta=meta)).is_error for _ in range(5)
                ]
                outcome["echo"] = [
                    (await client.call_tool("echo", {"text": CANARY}, meta=meta)).is_error
                    for _ in range(4)
                ]
                outcome["fail"] = [
                    (await client.call_tool("fail", {"text": f"{CANARY}{n}"}, meta=meta)).is_error
                    for n in range(3)
                ]

        anyio.run(calls)
    assert outcome["tick"] == [False] * 5  # the same call, a new result each time
    assert outcome["echo"] == [False, False, True, True]  # identical results: a loop
    assert outcome["fail"] == [True, True, True]  # two errors, then denied
    lines = verdicts(log)
    assert [line["verdict"] for line in lines][-3:] == ["pass", "pass", "deny"]
    assert lines[-1]["rule"] == "same_error"
    for where in (log.read_text(), stderr.read_text()):
        assert CANARY not in where and "the service is down" not in where


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
@pytest.mark.parametrize("warning", [None, "loop brake: warning"])
def test_the_result_is_read_cut_anywhere_and_told_before_its_bytes_pass(
    kind: str, warning: str | None
) -> None:
    """The call's result (the response with its id; another id's is not it) is read
    from the answer however it is cut, and told before the chunk carrying it passes."""
    from loop_brake_cli.mcp_gateway.app import _Reply, _warned, _watching

    response = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"r"}]}}'
    other = response.replace(b'"id":7', b'"id":"7"').replace(b'"r"', b'"x"')
    if kind == "application/json":
        body = response
    else:
        body = b"event: message\r\ndata: " + other + b"\r\n\r\ndata: " + response + b"\n\n"

    async def collect(size: int) -> tuple[list[Any], int]:
        told: list[Any] = []
        passed = 0

        async def chunks():
            for at in range(0, len(body), size):
                yield body[at : at + size]

        async def on_result(result: Any) -> None:
            told.append((result, passed))

        reply = _Reply(7, warning)
        reply.on_result = on_result
        read = _warned if warning is not None else _watching
        async for part in read(chunks(), kind, reply):
            passed += len(part)
        return told, passed

    for size in (1, 7, 64, len(body)):
        told, passed = anyio.run(collect, size)
        assert [result for result, _ in told] == [{"content": [{"type": "text", "text": "r"}]}]
        assert told[0][1] < len(body)  # told before the last of its bytes passed
        assert passed >= len(body)


def test_the_same_result_again_whatever_the_arguments(tmp_path: Path) -> None:
    log: list[dict[str, Any]] = []
    rules = policy(tmp_path, "[same_result]\nafter = 2\n")
    brake = GatewayBrake(9, log.append, lambda _t: None, policy=rules)
    same = [text_result(RESULT_CANARY)] * 3
    assert run(brake, same, tool="fail") == ["pass", "pass", "denied"]  # new arguments each
    assert log[2]["rule"] == "same_result"
    assert RESULT_CANARY not in json.dumps(log)
