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


# -- issue 36.6: a team's run ends at a stop with a real, token-linked model client ----


def openai_agent(server: Any, ran: list[str], policy: Path, how: str, **kw: Any) -> Any:
    """An agent whose model is autogen-ext's OpenAIChatCompletionClient (which links its
    HTTP request to the run's CancellationToken), talking to the fake server; braked by
    ``attach`` or by a hand-built workbench whose guarded client it gets."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    model = OpenAIChatCompletionClient(model="gpt-4o-2024-08-06", api_key="x", base_url=server.url)
    if how == "bare":  # a hand-built workbench, the agent's own client: not guarded
        workbench = LoopBrakeWorkbench(
            StaticWorkbench([search_tool(ran)]), max_repeats=3, policy=str(policy)
        )
        agent = AssistantAgent("looper", model_client=model, workbench=workbench, **kw)
        return agent, workbench.termination()
    if how == "attach":
        from loop_brake_cli.integrations.autogen import termination

        agent = AssistantAgent("looper", model_client=model, tools=[search_tool(ran)], **kw)
        attach(agent, max_repeats=3, policy=str(policy))
        return agent, termination(agent)
    workbench = LoopBrakeWorkbench(
        StaticWorkbench([search_tool(ran)]), max_repeats=3, policy=str(policy)
    )
    agent = AssistantAgent(
        "looper", model_client=workbench.model_client(model), workbench=workbench, **kw
    )
    return agent, workbench.termination()


async def ends_or_breaks(run: Any) -> Any:
    """The run's result, awaited until it completes or a participant's message handler
    fails (AutoGen's runtime logs it), after which AgentChat's team waits forever."""
    broken = asyncio.Event()
    loop = asyncio.get_running_loop()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            loop.call_soon_threadsafe(broken.set)

    watch = Watch(logging.ERROR)
    logging.getLogger("autogen_core").addHandler(watch)
    try:
        task = asyncio.ensure_future(run)
        failed = asyncio.ensure_future(broken.wait())
        await asyncio.wait({task, failed}, return_when=asyncio.FIRST_COMPLETED)
        failed.cancel()
        assert task.done(), "a participant's handler failed: team.run() would never return"
        return task.result()
    finally:
        logging.getLogger("autogen_core").removeHandler(watch)


@pytest.mark.parametrize("how", ["attach", "workbench", "bare"])
@pytest.mark.parametrize("reflect", [False, True], ids=["loop", "reflect"])
def test_a_teams_run_returns_at_the_stop_with_a_token_linked_client(
    tmp_path: Path, how: str, reflect: bool
) -> None:
    """On c40a10b the stop cancelled the agent's token: the OpenAI client's next model
    call in the same turn (the tool loop's, or the reflection on the result) raised
    CancelledError, which AgentChat's container does not report to the team, and
    ``team.run()`` never returned. Now nothing is cancelled: the guarded client answers
    the stop text (the agent's turn ends) and the termination ends the run. With the
    guard the model was offered tools 4 times (2 calls ran, 2 denied, the second the
    stop) and never asked again; without it (``bare``), the run still returns."""
    from fake_openai_server import FakeOpenAI, text, tool_call

    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    answers = [tool_call("search", {"q": CANARY}, f"call_{n}") for n in range(20)]
    options = {"reflect_on_tool_use": True} if reflect else {"max_tool_iterations": 10}
    with FakeOpenAI(answers, without_tools=text("noted") if reflect else None) as server:
        agent, stops = openai_agent(server, ran, policy, how, **options)
        team = RoundRobinGroupChat([agent], termination_condition=stops | MaxMessageTermination(60))
        task = asyncio.run(ends_or_breaks(team.run(task="go")))
        offered = sum(1 for r in server.requests if r.get("tools"))
        reflections = len(server.requests) - offered
    assert ran == [CANARY, CANARY]
    assert task.stop_reason.startswith("loop brake: ")
    assert "calls in a row were denied" in task.stop_reason
    ours = [r.model_dump_json() for r in results(task) if r.is_error] + [task.stop_reason]
    ours += [m.model_dump_json() for m in task.messages if m.type in ("TextMessage", "StopMessage")]
    assert all(CANARY not in text for text in ours)
    if how == "bare":
        return
    assert offered == 4 and reflections == (3 if reflect else 0)  # none after the stop
    assert [r.is_error for r in results(task)] == [False, False, True, True]
    assert task.stop_reason.startswith("loop brake: 2 calls in a row were denied")


def test_a_single_agent_run_ends_with_the_stop_text(tmp_path: Path) -> None:
    from fake_openai_server import FakeOpenAI, tool_call

    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    answers = [tool_call("search", {"q": "w"}, f"call_{n}") for n in range(20)]
    with FakeOpenAI(answers) as server:
        agent, _ = openai_agent(server, ran, policy, "attach", max_tool_iterations=10)
        task = asyncio.run(ends_or_breaks(agent.run(task="go")))
        asked = len(server.requests)
    assert ran == ["w", "w"] and asked == 4
    assert task.messages[-1].content.startswith("loop brake: 2 calls in a row were denied")
    dispose(agent)  # the agent's own model client is back
    assert type(agent._model_client).__name__ == "OpenAIChatCompletionClient"


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn; on c40a10b 6 of 6 ran (39 of 39 through the
    OpenAI client against a local server that numbers calls per response)."""
    call = FunctionCall(id="call_0", name="search", arguments='{"q": "weather"}')
    turns = [
        CreateResult(finish_reason="function_calls", content=[call], usage=USAGE, cached=False)
        for _ in range(6)
    ]
    done = CreateResult(finish_reason="stop", content="done", usage=USAGE, cached=False)
    info = {"vision": False, "function_calling": True, "json_output": False, "family": "x"}
    model = ReplayChatCompletionClient(
        [*turns, done], model_info={**info, "structured_output": False}
    )
    ran: list[str] = []
    task = asyncio.run(agent_with(model, ran).run(task="weather?"))  # the default limit, 3
    assert ran == ["weather", "weather"]
    assert [r.is_error for r in results(task)] == [False, False, True, True, True, True]
