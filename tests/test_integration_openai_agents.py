"""The brake in a real OpenAI Agents SDK run, driven by the SDK's own
``agents.testing.ScriptedModel``: the same tool call again and again, then a
different one. Tracing is off, so nothing leaves the process."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the openai-agents extra")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from loop_brake_cli import LoopBrake, call_hash, hash_prefix  # noqa: E402
from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail  # noqa: E402

CANARY = "sk-canary-91be3d"
OFFLINE = RunConfig(tracing_disabled=True)


def script(calls: list[dict[str, Any]], tag: str = "") -> ScriptedModel:
    steps: list[Any] = [
        [function_call("search", args, call_id=f"{tag}c{i}")] for i, args in enumerate(calls)
    ]
    return ScriptedModel([*steps, [assistant_message("done")]])


def make_agent(model: ScriptedModel, ran: list[str], guard: LoopBrakeGuardrail) -> Agent[Any]:
    @function_tool
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}"

    return guard.brake_agent(Agent(name="looper", model=model, tools=[search]))


def outputs_seen(model: ScriptedModel) -> dict[str, str]:
    """Every function call output the model was given, by call id."""
    seen: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                seen[item["call_id"]] = item["output"]
    return seen


def expected_message(args: dict[str, Any], count: int = 3) -> str:
    reference = LoopBrake(3)
    for _ in range(count):
        verdict = reference.check("search", args)
    return verdict.message


def test_third_identical_call_is_denied_then_a_different_call_runs() -> None:
    ran: list[str] = []
    model = script([{"q": "weather"}] * 4 + [{"q": "news"}])
    guard = LoopBrakeGuardrail(max_repeats=3)
    result = Runner.run_sync(make_agent(model, ran, guard), "find it", run_config=OFFLINE)
    assert result.final_output == "done"
    assert ran == ["weather", "weather", "news"]
    seen = outputs_seen(model)
    assert seen["c0"] == seen["c1"] == "results for weather"
    assert seen["c2"] == expected_message({"q": "weather"})
    assert seen["c3"] == expected_message({"q": "weather"}, 4)
    assert hash_prefix(call_hash("search", {"q": "weather"})) in seen["c2"]
    assert seen["c4"] == "results for news"
    rejected = [
        r.output.output_info
        for r in result.tool_input_guardrail_results
        if r.output.behavior["type"] == "reject_content"
    ]
    assert [info["code"] for info in rejected] == ["LOOP_BRAKE", "LOOP_BRAKE"]
    assert rejected[0]["count"] == 3 and rejected[0]["maxRepeats"] == 3


def test_two_runs_in_parallel_do_not_share_a_streak() -> None:
    ran: list[str] = []
    guard = LoopBrakeGuardrail(max_repeats=3)

    async def run(tag: str) -> dict[str, str]:
        model = script([{"q": "weather"}] * 3, tag=tag)
        await Runner.run(make_agent(model, ran, guard), "go", run_config=OFFLINE)
        return outputs_seen(model)

    async def main() -> list[dict[str, str]]:
        return list(await asyncio.gather(run("a"), run("b")))

    for tag, seen in zip("ab", asyncio.run(main()), strict=True):
        assert seen[f"{tag}c1"] == "results for weather"
        assert seen[f"{tag}c2"] == expected_message({"q": "weather"})
    assert len(ran) == 4


def test_a_conversation_group_id_carries_the_streak_across_runs() -> None:
    ran: list[str] = []
    guard = LoopBrakeGuardrail(max_repeats=3)
    config = RunConfig(tracing_disabled=True, group_id="conversation-1")
    first = script([{"q": "weather"}] * 2, tag="1")
    Runner.run_sync(make_agent(first, ran, guard), "go", run_config=config)
    second = script([{"q": "weather"}], tag="2")
    Runner.run_sync(make_agent(second, ran, guard), "again", run_config=config)
    assert outputs_seen(second)["2c0"] == expected_message({"q": "weather"})
    assert len(ran) == 2


def test_canary_in_arguments_reaches_no_log_or_message(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    model = script([{"q": CANARY}] * 3)
    result = Runner.run_sync(
        make_agent(model, ran, LoopBrakeGuardrail(max_repeats=2)), "go", run_config=OFFLINE
    )
    seen = outputs_seen(model)
    assert len(ran) == 1 and seen["c1"].startswith("loop brake: ") and seen["c2"] != seen["c1"]
    infos = [repr(r.output) for r in result.tool_input_guardrail_results]
    out, err = capfd.readouterr()
    shown = [seen["c1"], seen["c2"], *infos, out, err]
    assert all(CANARY not in text for text in shown)
    # The SDK's own debug log may quote model output; the brake adds no record of its own.
    assert not [r for r in caplog.records if r.name.startswith("loop_brake")]
