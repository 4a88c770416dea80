"""The brake in a real pydantic-ai agent, driven by pydantic-ai's own
``FunctionModel``: the same tool call again and again, then a different one."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")

from pydantic_ai import Agent, FunctionToolset  # noqa: E402
from pydantic_ai.exceptions import UnexpectedModelBehavior  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from loop_brake_cli import LoopBrake, call_hash, hash_prefix  # noqa: E402
from loop_brake_cli.integrations.pydantic_ai import LoopBrakeToolset  # noqa: E402

CANARY = "sk-canary-a4d9f0"


class Looper:
    """A FunctionModel script: one tool call per turn, then a final answer.

    Keeps what the model was told about each of its tool calls, by call id."""

    def __init__(self, calls: list[dict[str, Any]], tag: str = "") -> None:
        self.calls, self.tag = calls, tag
        self.told: dict[str, Any] = {}
        self.turn = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for message in messages:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, (RetryPromptPart, ToolReturnPart)):
                        self.told[part.tool_call_id] = part
        turn, self.turn = self.turn, self.turn + 1
        if turn < len(self.calls):
            call = ToolCallPart("search", self.calls[turn], tool_call_id=f"{self.tag}c{turn}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])


def is_retry(part: Any) -> bool:
    """pydantic-ai's retry prompt for a tool call: a tool return marked ``retried``."""
    return isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"


def is_return(part: Any) -> bool:
    return isinstance(part, ToolReturnPart) and not is_retry(part)


def make_agent(looper: Looper, ran: list[str], retries: int = 3, **kwargs: Any) -> Agent:
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}"

    toolset = LoopBrakeToolset(FunctionToolset([search]), **kwargs)
    return Agent(FunctionModel(looper), toolsets=[toolset], retries=retries)


def expected_message(args: dict[str, Any], count: int = 3) -> str:
    reference = LoopBrake(3)
    for _ in range(count):
        verdict = reference.check("search", args)
    return verdict.message


def test_third_identical_call_is_denied_as_a_retry_then_a_different_call_runs() -> None:
    ran: list[str] = []
    looper = Looper([{"q": "weather"}] * 4 + [{"q": "news"}])
    result = make_agent(looper, ran, max_repeats=3).run_sync("find it")
    assert result.output == "done"
    assert ran == ["weather", "weather", "news"]
    told = looper.told
    assert is_return(told["c1"])
    denial = told["c2"]
    assert is_retry(denial) and denial.tool_name == "search"
    assert denial.content == expected_message({"q": "weather"})
    assert hash_prefix(call_hash("search", {"q": "weather"})) in denial.content
    assert is_retry(told["c3"]) and told["c3"].content == expected_message({"q": "weather"}, 4)
    assert is_return(told["c4"]) and told["c4"].content == "results for news"


def test_past_the_tools_retries_the_run_stops() -> None:
    ran: list[str] = []
    looper = Looper([{"q": "weather"}] * 6)
    with pytest.raises(UnexpectedModelBehavior):
        make_agent(looper, ran, retries=1, max_repeats=3).run_sync("find it")
    assert ran == ["weather", "weather"]


def test_two_runs_in_parallel_do_not_share_a_streak() -> None:
    ran: list[str] = []
    toolset_brake = LoopBrake(3)

    async def run(tag: str) -> dict[str, Any]:
        looper = Looper([{"q": "weather"}] * 3, tag=tag)
        await make_agent(looper, ran, brake=toolset_brake).run("go")
        return looper.told

    async def main() -> list[dict[str, Any]]:
        return list(await asyncio.gather(run("a"), run("b")))

    for tag, told in zip("ab", asyncio.run(main()), strict=True):
        assert is_return(told[f"{tag}c1"])
        assert told[f"{tag}c2"].content == expected_message({"q": "weather"})
    assert len(ran) == 4


def test_a_continued_conversation_continues_its_streak() -> None:
    ran: list[str] = []
    brake = LoopBrake(3)
    first = make_agent(Looper([{"q": "weather"}] * 2), ran, brake=brake).run_sync("go")
    second_looper = Looper([{"q": "weather"}], tag="2")
    make_agent(second_looper, ran, brake=brake).run_sync(
        "again", message_history=first.all_messages()
    )
    assert len(ran) == 2 and is_retry(second_looper.told["2c0"])


