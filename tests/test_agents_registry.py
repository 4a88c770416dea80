"""The agent registry: every module in loop_brake_cli/agents/ is registered and complete.

As tests/test_formats_registry.py does for formats/: a new agent module fails
here until it is listed in ``agents.AGENTS`` and has
tests/fixtures/agents/<name>/ with a pre-tool input (``pre-tool.json``), a
post-tool input carrying a result (``post-tool.json``), a user-turn input
(``user-turn.json``: the user submitted a prompt), an input of another
event (``other-event.json``) and the exact stdout of
``loop-brake hook -m 1`` on the pre-tool input (``deny.json``, a golden), and
until it either installs (``INSTALL``) or says why not (``NO_INSTALL``).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES
from conftest import run_cli

from loop_brake_cli import agents
from loop_brake_cli.core.canonical import parse_json
from loop_brake_cli.core.records import ToolCall, ToolResult, UserTurn
from loop_brake_cli.hook.install import hook_entry, settings_path

FOLDER = Path(agents.__file__).parent
MODULES = sorted(path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("_"))
AGENT_FIXTURES = FIXTURES / "agents"


def module(stem: str):
    return importlib.import_module(f"{agents.__name__}.{stem}")


def fixture(stem: str, name: str) -> bytes:
    path = AGENT_FIXTURES / module(stem).NAME / name
    assert path.is_file(), f"{path} is missing"
    return path.read_bytes()


def test_the_folder_holds_the_agents() -> None:
    assert len(MODULES) >= 4
    assert sorted(agent.__name__.rsplit(".", 1)[-1] for agent in agents.AGENTS) == MODULES


@pytest.mark.parametrize("stem", MODULES)
def test_every_module_is_registered_with_the_interface(stem: str) -> None:
    agent = module(stem)
    assert agent in agents.AGENTS
    assert agents.get(agent.NAME) is agent
    assert agent.NAME in agents.names()
    assert agent.EVENTS and all(isinstance(event, str) for event in agent.EVENTS)
    assert set(agent.EVENTS) <= set(agent.ALL_EVENTS)
    for name in ("matches", "decode", "deny_output"):
        assert callable(getattr(agent, name)), name
    assert agent.__doc__ and "https://" in agent.__doc__  # the vendor's documentation


@pytest.mark.parametrize("stem", MODULES)
def test_pre_tool_fixture_is_detected_and_decoded_as_a_call(stem: str) -> None:
    agent = module(stem)
    payload = parse_json(fixture(stem, "pre-tool.json"))
    assert agents.detect(payload) is agent
    call = agent.decode(payload)
    assert isinstance(call, ToolCall)
    assert call.tool == payload["tool_name"]


@pytest.mark.parametrize("stem", MODULES)
def test_post_tool_fixture_is_detected_and_decoded_as_a_result(stem: str) -> None:
    agent = module(stem)
    payload = parse_json(fixture(stem, "post-tool.json"))
    assert agents.detect(payload) is agent
    result = agent.decode(payload)
    assert isinstance(result, ToolResult)
    assert result.result is not None and result.digest is None
    events = [event for event, _field in agent.RESULTS]
    assert agents.event_of(payload) in events and set(events) <= set(agent.ALL_EVENTS)
    if agent.INSTALL is not None:
        assert agent.INSTALL.result_events and set(agent.INSTALL.result_events) <= set(events)


@pytest.mark.parametrize("stem", MODULES)
def test_user_turn_fixture_is_detected_and_decoded_as_a_user_turn(stem: str) -> None:
    agent = module(stem)
    payload = parse_json(fixture(stem, "user-turn.json"))
    assert agents.detect(payload) is agent
    turn = agent.decode(payload)
    assert isinstance(turn, UserTurn)
    call = agent.decode(parse_json(fixture(stem, "pre-tool.json")))
    assert turn.session == call.session  # the same session as its calls
    assert agents.event_of(payload) in agent.USER_TURNS
    assert set(agent.USER_TURNS) <= set(agent.ALL_EVENTS)
    if agent.INSTALL is not None:
        assert agent.INSTALL.user_turn_events == agent.USER_TURNS


@pytest.mark.parametrize("stem", MODULES)
def test_other_event_fixture_is_not_a_call(stem: str) -> None:
    agent = module(stem)
    payload = parse_json(fixture(stem, "other-event.json"))
    assert agent.decode(payload) is None
    assert agents.detect(payload).decode(payload) is None  # what the hook and a log do


@pytest.mark.parametrize("stem", MODULES)
def test_deny_output_matches_the_golden(stem: str, tmp_path: Path) -> None:
    agent = module(stem)
    golden = fixture(stem, "deny.json")
    state = str(tmp_path / "state.db")
    for args in (["-m", "1"], ["-m", "1", "--agent", agent.NAME]):
        result = run_cli("hook", "--state", state, *args, input=fixture(stem, "pre-tool.json"))
        assert result.returncode == 0 and result.stderr == b""
        assert result.stdout == golden
        (tmp_path / "state.db").unlink()
    message = "the message"
    assert json.loads(json.dumps(agent.deny_output(message))) == agent.deny_output(message)


@pytest.mark.parametrize("stem", MODULES)
def test_installs_or_says_why_not(stem: str, tmp_path: Path) -> None:
    agent = module(stem)
    if agent.INSTALL is None:
        assert isinstance(agent.NO_INSTALL, str) and agent.NO_INSTALL.strip()
        assert agent.NAME not in agents.installable()
        return
    target = agent.INSTALL
    assert isinstance(target, agents.Install)
    assert target.event in agent.EVENTS
    assert agent.NAME in agents.installable()
    project = settings_path(agent.NAME, "project", cwd=str(tmp_path), env={})
    user = settings_path(agent.NAME, "user", home=str(tmp_path / "home"), env={})
    assert project == str(tmp_path.joinpath(*target.project.split("/")))
    assert user == str((tmp_path / "home").joinpath(*target.user.split("/")))
    (handler,) = hook_entry(agent.NAME)["hooks"]
    assert handler["command"] == f"loop-brake hook --agent {agent.NAME}"


def test_detection_order_and_fallback() -> None:
    assert agents.detect({}) is agents.get("claude-code")
    assert agents.detect({"turn_id": "t", "hook_event_name": "BeforeTool"}).NAME == "gemini"
    assert agents.detect({"conversation_id": None, "turn_id": "t"}).NAME == "cursor"
    assert agents.detect({"event": "preToolUse"}).NAME == "cursor"  # a logger's rename
    with pytest.raises(agents.UnknownAgentError, match="known agents"):
        agents.get("vim")
