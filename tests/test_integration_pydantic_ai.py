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
