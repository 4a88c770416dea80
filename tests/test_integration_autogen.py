"""The brake in a real AutoGen AgentChat ``AssistantAgent``, driven by autogen-ext's
``ReplayChatCompletionClient`` (AutoGen's own scripted model client; no network)
that asks for the same tool call again and again."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat", reason="needs the autogen extra")
pytest.importorskip("autogen_ext.models.replay", reason="needs autogen-ext (the test extra)")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_core.tools import FunctionTool, StaticWorkbench  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.autogen import LoopBrakeWorkbench, attach, dispose  # noqa: E402

CANARY = "sk-canary-a7c0e1"
USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


def turn(tag: str, *queries: str) -> CreateResult:
    calls = [
        FunctionCall(id=f"{tag}{i}", name="search", arguments=f'{{"q": "{q}"}}')
        for i, q in enumerate(queries)
    ]
    return CreateResult(finish_reason="function_calls", content=calls, usage=USAGE, cached=False)


def client(*queries: str | tuple[str, ...]) -> ReplayChatCompletionClient:
    turns = [turn(f"c{n}-", *((q,) if isinstance(q, str) else q)) for n, q in enumerate(queries)]
    done = CreateResult(finish_reason="stop", content="done", usage=USAGE, cached=False)
    info = {"vision": False, "function_calling": True, "json_output": False, "family": "x"}
    return ReplayChatCompletionClient(
        [*turns, done], model_info={**info, "structured_output": False}
    )


def search_tool(ran: list[str], result: Any = None) -> FunctionTool:
    async def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return FunctionTool(search, description="Search the web.")


def agent_with(model: Any, ran: list[str], braked: bool = True, **kw: Any) -> AssistantAgent:
    workbench = StaticWorkbench([search_tool(ran, kw.pop("result", None))])
    return AssistantAgent(
        "looper",
        model_client=model,
        workbench=LoopBrakeWorkbench(workbench, **kw) if braked else workbench,
        max_tool_iterations=20,
    )


def results(task: Any) -> list[Any]:
    """Every tool result of the run, in order."""
    return [
        result
        for message in task.messages
        if message.type == "ToolCallExecutionEvent"
        for result in message.content
    ]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_an_error_result() -> None:
    ran: list[str] = []
    model = client(*["weather"] * 4, "news")
    task = asyncio.run(agent_with(model, ran, max_repeats=3).run(task="weather?"))
    assert ran == ["weather", "weather", "news"]
    got = results(task)
    assert [r.is_error for r in got] == [False, False, True, True, False]
    assert got[2].content == denial(3) and got[3].content == denial(4)


def test_attach_brakes_an_agent_built_with_tools() -> None:
    ran: list[str] = []
    agent = AssistantAgent(
        "looper",
        model_client=client(*["weather"] * 3),
        tools=[search_tool(ran)],
        max_tool_iterations=20,
    )
    brake = attach(agent, max_repeats=3)
    task = asyncio.run(agent.run(task="weather?"))
    assert ran == ["weather", "weather"] and [r.is_error for r in results(task)][-1]
    dispose(agent)
    assert len(brake) == 0
    agent2 = AssistantAgent(
        "free",
        model_client=client(*["weather"] * 3),
        tools=[search_tool(ran)],
        max_tool_iterations=20,
    )
    attach(agent2, max_repeats=3)
    dispose(agent2)
    asyncio.run(agent2.run(task="weather?"))
    assert ran == ["weather"] * 5  # detached: every call ran


def test_parallel_identical_calls_in_one_turn() -> None:
    ran: list[str] = []
    model = client(("weather", "weather", "weather"))
    task = asyncio.run(agent_with(model, ran, max_repeats=3).run(task="go"))
    assert ran == ["weather", "weather"]
    assert sorted(r.is_error for r in results(task)) == [False, False, True]


def test_two_agents_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    brake = LoopBrake(3)
    agents = [agent_with(client(*["weather"] * 3), ran, brake=brake) for _ in range(2)]

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(agent.run(task="go") for agent in agents)))

    for task in asyncio.run(both()):
        assert [r.is_error for r in results(task)] == [False, False, True]
    assert len(ran) == 4


def test_stop_ends_a_teams_run(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    model = client(*["weather"] * 6)
    workbench = LoopBrakeWorkbench(
        StaticWorkbench([search_tool(ran)]), max_repeats=3, policy=str(policy)
    )
    agent = AssistantAgent("looper", model_client=model, workbench=workbench)  # 1 call a turn
    team = RoundRobinGroupChat(
        [agent], termination_condition=workbench.termination() | MaxMessageTermination(40)
    )
    task = asyncio.run(team.run(task="go"))
    assert ran == ["weather", "weather"]
    assert task.stop_reason.startswith("loop brake: 2 calls in a row were denied")
    assert len(results(task)) == 4  # the model was not asked again after the stop


def test_progress_feeds_results(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    ran: list[str] = []
    agent = agent_with(
        client(*["job"] * 4),
        ran,
        max_repeats=3,
        policy=str(policy),
        result=lambda: f"tick {next(ticks)}",
    )
    task = asyncio.run(agent.run(task="poll"))
    assert len(ran) == 4 and not any(r.is_error for r in results(task))


def test_canary_reaches_no_result_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    caplog.set_level(logging.WARNING)
    ran: list[str] = []
    task = asyncio.run(agent_with(client(*[CANARY] * 3), ran, max_repeats=2).run(task="go"))
    denials = [r for r in results(task) if r.is_error]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [d.model_dump_json() for d in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)
