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


# -- issue 23: the whole run braked, progress, the stop, released runs --------------


def searcher(ran: list[str], answers: list[str] | None = None) -> Any:
    @function_tool
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if answers is None else answers[len(ran) - 1]

    return search


def test_the_tools_of_a_handoff_target_are_braked() -> None:
    """On the old main only the clone's own tools carried the guardrail."""
    ran: list[str] = []
    steps = [[function_call("search", {"q": "w"}, call_id=f"h{i}")] for i in range(3)]
    specialist = Agent(
        name="specialist", model=ScriptedModel([*steps, [assistant_message("done")]]),
        tools=[searcher(ran)],
    )  # fmt: skip
    triage_model = ScriptedModel([[function_call("transfer_to_specialist", {}, call_id="t0")]])
    triage = Agent(name="triage", model=triage_model, handoffs=[specialist])
    guard = LoopBrakeGuardrail(max_repeats=3)
    result = Runner.run_sync(guard.brake_agent(triage), "go", run_config=OFFLINE)
    assert result.final_output == "done" and ran == ["w", "w"]
    assert outputs_seen(specialist.model)["h2"].startswith('loop brake: tool "search"')


def test_the_tools_of_an_agent_used_as_a_tool_are_braked() -> None:
    ran: list[str] = []
    steps = [[function_call("search", {"q": "w"}, call_id=f"n{i}")] for i in range(3)]
    inner_model = ScriptedModel([*steps, [assistant_message("inner done")]])
    inner = Agent(name="inner", model=inner_model, tools=[searcher(ran)])
    outer_model = ScriptedModel(
        [[function_call("research", {"input": "w"}, call_id="o0")], [assistant_message("done")]]
    )
    outer = Agent(
        name="outer", model=outer_model,
        tools=[inner.as_tool(tool_name="research", tool_description="Research.")],
    )  # fmt: skip
    guard = LoopBrakeGuardrail(max_repeats=3)
    result = Runner.run_sync(guard.brake_agent(outer), "go", run_config=OFFLINE)
    assert result.final_output == "done" and ran == ["w", "w"]
    assert outputs_seen(inner_model)["n2"].startswith('loop brake: tool "search"')


def test_the_tools_of_mcp_servers_are_braked(tmp_path: Any) -> None:
    """A real MCP server over stdio (tests/mcp_server.py), its ``echo`` tool called
    three times: the third never reaches the server."""
    import json
    import sys
    from pathlib import Path

    from agents.mcp import MCPServerStdio

    calls = tmp_path / "calls.jsonl"
    server_script = Path(__file__).with_name("mcp_server.py")
    steps = [[function_call("echo", {"text": "hi"}, call_id=f"m{i}")] for i in range(3)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    guard = LoopBrakeGuardrail(max_repeats=3)

    async def main() -> Any:
        params = {
            "command": sys.executable,
            "args": [str(server_script)],
            "env": {"MCP_TEST_CALLS": str(calls)},
        }
        async with MCPServerStdio(params=params) as server:  # type: ignore[arg-type]
            agent = Agent(name="mcp", model=model, mcp_servers=[server])
            return await Runner.run(guard.brake_agent(agent), "go", run_config=OFFLINE)

    result = asyncio.run(main())
    assert result.final_output == "done"
    reached = [json.loads(line)["tool"] for line in calls.read_text().splitlines()]
    assert reached == ["echo", "echo"]
    assert outputs_seen(model)["m2"].startswith('loop brake: tool "echo"')


def test_progress_mode_reads_each_output() -> None:
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("progress = true\n", "inline.toml")
    for answers, denied in (
        ([f"{n}0%" for n in range(5)], []),
        (["running"] * 5, ["c2", "c3", "c4"]),
    ):
        ran: list[str] = []
        model = script([{"q": "build"}] * 5)
        guard = LoopBrakeGuardrail(max_repeats=3, policy=policy)
        agent = guard.brake_agent(Agent(name="poller", model=model, tools=[searcher(ran, answers)]))
        Runner.run_sync(agent, "wait", run_config=OFFLINE)
        seen = outputs_seen(model)
        assert [c for c, text in seen.items() if text.startswith("loop brake")] == denied


def test_a_policy_stop_ends_the_run_with_the_sdk_tripwire() -> None:
    from agents.exceptions import ToolInputGuardrailTripwireTriggered

    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("[stop]\nafter_denials = 2\n", "inline.toml")
    ran: list[str] = []
    steps = [[function_call("search", {"q": CANARY}, call_id=f"c{i}")] for i in range(40)]
    model = ScriptedModel(steps)
    guard = LoopBrakeGuardrail(max_repeats=2, policy=policy)
    agent = guard.brake_agent(Agent(name="looper", model=model, tools=[searcher(ran)]))
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        Runner.run_sync(agent, "go", run_config=OFFLINE)
    assert len(model.calls) == 3 and ran == [CANARY]  # not 40 model calls
    info = stopped.value.output.output_info
    assert info["rule"] == "stop" and info["count"] == 3
    assert CANARY not in repr(stopped.value) and CANARY not in str(info)


def test_runs_release_their_sessions() -> None:
    import gc

    guard = LoopBrakeGuardrail(max_repeats=3)
    for run in range(50):
        ran: list[str] = []
        agent = guard.brake_agent(
            Agent(name="a", model=script([{"q": "w"}], tag=f"r{run}"), tools=[searcher(ran)])
        )
        Runner.run_sync(agent, "go", run_config=OFFLINE)
    gc.collect()
    assert len(guard.brake) == 0  # the old main kept one session per run


def test_a_run_that_is_not_braked_stays_unbraked() -> None:
    """The wrapped ``Agent.get_all_tools`` adds nothing to a run no guard braked."""
    LoopBrakeGuardrail(max_repeats=2).brake_agent(Agent(name="x"))  # wraps get_all_tools
    ran: list[str] = []
    model = script([{"q": "w"}] * 3)
    Runner.run_sync(
        Agent(name="plain", model=model, tools=[searcher(ran)]), "go", run_config=OFFLINE
    )
    assert ran == ["w"] * 3


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn. Within one run the SDK itself runs a call id
    once (a later call with an answered id is not run again): 1 of 6. Across the runs
    of one conversation (``group_id``), each run's ``call_0`` is run by the SDK: on
    c40a10b the brake took each for the same call, 6 of 6 ran; now 2."""
    ran: list[str] = []
    steps: list[Any] = [[function_call("search", {"q": "w"}, call_id="call_0")] for _ in range(6)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    guard = LoopBrakeGuardrail()  # the default limit, 3
    result = Runner.run_sync(make_agent(model, ran, guard), "find it", run_config=OFFLINE)
    assert ran == ["w"] and result.final_output == "done"
    ran.clear()
    conversation = RunConfig(tracing_disabled=True, group_id="conversation-1")
    for _ in range(6):
        model = ScriptedModel(
            [[function_call("search", {"q": "w"}, call_id="call_0")], [assistant_message("ok")]]
        )
        Runner.run_sync(make_agent(model, ran, guard), "again", run_config=conversation)
    assert ran == ["w", "w"]
