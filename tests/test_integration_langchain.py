"""The brake in a real LangChain v1 agent (``create_agent``), driven by a scripted
fake chat model (langchain_core's ``GenericFakeChatModel``) that asks for the
same tool call again and again, then a different one."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("langchain", reason="needs the langchain extra")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from loop_brake_cli import LoopBrake, call_hash, hash_prefix  # noqa: E402
from loop_brake_cli.integrations.langchain import LoopBrakeMiddleware  # noqa: E402

CANARY = "sk-canary-0c4ab2"


class ScriptedModel(GenericFakeChatModel):
    """The fake chat model, with tools bound as a no-op and every prompt kept."""

    seen: list[list[Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script(calls: list[dict[str, Any]], tag: str = "") -> ScriptedModel:
    turns: list[AIMessage | str] = [
        AIMessage(content="", tool_calls=[{"name": "search", "args": args, "id": f"{tag}c{i}"}])
        for i, args in enumerate(calls)
    ]
    return ScriptedModel(messages=iter([*turns, "done"]), seen=[])


def make_agent(model: ScriptedModel, ran: list[str], middleware: LoopBrakeMiddleware) -> Any:
    @tool
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}"

    return create_agent(model, [search], middleware=[middleware], checkpointer=InMemorySaver())


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_third_identical_call_is_denied_then_a_different_call_runs() -> None:
    ran: list[str] = []
    model = script([{"q": "weather"}] * 4 + [{"q": "news"}])
    middleware = LoopBrakeMiddleware(max_repeats=3)
    agent = make_agent(model, ran, middleware)
    result = agent.invoke(
        {"messages": [("user", "find the weather")]}, {"configurable": {"thread_id": "t1"}}
    )
    assert ran == ["weather", "weather", "news"]
    replies = tool_messages(result)
    assert [m.status for m in replies] == ["success", "success", "error", "error", "success"]
    denial = replies[2]
    reference = LoopBrake(3)
    for _ in range(3):
        expected = reference.check("search", {"q": "weather"})
    assert denial.content == expected.message
    assert denial.tool_call_id == "c2" and denial.name == "search"
    assert hash_prefix(call_hash("search", {"q": "weather"})) in denial.content
    assert denial.artifact["code"] == "LOOP_BRAKE" and denial.artifact["count"] == 3
    # The model itself was handed the denial on its next turn.
    next_prompt = model.seen[3]
    assert any(isinstance(m, ToolMessage) and m.content == expected.message for m in next_prompt)
    assert middleware.brake.check("search", {"q": "news"}, session_id="t1").count == 2


def test_two_threads_in_parallel_do_not_share_a_streak() -> None:
    ran: list[str] = []
    middleware = LoopBrakeMiddleware(max_repeats=3)

    async def thread(name: str) -> list[str]:
        agent = make_agent(script([{"q": "weather"}] * 3, tag=name), ran, middleware)
        result = await agent.ainvoke(
            {"messages": [("user", "go")]}, {"configurable": {"thread_id": name}}
        )
        return [m.status for m in tool_messages(result)]

    async def main() -> list[list[str]]:
        return list(await asyncio.gather(thread("a"), thread("b")))

    statuses = asyncio.run(main())
    assert statuses == [["success", "success", "error"]] * 2
    assert len(ran) == 4


def test_canary_in_arguments_reaches_no_log_or_message(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    model = script([{"q": CANARY}] * 3)
    agent = make_agent(model, ran, LoopBrakeMiddleware(max_repeats=2))
    result = agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    denials = [m for m in tool_messages(result) if m.status == "error"]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [m.model_dump_json() for m in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)
