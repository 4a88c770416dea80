"""The brake in a real Google ADK runner (``LoopBrakePlugin``), driven by ADK's own
test model (``MockModel``: scripted responses, no network) that asks for the same
tool call again and again."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="needs the google-adk extra")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.cli.agent_test_runner import MockModel  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.google_adk import LoopBrakePlugin, dispose  # noqa: E402

CANARY = "sk-canary-5be1d0"


def call(q: str, *more: str, tool: str = "search") -> types.Content:
    """One model turn asking for ``tool`` once per query (parallel calls)."""
    parts = [types.Part.from_function_call(name=tool, args={"q": x}) for x in (q, *more)]
    return types.Content(role="model", parts=parts)


def script(*turns: types.Content) -> MockModel:
    done = types.Content(role="model", parts=[types.Part.from_text(text="done")])
    return MockModel.create([*turns, done])


def make_runner(
    model: MockModel, ran: list[str], plugin: LoopBrakePlugin | None, tool: Any = None
) -> Runner:
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}"

    agent = LlmAgent(name="looper", model=model, tools=[tool or search])
    return Runner(
        app=App(name="app", root_agent=agent, plugins=[plugin] if plugin else []),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )


async def run(runner: Runner, user: str = "u1", session: str = "s1") -> list[dict[str, Any]]:
    """Every function response the run produced, in order."""
    message = types.Content(role="user", parts=[types.Part.from_text(text="go")])
    responses = []
    async for event in runner.run_async(user_id=user, session_id=session, new_message=message):
        responses += [r.response for r in event.get_function_responses()]
    return responses


def expected_denial(n: int = 3) -> str:
    """The denial of the n-th identical search at maxRepeats 3."""
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_denied_with_an_error_response() -> None:
    ran: list[str] = []
    model = script(*[call("weather") for _ in range(4)], call("news"))
    plugin = LoopBrakePlugin(max_repeats=3)
    responses = asyncio.run(run(make_runner(model, ran, plugin)))
    assert ran == ["weather", "weather", "news"]
    assert responses[:2] == [{"result": "results for weather"}] * 2
    assert responses[2] == {"error": expected_denial(3)}
    assert responses[3] == {"error": expected_denial(4)}
    assert responses[4] == {"result": "results for news"}
    # The model was handed the denial as the call's response on its next turn.
    seen = [part.function_response for part in model.requests[3].contents[-1].parts]
    assert seen[0].response == {"error": expected_denial()}
    assert len(model.requests) == 6


def test_parallel_identical_calls_in_one_turn() -> None:
    ran: list[str] = []
    model = script(call("weather", "weather", "weather"))
    responses = asyncio.run(run(make_runner(model, ran, LoopBrakePlugin(max_repeats=3))))
    assert ran == ["weather", "weather"]
    assert sorted(map(str, responses)) == sorted(
        map(str, [{"result": "results for weather"}] * 2 + [{"error": expected_denial()}])
    )


def test_two_sessions_at_once_do_not_share_a_streak() -> None:
    ran: list[str] = []
    plugin = LoopBrakePlugin(max_repeats=3)

    async def both() -> list[list[dict[str, Any]]]:
        # Two users who chose the same session id: two ADK sessions all the same.
        a = make_runner(script(*[call("weather") for _ in range(3)]), ran, plugin)
        b = make_runner(script(*[call("weather") for _ in range(3)]), ran, plugin)
        return list(await asyncio.gather(run(a, user="alice"), run(b, user="bob")))

    for responses in asyncio.run(both()):
        assert ["error" in r for r in responses] == [False, False, True]
    assert len(ran) == 4


def test_stop_ends_the_invocation(tmp_path: Any) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    model = script(*[call("weather") for _ in range(6)])
    plugin = LoopBrakePlugin(max_repeats=3, policy=str(policy))
    responses = asyncio.run(run(make_runner(model, ran, plugin)))
    assert ran == ["weather", "weather"]
    assert [next(iter(r)) for r in responses] == ["result", "result", "error", "error"]
    assert responses[3]["error"].startswith("loop brake: 2 calls in a row were denied")
    assert len(model.requests) == 4  # the model is not asked again after the stop


def test_progress_feeds_results(tmp_path: Any) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    ticks = iter(range(100))

    def poll(q: str) -> str:
        """Poll a job."""
        return f"tick {next(ticks)}"

    plugin = LoopBrakePlugin(max_repeats=3, policy=str(policy))
    model = script(*[call("job", tool="poll") for _ in range(4)])
    responses = asyncio.run(run(make_runner(model, [], plugin, tool=poll)))
    assert [next(iter(r)) for r in responses] == ["result"] * 4  # results changed: no loop

    def stuck(q: str) -> str:
        """Poll a job that never moves."""
        return "tick 0"

    model = script(*[call("job", tool="stuck") for _ in range(3)])
    responses = asyncio.run(run(make_runner(model, [], plugin, tool=stuck)))
    assert [next(iter(r)) for r in responses] == ["result", "result", "error"]


def test_canary_reaches_no_denial_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    caplog.set_level(logging.WARNING)
    ran: list[str] = []
    model = script(*[call(CANARY) for _ in range(3)])
    responses = asyncio.run(run(make_runner(model, ran, LoopBrakePlugin(max_repeats=2))))
    denials = [r["error"] for r in responses if "error" in r]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    assert all(CANARY not in text for text in [*denials, caplog.text, out, err])


def test_dispose_restores_the_runner() -> None:
    ran: list[str] = []
    plugin = LoopBrakePlugin(max_repeats=2)
    runner = make_runner(script(*[call("weather") for _ in range(3)]), ran, plugin)
    dispose(runner)
    responses = asyncio.run(run(runner))
    assert ran == ["weather"] * 3 and all("result" in r for r in responses)
    assert plugin not in runner.plugin_manager.plugins and len(plugin.brake) == 0


# -- issue 36.6: a warned call skips no other after_tool_callback -------------------


@pytest.mark.parametrize("returns", ["str", "dict"])
def test_a_warned_call_runs_every_later_after_tool_callback_and_keeps_its_warning(
    returns: str,
) -> None:
    """On c40a10b the brake's after_tool_callback returned the warned response, which
    ends ADK's plugin chain: a later plugin's and the agent's own after_tool_callback
    never ran for that call. Now both run (the later plugin replaces the response, as
    it may) and the model still reads the warning beside the final response."""
    from google.adk.plugins.base_plugin import BasePlugin

    from loop_brake_cli.core.policy import parse_policy

    seen: list[tuple[str, str]] = []

    class Later(BasePlugin):
        async def after_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
        ) -> Any:
            seen.append(("plugin", tool_args["q"]))
            return {"result": "checked"}

    def agent_callback(tool: Any, args: Any, tool_context: Any, tool_response: Any) -> None:
        seen.append(("agent", args["q"]))

    def search(q: str) -> Any:
        """Search the web."""
        return {"hits": 1} if returns == "dict" else "one hit"

    policy, _ = parse_policy("warn_at = 2\n", "inline.toml")
    plugin = LoopBrakePlugin(max_repeats=3, policy=policy)
    model = script(*[call(CANARY) for _ in range(2)])
    agent = LlmAgent(name="looper", model=model, tools=[search], after_tool_callback=agent_callback)
    runner = Runner(
        app=App(name="app", root_agent=agent, plugins=[plugin, Later(name="later")]),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    responses = asyncio.run(run(runner))
    # The plugin's replacement is the response; ADK skips the agent's callback then.
    assert seen == [("plugin", CANARY), ("plugin", CANARY)]
    warning = LoopBrake(3, policy=policy)
    for _ in range(2):
        told = warning.check("search", {"q": CANARY}).warning
    assert responses == [{"result": "checked"}, {"result": "checked", "loop_brake_warning": told}]
    last = [part.function_response for part in model.requests[2].contents[-1].parts]
    assert last[0].response["loop_brake_warning"] == told and CANARY not in told  # model read it
    alone = LoopBrakePlugin(max_repeats=3, policy=policy)  # no later plugin: the agent's runs
    model = script(*[call("w") for _ in range(2)])
    seen.clear()
    agent = LlmAgent(name="looper", model=model, tools=[search], after_tool_callback=agent_callback)
    runner = Runner(
        app=App(name="app", root_agent=agent, plugins=[alone]),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    responses = asyncio.run(run(runner))
    assert seen == [("agent", "w"), ("agent", "w")]
    own = {"hits": 1} if returns == "dict" else {"result": "one hit"}
    reference = LoopBrake(3, policy=policy)
    for _ in range(2):
        told = reference.check("search", {"q": "w"}).warning
    assert responses == [own, {**own, "loop_brake_warning": told}]
    assert not alone._warnings  # each warning went with its event


def test_a_model_that_reuses_its_call_id_every_turn_is_braked() -> None:
    """Issue 36.3: ``call_0`` every turn (ADK keeps an id the model gave)."""
    part = types.Part(function_call=types.FunctionCall(id="call_0", name="search", args={"q": "w"}))
    model = script(*[types.Content(role="model", parts=[part]) for _ in range(6)])
    ran: list[str] = []
    responses = asyncio.run(run(make_runner(model, ran, LoopBrakePlugin())))
    assert ran == ["w", "w"]
    assert ["error" in r for r in responses] == [False, False, True, True, True, True]
