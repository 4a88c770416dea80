"""The swe-agent adapter: history tool_calls, else trajectory actions; canary, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    assert_canary_hidden,
    assert_never_raises,
    bytes_or_json,
    calls,
    json_shapes,
    longest_streak,
    read,
    summary,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.records import BadRecord

EPS = "SWE-agent__trajectories-demonstrations-ctf-crypto__eps.traj"
PYDICOM = (
    "SWE-agent__tests-test_data-trajectories-gpt4-swe-bench-dev-easy__pydicom__pydicom-1458.traj"
)
MARSHMALLOW = (
    "SWE-agent__trajectories-demonstrations-replay-function_calling__marshmallow-code__"
    "marshmallow-1867.traj"
)


@pytest.mark.parametrize(
    ("name", "count", "streak"), [(EPS, 14, 4), (PYDICOM, 12, 2), (MARSHMALLOW, 11, 1)]
)
def test_real_trajectories(name: str, count: int, streak: int) -> None:
    path = FIXTURES / "swe-agent" / name
    fmt, records = read(path)
    assert fmt == "swe-agent"
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert len(calls(records)) == count
    assert {c.session for c in calls(records)} == {str(path)}
    assert longest_streak(records)[0] == streak


@pytest.mark.parametrize("name", [EPS, PYDICOM, MARSHMALLOW])
def test_shared_copies(shared_samples: Path, name: str) -> None:
    fmt, records = read(shared_samples / "trajectories/swe-agent" / name)
    assert fmt == "swe-agent"


def test_text_actions_eps_submit_loop() -> None:
    _, records = read(FIXTURES / "swe-agent" / EPS)
    found = calls(records)
    submits = found[9:13]
    assert {c.tool for c in submits} == {"submit"}
    assert {json.dumps(c.args) for c in submits} == {
        json.dumps({"action": "submit flag{People always make the best exploits.}\n"})
    }
    assert found[8].args == {"action": "submit flat{People always make the best exploits.}\n"}
    assert found[13].args["action"].startswith("submit 'flag{")
    assert [c.path for c in found[:2]] == ["$.trajectory[0]", "$.trajectory[1]"]
    assert longest_streak(records, 3) == (4, 2)


def test_function_calling_history_wins() -> None:
    _, records = read(FIXTURES / "swe-agent" / MARSHMALLOW)
    found = calls(records)
    assert [c.tool for c in found[:3]] == ["create", "edit", "bash"]
    assert found[0].path == "$.history[2].tool_calls[0]"
    assert found[0].args == {"filename": "reproduce.py"}
    # the demonstration reuses call ids for different calls: a reused id is dropped
    assert found[2].call_id == "call_5iDdbOYybq7L19vqXmR0DPaU"
    assert found[3].call_id is None
    assert found[-1].tool == "submit"


def test_text_action_edge_cases() -> None:
    fmt, records = read(FIXTURES / "swe-agent/synthetic--text-actions.traj")
    assert fmt == "swe-agent"
    assert summary(records) == [
        ("ls", {"action": "ls -F\n"}, None, None, "$.trajectory[0]", False),
        ("submit", {"action": "submit flag{x}\n"}, None, None, "$.trajectory[1]", False),
        ("submit", {"action": "submit flag{x}\n"}, None, None, "$.trajectory[2]", False),
        ("submit", {"action": "submit  flag{x}\n"}, None, None, "$.trajectory[3]", False),
        # $.trajectory[4]: an empty action ran no command
        ("BAD", None, "$.trajectory[5]"),
        ("BAD", None, "$.trajectory[6]"),
        ("BAD", None, "$.trajectory[7]"),
        ("open", {"action": '  open "src/a.py" 10'}, None, None, "$.trajectory[8]", False),
    ]
    assert longest_streak(records)[0] == 2  # demo tool_calls in history are not calls


def test_function_calling_edge_cases() -> None:
    _, records = read(FIXTURES / "swe-agent/synthetic--function-calling.traj")
    assert summary(records) == [
        ("bash", {"command": "python r.py"}, "call_1", None, "$.history[1].tool_calls[0]", False),
        ("bash", {"command": "python r.py"}, None, None, "$.history[3].tool_calls[0]", False),
        ("bash", {}, None, None, "$.history[5].tool_calls[0]", False),
    ]
    # the reused id does not make the repeat a re-delivery: the streak reaches 2
    assert longest_streak(records)[0] == 2


def test_canary_never_printed(tmp_path: Path) -> None:
    steps = [{"action": f"echo {CANARY}\n", "observation": CANARY} for _ in range(3)]
    steps += [{"action": 7}, {"observation": CANARY}]
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"environment": "x", "trajectory": steps, "history": []}))
    assert_canary_hidden("swe-agent", path)
    secret = json.dumps({"command": CANARY})
    function = {"name": "bash", "arguments": secret}
    history = [
        {"role": "assistant", "tool_calls": [{"id": f"c{n}", "function": function}]}
        for n in range(3)
    ]
    history.append(
        {"role": "assistant", "tool_calls": [{"function": {"name": "bash", "arguments": CANARY}}]}
    )
    path = tmp_path / "fc.traj"
    path.write_text(json.dumps({"trajectory": [], "history": history}))
    assert_canary_hidden("swe-agent", path)


@pytest.mark.parametrize(
    "action",
    [
        f"API_KEY={CANARY} ./deploy.sh\n",
        f"/tmp/{CANARY}/run.sh --go\n",
        f"./{CANARY}.sh\n",
        f"{CANARY}$(id)\n",
    ],
)
def test_free_text_first_word_is_never_a_secret(tmp_path: Path, action: str) -> None:
    """The first word of a text action names the tool only when it is a plain command."""
    steps = [{"action": action} for _ in range(3)]
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"trajectory": steps, "history": []}))
    _, records = read(path)
    assert [record.tool for record in records] == ["bash"] * 3
    assert_canary_hidden("swe-agent", path)


JSON_KEYS = st.sampled_from(
    ["trajectory", "history", "action", "observation", "role", "tool_calls", "function", "name",
     "arguments", "id", "is_demo"]
)  # fmt: skip
JSON_VALUES = json_shapes(
    JSON_KEYS, st.none() | st.booleans() | st.integers() | st.text(max_size=8)
)


@settings(max_examples=200, deadline=None)
@given(data=bytes_or_json(JSON_VALUES))
def test_never_raises(data: bytes) -> None:
    assert_never_raises("swe-agent", data)
