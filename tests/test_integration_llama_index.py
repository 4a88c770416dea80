"""The brake in a real LlamaIndex ``FunctionAgent`` (an agent workflow), driven by
llama-index-core's own ``MockFunctionCallingLLM`` with a scripted response generator
(no network) that asks for the same tool call again and again."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="needs the llama-index extra")

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.llms.llm import ToolSelection  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.core.brake import LoopBrakeStop  # noqa: E402
from loop_brake_cli.integrations.llama_index import attach, dispose  # noqa: E402

CANARY = "sk-canary-11a3d0"


def scripted(*turns: tuple[str, ...], seen: list[Any] | None = None) -> MockFunctionCallingLLM:
    """Each model turn asks for ``search`` once per query of that turn, then "done"."""
    script = [
        [
            ToolSelection(tool_id=f"c{n}-{i}", tool_name="search", tool_kwargs={"q": q})
            for i, q in enumerate(turn)
        ]
        for n, turn in enumerate(turns)
    ]

    def model(messages: Any, **kwargs: Any) -> ChatMessage:
        if seen is not None:
            seen.append(list(messages))
        calls = script.pop(0) if script else []
        content = "" if calls else "done"
        return ChatMessage(
            role="assistant", content=content, additional_kwargs={"tool_calls": calls}
        )

    return MockFunctionCallingLLM(response_generator=model)


def make_agent(llm: Any, ran: list[str], result: Any = None) -> FunctionAgent:
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return FunctionAgent(tools=[search], llm=llm)


async def run(agent: FunctionAgent, **kw: Any) -> list[Any]:
    """Every tool output of one run, in order."""
    outputs = []
    handler = agent.run("go", **kw)
    async for event in handler.stream_events():
        if type(event).__name__ == "ToolCallResult":
            outputs.append(event.tool_output)
    await handler
    return outputs


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_an_error_output() -> None:
    ran: list[str] = []
    seen: list[Any] = []
    agent = make_agent(scripted(*[("weather",)] * 4, ("news",), seen=seen), ran)
    attach(agent, max_repeats=3)
    outputs = asyncio.run(run(agent))
    assert ran == ["weather", "weather", "news"]
    assert [o.is_error for o in outputs] == [False, False, True, True, False]
    assert outputs[2].content == denial(3) and outputs[3].content == denial(4)
    assert denial(3).splitlines()[0] in str(seen[3])  # the model read it on its next turn


def test_parallel_identical_calls_in_one_turn() -> None:
    ran: list[str] = []
    agent = make_agent(scripted(("weather", "weather", "weather")), ran)
    attach(agent, max_repeats=3)
    outputs = asyncio.run(run(agent))
    assert ran == ["weather", "weather"]
    assert sorted(o.is_error for o in outputs) == [False, False, True]


def test_two_runs_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    agents = [make_agent(scripted(*[("weather",)] * 3), ran) for _ in range(2)]
    brake = LoopBrake(3)
    for agent in agents:
        attach(agent, brake)

    async def both() -> list[list[Any]]:
        return list(await asyncio.gather(*(run(agent) for agent in agents)))

    for outputs in asyncio.run(both()):
        assert [o.is_error for o in outputs] == [False, False, True]
    assert len(ran) == 4


def test_one_agent_two_runs_are_two_sessions() -> None:
    ran: list[str] = []
    agent = make_agent(scripted(*[("weather",)] * 2), ran)
    attach(agent, max_repeats=3)
    asyncio.run(run(agent))
    agent.llm = scripted(*[("weather",)] * 2)
    outputs = asyncio.run(run(agent))  # a new run: a new streak
    assert not any(o.is_error for o in outputs) and len(ran) == 4


def test_stop_ends_the_workflow(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    seen: list[Any] = []
    agent = make_agent(scripted(*[("weather",)] * 6, seen=seen), ran)
    attach(agent, max_repeats=3, policy=str(policy))
    with pytest.raises(LoopBrakeStop, match="loop brake: 2 calls in a row were denied"):
        asyncio.run(run(agent))
    assert ran == ["weather", "weather"] and len(seen) == 4  # not asked again


def test_progress_feeds_results(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    ran: list[str] = []
    agent = make_agent(scripted(*[("job",)] * 4), ran, result=lambda: f"tick {next(ticks)}")
    attach(agent, max_repeats=3, policy=str(policy))
    outputs = asyncio.run(run(agent))
    assert len(ran) == 4 and not any(o.is_error for o in outputs)


def test_canary_reaches_no_output_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    agent = make_agent(scripted(*[(CANARY,)] * 3), ran)
    attach(agent, max_repeats=2)
    denials = [o for o in asyncio.run(run(agent)) if o.is_error]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [d.model_dump_json() for d in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


def test_dispose_restores_the_agent() -> None:
    ran: list[str] = []
    agent = make_agent(scripted(*[("weather",)] * 3), ran)
    brake = attach(agent, max_repeats=2)
    dispose(agent)
    outputs = asyncio.run(run(agent))
    assert ran == ["weather"] * 3 and not any(o.is_error for o in outputs)
    assert len(brake) == 0


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn (LlamaIndex hands the brake no call id, so each
    call counts as itself): 2 of 6 run."""

    def model(messages: Any, **kwargs: Any) -> ChatMessage:
        turns = sum(1 for m in messages if getattr(m, "role", None) == "tool")
        call = ToolSelection(tool_id="call_0", tool_name="search", tool_kwargs={"q": "weather"})
        calls = [call] if turns < 6 else []
        return ChatMessage(
            role="assistant",
            content="" if calls else "done",
            additional_kwargs={"tool_calls": calls},
        )

    ran: list[str] = []
    agent = make_agent(MockFunctionCallingLLM(response_generator=model), ran)
    attach(agent)  # the default limit, 3
    outputs = asyncio.run(run(agent))
    assert ran == ["weather", "weather"]
    assert [o.is_error for o in outputs] == [False, False, True, True, True, True]