def test_canary_in_arguments_reaches_no_log_or_message(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    looper = Looper([{"q": CANARY}] * 3)
    make_agent(looper, ran, max_repeats=2).run_sync("go")
    denials = [p for p in looper.told.values() if is_retry(p)]
    assert len(ran) == 1 and len(denials) == 2
    out, err = capfd.readouterr()
    shown = [repr(d) for d in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


# -- issue 23: every tool, progress, the stop, bounds -------------------------------

from pydantic_ai import RunContext, capture_run_messages  # noqa: E402

from loop_brake_cli.integrations.pydantic_ai import LoopBrakeCapability  # noqa: E402


def registered(how: str, model: FunctionModel, capability: Any, ran: list[str], answers=None):
    """An agent whose ``search`` tool is registered the way ``how`` names."""

    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if answers is None else answers[len(ran) - 1]

    if how == "tools":
        return Agent(model, tools=[search], capabilities=[capability], retries=9)
    agent = Agent(model, capabilities=[capability], retries=9)
    if how == "tool_plain":
        agent.tool_plain(search)
    else:

        @agent.tool(name="search")
        def search_with_context(ctx: RunContext[Any], q: str) -> str:  # noqa: ARG001
            """Search the web."""
            return search(q)

    return agent


@pytest.mark.parametrize("how", ["tools", "tool_plain", "tool"])
def test_every_way_of_registering_a_tool_is_braked(how: str) -> None:
    """On the old main only a tool inside a LoopBrakeToolset was braked."""
    ran: list[str] = []
    looper = Looper([{"q": "weather"}] * 3 + [{"q": "news"}])
    capability = LoopBrakeCapability(max_repeats=3)
    agent = registered(how, FunctionModel(looper), capability, ran)
    assert agent.run_sync("weather?").output == "done"
    assert ran == ["weather", "weather", "news"]
    denial = looper.told["c2"]
    assert is_retry(denial)
    assert hash_prefix(call_hash("search", {"q": "weather"})) in str(denial.content)


def test_progress_mode_reads_each_return_value() -> None:
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("progress = true\n", "inline.toml")
    for answers, denied in (
        ([f"{n}0%" for n in range(5)], []),
        (["running"] * 5, ["c2", "c3", "c4"]),
    ):
        ran: list[str] = []
        looper = Looper([{"q": "build"}] * 5)
        capability = LoopBrakeCapability(max_repeats=3, policy=policy)
        registered("tools", FunctionModel(looper), capability, ran, answers).run_sync("wait")
        assert [c for c, part in sorted(looper.told.items()) if is_retry(part)] == denied


def test_a_policy_stop_ends_the_run() -> None:
    """A model that ignores denials ran on to the tool's retry limit on the old main."""
    from loop_brake_cli import LoopBrakeStop
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("[stop]\nafter_denials = 2\n", "inline.toml")
    ran: list[str] = []
    looper = Looper([{"q": CANARY}] * 40)
    capability = LoopBrakeCapability(max_repeats=2, policy=policy)
    agent = registered("tools", FunctionModel(looper), capability, ran)
    with capture_run_messages() as messages, pytest.raises(LoopBrakeStop) as stopped:
        agent.run_sync("go")
    assert ran == [CANARY] and looper.turn == 3  # no model call after the stop
    assert stopped.value.verdict.stop and stopped.value.count == 3
    assert str(stopped.value).startswith("loop brake: 2 calls in a row were denied")
    assert messages and CANARY not in str(stopped.value)


def test_conversations_stay_bounded() -> None:
    from loop_brake_cli.integrations._session import DEFAULT_MAX_SESSIONS

    assert LoopBrakeCapability().brake.max_sessions == DEFAULT_MAX_SESSIONS
    capability = LoopBrakeCapability(LoopBrake(3, max_sessions=30))

    def one_call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("search", {"q": "w"})])

    agent = registered("tools", FunctionModel(one_call), capability, [])
    for _ in range(80):
        agent.run_sync("go")  # each run a conversation of its own
    assert len(capability.brake) == 30 and capability.brake.evictions == 50


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn; on c40a10b 6 of 6 ran."""
    turns = iter(range(7))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if next(turns) < 6:
            return ModelResponse(parts=[ToolCallPart("search", {"q": "w"}, tool_call_id="call_0")])
        return ModelResponse(parts=[TextPart("done")])

    ran: list[str] = []

    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return "results"

    toolset = LoopBrakeToolset(FunctionToolset([search]))  # the default limit, 3
    result = Agent(FunctionModel(model), toolsets=[toolset], retries=10).run_sync("go")
    assert ran == ["w", "w"] and result.output == "done"
