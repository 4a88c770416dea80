"""The brake in a real CrewAI crew (its tool-call hooks), driven by a looping fake model:
CrewAI's own ``LLM`` talking over real HTTP to a scripted OpenAI-compatible server on
loopback (``fake_openai_server``), as to a local runtime that answers the same tool
call, with the same id, every turn.

CrewAI pins exclude the project's other extras (``mcp<2``, ``openai<3``): these tests
run in an environment of their own (``.ci/run``), as the Strands ones do."""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

import pytest

# No telemetry from CrewAI (this runs offline), set before it is imported; only where
# it is installed: collecting this file in the main environment must not switch off
# OpenTelemetry for every test of that worker (tests/test_otel_metrics.py).
if importlib.util.find_spec("crewai") is not None:
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")

pytest.importorskip("crewai", reason="needs the crewai extra (its own environment)")

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.hooks import HookAborted  # noqa: E402
from crewai.tools import tool  # noqa: E402
from fake_openai_server import FakeOpenAI, text, tool_call  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.core.policy import parse_policy  # noqa: E402
from loop_brake_cli.integrations.crewai import attach, dispose  # noqa: E402

CANARY = "sk-canary-c4e3a1"


@pytest.fixture(autouse=True)
def offline_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """CrewAI keeps its task outputs and settings under the user's data and config
    folders: here, under this test's own tmp_path. Every brake is taken off after."""
    for name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    yield
    dispose()


def searcher(ran: list[str], result: Any = None) -> Any:
    @tool("search")
    def search(q: str) -> str:
        """Search the web."""
        ran.append(q)
        return f"results for {q}" if result is None else result()

    return search


def loop(args: dict[str, Any], times: int, same_id: bool = True) -> list[dict[str, Any]]:
    """A model that asks for the same call ``times`` times (``call_0`` every turn, as
    a local runtime numbering calls per response does), then answers."""
    calls = [tool_call("search", args, "call_0" if same_id else f"call_{n}") for n in range(times)]
    return [*calls, text("done")]


def crew_of(server: FakeOpenAI, ran: list[str], agents: int = 1, **kw: Any) -> Crew:
    llm = LLM(model="gpt-4o", base_url=server.url, api_key="x")
    members = [
        Agent(
            role=f"r{n}",
            goal="g",
            backstory="b",
            tools=[searcher(ran, **kw)],
            llm=llm,
            cache=False,
            verbose=False,
        )  # cache=False: every allowed call runs the tool
        for n in range(agents)
    ]
    tasks = [Task(description="find", expected_output="an answer", agent=a) for a in members]
    return Crew(agents=members, tasks=tasks, verbose=False)


def tool_replies(server: FakeOpenAI) -> list[str]:
    """What the model read as each call's result, in order (the last request holds all)."""
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def denial(n: int, args: dict[str, Any] | None = None) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check("search", args or {"q": "weather"})
    return verdict.message


def test_a_looping_model_is_denied_after_2_executions() -> None:
    """Six identical calls, all with the id ``call_0``: 2 run; the model reads the
    core's denial text for the other 4, and its run goes on to its answer."""
    ran: list[str] = []
    attach()  # the default limit, 3
    with FakeOpenAI(loop({"q": "weather"}, 6)) as server:
        result = crew_of(server, ran).kickoff()
        replies = tool_replies(server)
    assert ran == ["weather", "weather"]
    assert replies[:2] == ["results for weather"] * 2
    assert replies[2:] == [denial(n) for n in range(3, 7)]
    assert str(result) == "done"


def test_warn_at_tells_the_model_after_the_output() -> None:
    policy, _ = parse_policy("warn_at = 2\n", "inline.toml")
    ran: list[str] = []
    attach(max_repeats=3, policy=policy)
    with FakeOpenAI(loop({"q": "weather"}, 2)) as server:
        crew_of(server, ran).kickoff()
        replies = tool_replies(server)
    reference = LoopBrake(3, policy=policy)
    for _ in range(2):
        warning = reference.check("search", {"q": "weather"}).warning
    assert warning and replies == ["results for weather", f"results for weather\n\n{warning}"]
    assert ran == ["weather", "weather"]


