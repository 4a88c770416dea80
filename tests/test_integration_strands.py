"""The brake in a real Strands agent (``LoopBrakeHooks`` on ``BeforeToolCallEvent``),
driven by a scripted ``strands.models.Model`` (Strands' model interface, streaming
the events a provider streams; no network).

Strands pins ``mcp<2.2``, which the project's ``mcp`` extra (``mcp>=2.3``) excludes,
so it is not in the ``test`` extra: ``.ci/run`` runs this file in a second virtual
environment with ``.[strands]`` alone."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands", reason="needs the strands extra")

from strands import Agent, tool  # noqa: E402
from strands.models import Model  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.strands import LoopBrakeHooks  # noqa: E402

CANARY = "sk-canary-57a9d5"


class ScriptedModel(Model):
    """Streams the next scripted turn (tool uses, or text); keeps every request."""

    def __init__(self, turns: list[list[str] | str]) -> None:
        self.turns = list(turns)
        self.requests: list[Any] = []
        self.n = 0

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(self, messages: Any, tool_specs: Any = None, *args: Any, **kw: Any) -> Any:
        self.requests.append(json.loads(json.dumps(messages, default=str)))
        turn = self.turns.pop(0) if self.turns else "done"
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for q in turn:
            self.n += 1
            start = {"toolUse": {"toolUseId": f"t{self.n}", "name": "search"}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"q": q})}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def make_agent(turns: list[Any], ran: list[str], hooks: Any, result: Any = None) -> Agent:
    @tool
    def search(q: str) -> str:
        """Search the web.

        Args:
            q: what to search for.
        """
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return Agent(
        model=ScriptedModel(turns),
        tools=[search],
        hooks=[hooks] if hooks else [],
        callback_handler=None,
    )


def tool_results(agent: Agent) -> list[dict[str, Any]]:
    return [
        block["toolResult"]
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_cancelled_with_an_error_result() -> None:
    ran: list[str] = []
    agent = make_agent([["weather"]] * 4 + [["news"]], ran, LoopBrakeHooks(max_repeats=3))
    agent("weather?")
    assert ran == ["weather", "weather", "news"]
    results = tool_results(agent)
    assert [r["status"] for r in results] == ["success", "success", "error", "error", "success"]
    assert results[2]["content"][0]["text"] == denial(3)
    assert results[3]["content"][0]["text"] == denial(4)
    assert json.dumps(denial(3), ensure_ascii=False) in json.dumps(
        agent.model.requests[3], ensure_ascii=False
    )


def test_parallel_identical_calls_in_one_turn() -> None:
    ran: list[str] = []
    agent = make_agent([["weather"] * 3], ran, LoopBrakeHooks(max_repeats=3))
    agent("weather?")
    assert ran == ["weather", "weather"]
    assert sorted(r["status"] for r in tool_results(agent)) == ["error", "success", "success"]


def test_two_agents_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    hooks = LoopBrakeHooks(max_repeats=3)
    agents = [make_agent([["weather"]] * 3, ran, hooks) for _ in range(2)]

    async def both() -> None:
        await asyncio.gather(*(agent.invoke_async("go") for agent in agents))

    asyncio.run(both())
    for agent in agents:
        assert [r["status"] for r in tool_results(agent)] == ["success", "success", "error"]
    assert len(ran) == 4


def test_stop_cancels_the_agent(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    agent = make_agent([["weather"]] * 6, ran, LoopBrakeHooks(max_repeats=3, policy=str(policy)))
    result = agent("weather?")
    assert ran == ["weather", "weather"]
    assert result.stop_reason == "cancelled"
    assert str(result).startswith("loop brake: 2 calls in a row were denied")
    assert len(agent.model.requests) == 4  # not asked again


def test_progress_feeds_results(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))
    hooks = LoopBrakeHooks(max_repeats=3, policy=str(policy))
    ran: list[str] = []
    make_agent([["job"]] * 4, ran, hooks, result=lambda: f"tick {next(ticks)}")("poll")
    assert len(ran) == 4
    stuck: list[str] = []
    make_agent([["job"]] * 3, stuck, hooks, result=lambda: "tick 0")("poll")
    assert len(stuck) == 2


def test_canary_reaches_no_result_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    caplog.set_level(logging.INFO)
    ran: list[str] = []
    agent = make_agent([[CANARY]] * 3, ran, LoopBrakeHooks(max_repeats=2))
    agent("go")
    denials = [r for r in tool_results(agent) if r["status"] == "error"]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    shown = [json.dumps(d) for d in denials] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


def test_an_agent_without_the_hooks_runs_every_call() -> None:
    ran: list[str] = []
    make_agent([["weather"]] * 3, ran, None)("go")
    assert ran == ["weather"] * 3


# -- a policy's warn_at: the warning is a last text block of the tool result ----------


def warning_at(n: int, q: str = "weather", warn_at: int = 2) -> str:
    from loop_brake_cli.core.policy import parse_policy

    reference = LoopBrake(3, policy=parse_policy(f"warn_at = {warn_at}\n", "inline.toml")[0])
    for _ in range(n):
        verdict = reference.check("search", {"q": q})
    assert verdict.warning is not None
    return verdict.warning


def test_a_warned_call_runs_and_its_result_ends_with_the_warning(tmp_path: Path) -> None:
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    ran: list[str] = []
    hooks = LoopBrakeHooks(max_repeats=3, policy=str(policy))
    agent = make_agent([["weather"]] * 3 + [["news"]], ran, hooks)
    agent("weather?")
    assert ran == ["weather", "weather", "news"]
    results = tool_results(agent)
    assert [r["status"] for r in results] == ["success", "success", "error", "success"]
    assert results[0]["content"] == [{"text": "results for weather"}]
    assert results[1]["content"] == [{"text": "results for weather"}, {"text": warning_at(2)}]
    assert results[3]["content"] == [{"text": "results for news"}]
    # the model read the warning with the second result, before its third call
    assert json.dumps(warning_at(2)) in json.dumps(agent.model.requests[2])
    assert hooks._warnings == {}


def test_a_warned_call_that_fails_gets_the_warning_after_its_error(tmp_path: Path) -> None:
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")

    def fail() -> str:
        raise RuntimeError("backend down")

    hooks = LoopBrakeHooks(max_repeats=3, policy=str(policy))
    agent = make_agent([["weather"]] * 2, [], hooks, result=fail)
    agent("weather?")
    second = tool_results(agent)[1]
    assert second["status"] == "error" and second["content"][-1] == {"text": warning_at(2)}
    assert "backend down" in second["content"][0]["text"]


@pytest.mark.parametrize("policy", [None, '[[tools]]\nmatch = "other"\nmax_repeats = 9\n'])
def test_without_warn_at_every_result_is_the_tools_own(tmp_path: Path, policy: Any) -> None:
    braked: list[str] = []
    path = None
    if policy is not None:
        path = tmp_path / "plain.toml"
        path.write_text(policy)
    hooks = LoopBrakeHooks(max_repeats=3, policy=path and str(path))
    with_hooks = make_agent([["weather"]] * 2, braked, hooks)
    with_hooks("weather?")
    without = make_agent([["weather"]] * 2, [], None)
    without("weather?")
    assert tool_results(with_hooks) == tool_results(without)
    assert with_hooks.model.requests == without.model.requests


def test_canary_reaches_no_warning_or_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    caplog.set_level(logging.INFO)
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 1\n")
    ran: list[str] = []
    agent = make_agent([[CANARY]] * 2, ran, LoopBrakeHooks(max_repeats=3, policy=str(policy)))
    agent("go")
    warnings = [r["content"][-1]["text"] for r in tool_results(agent)]
    assert [w.startswith("loop brake: warning:") for w in warnings] == [True, True]
    assert warnings == [warning_at(1, CANARY, warn_at=1), warning_at(2, CANARY, warn_at=1)]
    out, err = capfd.readouterr()
    assert all(CANARY not in text for text in [*warnings, caplog.text, out, err])


def test_a_model_that_reuses_its_tool_use_id_every_turn_is_braked() -> None:
    """Issue 36.3: the tool use id ``tooluse_0`` every turn; on c40a10b 6 of 6 ran."""
    ran: list[str] = []
    agent = make_agent([["weather"]] * 6, ran, LoopBrakeHooks())  # the default limit, 3
    model = agent.model
    stream = model.stream

    async def same_id(*args: Any, **kwargs: Any) -> Any:
        async for event in stream(*args, **kwargs):
            start = event.get("contentBlockStart", {}).get("start", {}).get("toolUse")
            if start is not None:
                start["toolUseId"] = "tooluse_0"
            yield event

    model.stream = same_id  # type: ignore[method-assign]
    agent("weather?")
    assert ran == ["weather", "weather"]
    assert [r["status"] for r in tool_results(agent)] == ["success"] * 2 + ["error"] * 4
