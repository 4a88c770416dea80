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


# -- issue 23: runs without a thread, progress, the stop, bounds --------------------


def plain_agent(model: ScriptedModel, middleware: LoopBrakeMiddleware, answers: Any = None) -> Any:
    """An agent without a checkpointer: a stateless server's, one ``invoke`` per request."""
    calls: list[int] = []

    @tool
    def search(q: str) -> str:
        """Search the web."""
        calls.append(1)
        return f"results for {q}" if answers is None else answers[len(calls) - 1]

    return create_agent(model, [search], middleware=[middleware])


def test_requests_without_a_thread_do_not_share_a_streak() -> None:
    """Request 2 of a stateless server was denied by request 1's calls on the old main
    (both counted in "default"); each run is now its own session, forgotten at its end."""
    middleware = LoopBrakeMiddleware(max_repeats=3)
    statuses = []
    for request in range(2):
        agent = plain_agent(script([{"q": "weather"}] * 2, tag=f"r{request}"), middleware)
        result = agent.invoke({"messages": [("user", "weather?")]})
        statuses.append([m.status for m in tool_messages(result)])
    assert statuses == [["success", "success"], ["success", "success"]]
    assert len(middleware.brake) == 0
    # a run is still braked within itself
    agent = plain_agent(script([{"q": "weather"}] * 3, tag="r3"), middleware)
    result = agent.invoke({"messages": [("user", "weather?")]})
    assert [m.status for m in tool_messages(result)] == ["success", "success", "error"]


def turns(count: int) -> ScriptedModel:
    """A model for ``count`` runs: one tool call, then an answer, in each."""
    call = {"name": "search", "args": {"q": "w"}, "id": "c"}
    script = [m for _ in range(count) for m in (AIMessage("", tool_calls=[call]), "done")]
    return ScriptedModel(messages=iter(script), seen=[])


def test_runs_leave_no_session_and_threads_stay_bounded() -> None:
    middleware = LoopBrakeMiddleware(max_repeats=3)
    agent = plain_agent(turns(100), middleware)
    for _ in range(100):
        agent.invoke({"messages": [("user", "go")]})
    assert len(middleware.brake) == 0  # the old main kept them all in "default"
    from loop_brake_cli.integrations._session import DEFAULT_MAX_SESSIONS

    assert middleware.brake.max_sessions == DEFAULT_MAX_SESSIONS
    bounded = LoopBrakeMiddleware(LoopBrake(3, max_sessions=20))
    agent = make_agent(turns(60), [], bounded)
    for thread in range(60):
        agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": f"t{thread}"}})
    assert len(bounded.brake) == 20 and bounded.brake.evictions == 40


def test_progress_mode_reads_each_tool_message() -> None:
    """A poll whose result changes is never denied under ``progress = true``; the old
    main fed no result and denied the third poll."""
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("progress = true\n", "inline.toml")
    changing = [f"{n * 20}% done" for n in range(5)]
    middleware = LoopBrakeMiddleware(max_repeats=3, policy=policy)
    agent = plain_agent(script([{"q": "build"}] * 5), middleware, changing)
    result = agent.invoke({"messages": [("user", "wait for the build")]})
    assert [m.status for m in tool_messages(result)] == ["success"] * 5
    same = LoopBrakeMiddleware(max_repeats=3, policy=policy)
    agent = plain_agent(script([{"q": "build"}] * 5), same, ["running"] * 5)
    result = agent.invoke({"messages": [("user", "wait for the build")]})
    assert [m.status for m in tool_messages(result)] == ["success"] * 2 + ["error"] * 3


def test_a_policy_stop_ends_the_run() -> None:
    """A model that ignores denials ran on to LangChain's step limit on the old main;
    the stop now ends the run: no more model calls, the stop message last."""
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("[stop]\nafter_denials = 2\n", "inline.toml")
    model = script([{"q": CANARY}] * 40)
    middleware = LoopBrakeMiddleware(max_repeats=2, policy=policy)
    result = plain_agent(model, middleware).invoke({"messages": [("user", "go")]})
    replies = tool_messages(result)
    assert [m.status for m in replies] == ["success", "error", "error"]
    assert replies[2].artifact["rule"] == "stop"
    assert len(model.seen) == 3  # the model is not called after the stop
    last = result["messages"][-1]
    assert isinstance(last, AIMessage) and last.content == replies[2].content
    assert last.content.startswith("loop brake: 2 calls in a row were denied")
    assert all(CANARY not in m.content for m in [*replies[1:], last])


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: a model numbering its calls per response (``call_0`` every turn).
    On c40a10b an id equal to the last counted one was never counted: 6 of 6 ran."""
    ran: list[str] = []
    call = {"name": "search", "args": {"q": "weather"}, "id": "call_0"}
    turns = [AIMessage(content="", tool_calls=[call]) for _ in range(6)]
    model = ScriptedModel(messages=iter([*turns, "done"]), seen=[])
    agent = make_agent(model, ran, LoopBrakeMiddleware())  # the default limit, 3
    result = agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    assert ran == ["weather", "weather"]
    replies = tool_messages(result)
    assert [m.status for m in replies] == ["success"] * 2 + ["error"] * 4
    assert [m.artifact["count"] for m in replies[2:]] == [3, 4, 5, 6]