def test_stop_ends_the_run_before_the_model_is_asked_again(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    ran: list[str] = []
    attach(max_repeats=3, policy=str(policy))
    with FakeOpenAI(loop({"q": CANARY}, 6)) as server:
        with pytest.raises(HookAborted) as stopped:
            crew_of(server, ran).kickoff()
        asked = len(server.requests)
        replies = tool_replies(server)
    assert ran == [CANARY, CANARY] and asked == 4  # 2 ran, 2 denied (the second a stop)
    assert stopped.value.reason.startswith("loop brake: 2 calls in a row were denied")
    assert stopped.value.verdict.stop and stopped.value.verdict.rule == "stop"
    assert replies[2] == denial(3, {"q": CANARY}) and CANARY not in stopped.value.reason


def test_progress_never_denies_a_poll_whose_result_changes() -> None:
    policy, _ = parse_policy("progress = true\n", "inline.toml")
    ticks = iter(range(100))
    ran: list[str] = []
    attach(max_repeats=3, policy=policy)
    with FakeOpenAI(loop({"q": "job"}, 5)) as server:
        crew_of(server, ran, result=lambda: f"tick {next(ticks)}").kickoff()
    assert len(ran) == 5
    stuck: list[str] = []
    with FakeOpenAI(loop({"q": "job"}, 5)) as server:
        crew_of(server, stuck, result=lambda: "tick 0").kickoff()
    assert len(stuck) == 2


def test_agents_and_runs_have_sessions_of_their_own() -> None:
    """Two agents of one crew each loop: each runs 2 of its calls. The crew's second
    kickoff is a new conversation for each agent: 2 more each."""
    ran: list[str] = []
    attach()
    script = loop({"q": "weather"}, 3) + loop({"q": "weather"}, 3)  # one loop per agent
    with FakeOpenAI(script) as server:
        crew = crew_of(server, ran, agents=2)
        crew.kickoff()
        assert len(ran) == 4
        server.requests.clear()  # the script again, from its start
        crew.kickoff()
    assert len(ran) == 8


def test_canary_reaches_no_text_of_the_brake_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    ran: list[str] = []
    policy, _ = parse_policy("warn_at = 2\n", "inline.toml")
    attach(max_repeats=3, policy=policy)
    with FakeOpenAI(loop({"q": CANARY}, 4)) as server:
        crew_of(server, ran).kickoff()
        replies = tool_replies(server)
    ours = [replies[1].split("\n\n", 1)[1], *replies[2:]]  # the warning, the denials
    out, err = capfd.readouterr()
    assert len(ours) == 3 and all(CANARY not in text for text in [*ours, caplog.text, out, err])


def test_a_bad_session_key_runs_the_call_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """CrewAI runs a call whose hook raised (fail-open) and tells only a verbose agent;
    the brake tells its logger."""
    ran: list[str] = []
    attach(max_repeats=2, session_key=lambda context: 42)
    with FakeOpenAI(loop({"q": "w"}, 2)) as server:
        crew_of(server, ran).kickoff()
    assert ran == ["w", "w"]
    assert "session_key returned int; it must return a non-empty str" in caplog.text


def test_dispose_takes_the_hooks_off() -> None:
    from crewai.hooks import get_after_tool_call_hooks, get_before_tool_call_hooks

    before = (len(get_before_tool_call_hooks()), len(get_after_tool_call_hooks()))
    brake = attach(max_repeats=2)
    dispose(brake)
    assert (len(get_before_tool_call_hooks()), len(get_after_tool_call_hooks())) == before
    ran: list[str] = []
    with FakeOpenAI(loop({"q": "w"}, 3)) as server:
        crew_of(server, ran).kickoff()
    assert ran == ["w"] * 3 and len(brake) == 0
