"""The brake in real smolagents agents, ``ToolCallingAgent`` and ``CodeAgent``, driven
by a scripted ``smolagents.models.Model`` (smolagents' model interface; no network):
tool calls for the first, Python calling the tool for the second."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("smolagents", reason="needs the smolagents extra")

from smolagents import CodeAgent, ToolCallingAgent, tool  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import LogLevel  # noqa: E402
from smolagents.utils import AgentError  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.smolagents import attach, dispose  # noqa: E402

CANARY = "sk-canary-5a01a6"


class ScriptedModel(Model):
    """Answers each step with the next scripted message; keeps every prompt."""

    def __init__(self, turns: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.turns = list(turns)
        self.prompts: list[list[Any]] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.prompts.append(messages)
        return self.turns.pop(0)


def calls(*queries: str, tag: str = "c") -> ChatMessage:
    """One step of a ToolCallingAgent: ``search`` once per query (parallel calls)."""
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[
            ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=args),
                id=f"{tag}{i}",
                type="function",
            )
            for i, (name, args) in enumerate(
                ("final_answer", {"answer": "done"}) if q is None else ("search", {"q": q})
                for q in queries
            )
        ],
    )


def code(*queries: str) -> ChatMessage:
    """One step of a CodeAgent: Python that calls ``search`` once per query."""
    lines = "\n".join(f"print(search(q={q!r}))" for q in queries)
    return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: go\n<code>\n{lines}\n</code>")


DONE_CODE = ChatMessage(
    role=MessageRole.ASSISTANT, content='Thought: done\n<code>\nfinal_answer("done")\n</code>'
)


def make_search(ran: list[str], result: Any = None) -> Any:
    lock = threading.Lock()

    @tool
    def search(q: str) -> str:
        """Search the web.

        Args:
            q: what to search for.
        """
        with lock:
            ran.append(q)
        return f"results for {q}" if result is None else result()

    return search


def tool_agent(turns: list[ChatMessage], ran: list[str], **kw: Any) -> ToolCallingAgent:
    model = ScriptedModel([*turns, calls(None)])
    return ToolCallingAgent(
        tools=[make_search(ran, **kw)], model=model, verbosity_level=LogLevel.OFF
    )


def code_agent(turns: list[ChatMessage], ran: list[str], **kw: Any) -> CodeAgent:
    model = ScriptedModel([*turns, DONE_CODE])
    return CodeAgent(tools=[make_search(ran, **kw)], model=model, verbosity_level=LogLevel.OFF)


def errors(agent: Any) -> list[str]:
    return [str(step.error) for step in agent.memory.steps if getattr(step, "error", None)]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_tool_calling_agent_third_identical_call_is_a_tool_error() -> None:
    ran: list[str] = []
    agent = tool_agent([calls("weather", tag=f"c{i}") for i in range(4)] + [calls("news")], ran)
    attach(agent, max_repeats=3)
    assert agent.run("weather?") == "done"
    assert ran == ["weather", "weather", "news"]
    assert errors(agent) == [denial(3), denial(4)]
    # The model read the denial on its next step.
    assert denial(3).splitlines()[0] in str(agent.model.prompts[3])


def test_code_agent_third_identical_call_fails_the_code() -> None:
    ran: list[str] = []
    agent = code_agent([code("weather") for _ in range(4)] + [code("news")], ran)
    attach(agent, max_repeats=3)
    assert agent.run("weather?") == "done"
    assert ran == ["weather", "weather", "news"]
    failed = errors(agent)
    assert len(failed) == 2 and denial(3) in failed[0] and "LoopBrakeError" in failed[0]
    assert denial(3).splitlines()[0] in str(agent.model.prompts[3])


def test_a_loop_inside_one_code_block_stops_at_the_denial() -> None:
    ran: list[str] = []
    looping = ChatMessage(
        role=MessageRole.ASSISTANT,
        content="Thought: poll\n<code>\nfor _ in range(50):\n    search(q='weather')\n</code>",
    )
    agent = code_agent([looping], ran)
    attach(agent, max_repeats=3)
    agent.run("weather?")
    assert ran == ["weather", "weather"]


def test_parallel_identical_calls_in_one_step() -> None:
    ran: list[str] = []
    agent = tool_agent([calls("weather", "weather", "weather")], ran)
    attach(agent, max_repeats=3)
    agent.run("weather?")
    assert ran == ["weather", "weather"]
    assert errors(agent) == [denial(3)]


def test_two_agents_do_not_share_a_streak() -> None:
    ran: list[str] = []
    brake = LoopBrake(3)
    first = tool_agent([calls("weather", tag=f"a{i}") for i in range(2)], ran)
    second = code_agent([code("weather") for _ in range(2)], ran)
    attach(first, brake)
    attach(second, brake)
    first.run("go")
    second.run("go")
    assert len(ran) == 4 and not errors(first) and not errors(second)
    # Each run is a conversation of its own: the same agent again starts afresh.
    first.model.turns = [calls("weather", tag="b0"), calls("weather", tag="b1"), calls(None)]
    first.run("again")
    assert not errors(first) and len(ran) == 6


def test_stop_interrupts_the_run(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    agent = tool_agent([calls("weather", tag=f"c{i}") for i in range(6)], ran)
    attach(agent, max_repeats=3, policy=str(policy))
    with pytest.raises(AgentError, match="interrupted"):
        agent.run("weather?")
    assert ran == ["weather", "weather"]
    assert errors(agent)[-1].startswith("loop brake: 2 calls in a row were denied")
    assert len(agent.model.prompts) == 4  # not asked again


def test_progress_feeds_results(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    ran: list[str] = []
    agent = tool_agent(
        [calls("job", tag=f"c{i}") for i in range(4)], ran, result=lambda: f"tick {next(ticks)}"
    )
    attach(agent, max_repeats=3, policy=str(policy))
    agent.run("poll")
    assert len(ran) == 4 and not errors(agent)


def test_canary_reaches_no_denial_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    agent = tool_agent([calls(CANARY, tag=f"c{i}") for i in range(3)], ran)
    attach(agent, max_repeats=2)
    agent.run("go")
    assert len(ran) == 1 and len(errors(agent)) == 2
    # What the model read of each denial: the step's error as smolagents renders it.
    read = [str(step.error.dict()) for step in agent.memory.steps if getattr(step, "error", None)]
    out, err = capfd.readouterr()
    assert all(CANARY not in shown for shown in [*read, caplog.text, out, err])


def test_dispose_restores_both_kinds() -> None:
    ran: list[str] = []
    agent = tool_agent([calls("weather", tag=f"c{i}") for i in range(3)], ran)
    attach(agent, max_repeats=2)
    dispose(agent)
    assert "execute_tool_call" not in vars(agent) and "process_tool_calls" not in vars(agent)
    agent.run("go")
    coder = code_agent([code("weather") for _ in range(3)], ran)
    tools = dict(coder.tools)
    attach(coder, max_repeats=2)
    dispose(coder)
    assert coder.tools == tools
    coder.run("go")
    assert ran == ["weather"] * 6 and not errors(agent) and not errors(coder)


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every step (smolagents hands the brake no call id, so
    each call counts as itself): 2 of 6 run."""
    ran: list[str] = []
    agent = tool_agent([calls("weather", tag="call_") for _ in range(6)], ran)
    attach(agent)  # the default limit, 3
    assert agent.run("weather?") == "done"
    assert ran == ["weather", "weather"] and errors(agent) == [denial(n) for n in range(3, 7)]
