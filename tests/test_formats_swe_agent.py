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
    calls_and_errors,
    json_shapes,
    longest_streak,
    summary,
)
from adapter_helpers import read as read_records
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord


def read(path: Path, fmt: str | None = None) -> tuple[str, list]:
    """The calls and errors of a file (results and usage: test_formats_results_usage.py)."""
    name, records = read_records(path, fmt)
    return name, calls_and_errors(records)


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


HISTORY_ONLY = "SWE-agent__trajectories-demonstrations__function_calling_simple.traj"


def test_history_only_demonstration_is_swe_agent() -> None:
    """A demonstration holding only ``{"history": [...]}`` (no trajectory) is detected as
    swe-agent, not as a chat message list, and gives its 5 calls with their ids."""
    fmt, records = read(FIXTURES / "swe-agent" / HISTORY_ONLY)
    assert fmt == "swe-agent"
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert [c.tool for c in calls(records)] == ["find_file", "open", "edit", "bash", "submit"]
    assert all(c.call_id and c.call_id.startswith("call_") for c in calls(records))


def test_history_only_demonstration_replays_its_five_calls() -> None:
    result = run_cli("replay", "--json", str(FIXTURES / "swe-agent" / HISTORY_ONLY))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["totals"]["calls"] == 5
    assert [f["format"] for f in document["files"]] == ["swe-agent"]


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


FINAL_STEP = "synthetic--function-calling-final-step.traj"
REPEATED_FINAL = "synthetic--function-calling-repeated-final.traj"
FINAL_IN_HISTORY = "synthetic--function-calling-final-in-history.traj"


def test_final_step_only_in_the_trajectory_counts_once() -> None:
    """As SWE-agent's 6e44b9 test trajectory: 5 steps, the history holds 4 calls."""
    fmt, records = read(FIXTURES / "swe-agent" / FINAL_STEP)
    assert fmt == "swe-agent"
    edit = {"search": "def greet(name)", "replace": "def greet(name):", "replace-all": False}
    assert summary(records) == [
        ("find_file", {"file_name": "greet.py"}, "call_a1", None, "$.history[2].tool_calls[0]",
         False),
        ("open", {"path": "/demo__repo/greet.py"}, "call_a2", None, "$.history[4].tool_calls[0]",
         False),
        ("edit", edit, "call_a3", None, "$.history[6].tool_calls[0]", False),
        ("bash", {"command": "python3 /demo__repo/greet.py"}, "call_a4", None,
         "$.history[8].tool_calls[0]", False),
        # no history call has the text "submit": the step's own text form, without an id
        ("submit", {"action": "submit"}, None, None, "$.trajectory[4]", False),
    ]  # fmt: skip
    assert longest_streak(records) == (1, 0)


def test_repeated_final_step_continues_its_streak() -> None:
    """The last submit is only in the trajectory; the same text is the same call."""
    _, records = read(FIXTURES / "swe-agent" / REPEATED_FINAL)
    flag = {"flag": "flag{not_it}"}
    assert summary(records) == [
        ("bash", {"command": "ls"}, "call_b1", None, "$.history[2].tool_calls[0]", False),
        ("bash", {"command": "cat chall.py"}, "call_b2", None, "$.history[4].tool_calls[0]", False),
        # $.trajectory[1], the blocked `vim chall.py`, was redone: in neither count
        ("submit", flag, "call_b3", None, "$.history[6].tool_calls[0]", False),
        ("submit", flag, "call_b4", None, "$.history[8].tool_calls[0]", False),
        ("submit", flag, None, None, "$.trajectory[5]", False),
    ]  # fmt: skip
    assert longest_streak(records) == (3, 1)


def test_final_step_in_the_history_is_not_counted_twice() -> None:
    """4 steps (one redone) and 3 history calls: counting steps would add a 4th call."""
    _, records = read(FIXTURES / "swe-agent" / FINAL_IN_HISTORY)
    assert [(c.tool, c.call_id, c.path) for c in calls(records)] == [
        ("bash", "call_c1", "$.history[2].tool_calls[0]"),
        ("bash", "call_c2", "$.history[4].tool_calls[0]"),
        ("submit", "call_c3", "$.history[6].tool_calls[0]"),
    ]
    assert not [r for r in records if isinstance(r, BadRecord)]


def _fc_run(tmp_path: Path, steps: list, history: list) -> list:
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"trajectory": steps, "history": history}))
    return read(path)[1]


def _assistant(action: object, *tool_calls: dict) -> dict:
    return {"role": "assistant", "action": action, "tool_calls": list(tool_calls)}


def test_final_step_edge_cases(tmp_path: Path) -> None:
    ls = {"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    pwd = {"id": "c2", "function": {"name": "bash", "arguments": '{"command": "pwd"}'}}
    history = [_assistant("ls", ls)]
    # an empty last action ran nothing (an exit on a cost limit): not a call
    records = _fc_run(tmp_path, [{"action": "ls"}, {"action": ""}], history)
    assert [r.path for r in records] == ["$.history[0].tool_calls[0]"]
    # a last step that is not an object, or has no action text: nothing added, nothing raised
    for last in ([], {"action": 7}, "submit"):
        records = _fc_run(tmp_path, [{"action": "ls"}, last], history)
        assert [r.path for r in records] == ["$.history[0].tool_calls[0]"]
    # the history message with the same text holds two calls: the step's text form
    records = _fc_run(tmp_path, [{"action": "ls"}] * 2, [_assistant("ls", ls, pwd)])
    assert summary(records)[-1] == ("ls", {"action": "ls"}, None, None, "$.trajectory[1]", False)
    # the history records no action text: nothing to match, the history stands
    records = _fc_run(tmp_path, [{"action": "ls"}, {"action": "pwd"}], [_assistant(None, ls)])
    assert [r.path for r in records] == ["$.history[0].tool_calls[0]"]
    # a free-text first word never names the tool of a final step either
    last = {"action": f"API_KEY={CANARY} ./deploy.sh"}
    records = _fc_run(tmp_path, [{"action": "ls"}, last], history)
    assert records[-1].tool == "bash"


def assert_replay_hides_canary(path: Path, denied: int) -> None:
    """replay, replay --verdicts and replay --json judge the file and never print CANARY."""
    for mode in ([], ["--verdicts"], ["--json"]):
        result = run_cli("replay", *mode, str(path))
        assert CANARY.encode() not in result.stdout + result.stderr, mode
    verdicts = run_cli("replay", "--verdicts", str(path)).stdout.splitlines()
    assert [json.loads(v)["verdict"] for v in verdicts].count("deny") == denied


def test_canary_never_printed_by_replay_final_step(tmp_path: Path) -> None:
    secret = json.dumps({"flag": CANARY})
    action = f"submit '{CANARY}'"
    call = {"id": "c1", "function": {"name": "submit", "arguments": secret}}
    history = [_assistant(action, dict(call, id=f"c{n}")) for n in range(2)]
    steps = [{"action": action, "observation": CANARY} for _ in range(3)]
    path = tmp_path / "fc.traj"
    path.write_text(json.dumps({"trajectory": steps, "history": history}))
    assert_replay_hides_canary(path, denied=1)  # the final step is the third submit
    history.append(_assistant(action, dict(call, id="c2")))
    steps.append({"action": f"{CANARY}=1 ./run.sh {CANARY}"})  # text form, a free first word
    steps.append(steps[-1])
    path.write_text(json.dumps({"trajectory": steps, "history": history}))
    assert [r.tool for r in read(path)[1]] == ["submit"] * 3 + ["bash"]
    assert_replay_hides_canary(path, denied=1)


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
