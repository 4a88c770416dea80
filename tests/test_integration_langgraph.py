"""The brake in real LangGraph graphs without ``create_agent``: a hand-built
``StateGraph`` whose tools node is a ``ToolNode`` with the brake as its
``wrap_tool_call``, and the prebuilt ``create_react_agent``, driven by
langchain_core's scripted fake chat model (no network)."""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs the langgraph extra")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.langgraph import LoopBrakeWrapper  # noqa: E402

CANARY = "sk-canary-77aa10"


class ScriptedModel(GenericFakeChatModel):
    """The fake chat model, with tools bound as a no-op and every prompt kept."""

    seen: list[list[Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def turn(tag: str, *queries: str) -> AIMessage:
    calls = [{"name": "search", "args": {"q": q}, "id": f"{tag}{i}"} for i, q in enumerate(queries)]
    return AIMessage(content="", tool_calls=calls)


def script(*queries: str, tag: str = "c") -> ScriptedModel:
    turns = [turn(f"{tag}{n}-", q) for n, q in enumerate(queries)]
    return ScriptedModel(messages=iter([*turns, "done"]), seen=[])


def make_search(ran: list[str], result: Any = None) -> Any:
    @tool
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return search


def graph(model: ScriptedModel, tools: ToolNode) -> Any:
    """The classic hand-built agent graph: model node, tools node, loop back."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def braked(model: ScriptedModel, ran: list[str], wrapper: LoopBrakeWrapper, **kw: Any) -> Any:
    node = ToolNode(
        [make_search(ran, **kw)], wrap_tool_call=wrapper, awrap_tool_call=wrapper.awrap_tool_call
    )
    return graph(model, node)


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_denied_then_a_different_call_runs() -> None:
    ran: list[str] = []
    model = script(*["weather"] * 4, "news")
    result = braked(model, ran, LoopBrakeWrapper(max_repeats=3)).invoke(
        {"messages": [("user", "weather?")]}, {"configurable": {"thread_id": "t1"}}
    )
    assert ran == ["weather", "weather", "news"]
    replies = tool_messages(result)
    assert [m.status for m in replies] == ["success", "success", "error", "error", "success"]
    assert replies[2].content == denial(3) and replies[3].content == denial(4)
    assert replies[2].tool_call_id == "c2-0" and replies[2].artifact["count"] == 3
    # The model was handed the denial on its next turn.
    assert any(isinstance(m, ToolMessage) and m.content == denial(3) for m in model.seen[3])


def test_the_prebuilt_react_agent_takes_the_braked_tool_node() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent: deprecated, still shipped
        from langgraph.prebuilt import create_react_agent

        ran: list[str] = []
        wrapper = LoopBrakeWrapper(max_repeats=3)
        node = ToolNode([make_search(ran)], wrap_tool_call=wrapper)
        agent = create_react_agent(script(*["weather"] * 3), node)
    result = agent.invoke({"messages": [("user", "weather?")]})
    assert ran == ["weather", "weather"]
    assert [m.status for m in tool_messages(result)] == ["success", "success", "error"]


def test_parallel_identical_calls_in_one_turn() -> None:
    ran: list[str] = []
    model = ScriptedModel(messages=iter([turn("p", "weather", "weather", "weather"), "done"]))
    app = braked(model, ran, LoopBrakeWrapper(max_repeats=3))
    result = asyncio.run(app.ainvoke({"messages": [("user", "go")]}))
    assert ran == ["weather", "weather"]
    assert sorted(m.status for m in tool_messages(result)) == ["error", "success", "success"]


def test_two_runs_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    wrapper = LoopBrakeWrapper(max_repeats=3)

    async def run(config: dict[str, Any]) -> list[str]:
        app = braked(script(*["weather"] * 3), ran, wrapper)
        result = await app.ainvoke({"messages": [("user", "go")]}, config)
        return [m.status for m in tool_messages(result)]

    async def main() -> list[list[str]]:
        threads = [{"configurable": {"thread_id": name}} for name in "ab"]
        return list(await asyncio.gather(*map(run, [*threads, {}, {}])))  # and two without

    assert asyncio.run(main()) == [["success", "success", "error"]] * 4
    assert len(ran) == 8


def test_stop_interrupts_the_graph(tmp_path: Any) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    model = script(*["weather"] * 6)
    app = braked(model, ran, LoopBrakeWrapper(max_repeats=3, policy=str(policy)))
    result = app.invoke({"messages": [("user", "go")]})
    assert ran == ["weather", "weather"]
    (stop,) = result["__interrupt__"]
    assert stop.value["rule"] == "stop" and stop.value["message"].startswith(
        "loop brake: 2 calls in a row were denied"
    )
    assert len(model.seen) == 4  # not asked again


def test_progress_feeds_results(tmp_path: Any) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    wrapper = LoopBrakeWrapper(max_repeats=3, policy=str(policy))
    result = braked(script(*["job"] * 4), [], wrapper, result=lambda: f"tick {next(ticks)}")
    statuses = [m.status for m in tool_messages(result.invoke({"messages": [("user", "go")]}))]
    assert statuses == ["success"] * 4  # results changed: no loop
    stuck = braked(script(*["job"] * 3), [], wrapper, result=lambda: "tick 0")
    statuses = [m.status for m in tool_messages(stuck.invoke({"messages": [("user", "go")]}))]
    assert statuses == ["success", "success", "error"]


def test_canary_reaches_no_message_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    model = script(*[CANARY] * 3)
    result = braked(model, ran, LoopBrakeWrapper(max_repeats=2)).invoke(
        {"messages": [("user", "go")]}
    )
    denials = [m for m in tool_messages(result) if m.status == "error"]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [m.model_dump_json() for m in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


def test_without_the_wrapper_the_graph_runs_every_call() -> None:
    ran: list[str] = []
    result = graph(script(*["weather"] * 3), ToolNode([make_search(ran)])).invoke(
        {"messages": [("user", "go")]}
    )
    assert ran == ["weather"] * 3 and len(tool_messages(result)) == 3


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn; on c40a10b 6 of 6 ran."""
    ran: list[str] = []
    model = ScriptedModel(messages=iter([*(turn("call_", "weather") for _ in range(6)), "done"]))
    result = braked(model, ran, LoopBrakeWrapper()).invoke(
        {"messages": [("user", "weather?")]}, {"configurable": {"thread_id": "t1"}}
    )
    assert ran == ["weather", "weather"]
    assert [m.status for m in tool_messages(result)] == ["success"] * 2 + ["error"] * 4
