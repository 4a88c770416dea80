"""The openhands adapter: the real 30-call loop, output.jsonl, event streams, canary, fuzz."""

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
    parse_bytes,
    read,
    summary,
)
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.records import BadRecord
from loop_brake_cli.formats import get

STUCK_16667 = (
    "trajectories/openhands/gsmoon97-swe-agent-eval__MopenHands-Claude-3.5-Sonnet__django__"
    "django-16667__STUCK-LOOP.json"
)
STUCK_12713 = (
    "trajectories/openhands/gsmoon97-swe-agent-eval__MopenHands-Claude-3.5-Sonnet__django__"
    "django-12713__STUCK-LOOP.json"
)
PONYC = "OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl"


def test_acceptance_real_30_call_loop(shared_samples: Path) -> None:
    """filter --format openhands: one session, a 30-call streak, 28 denials from the 3rd call."""
    path = shared_samples / STUCK_16667
    result = run_cli("filter", "--format", "openhands", "-m", "3", str(path))
    assert result.returncode == 0, result.stderr
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(verdicts) == 50
    assert {v["sessionId"] for v in verdicts} == {str(path)}
    denied = [i for i, v in enumerate(verdicts) if v["verdict"] == "deny"]
    assert len(denied) == 28
    streak = verdicts[-30:]
    assert {v["toolName"] for v in streak} == {"str_replace_editor"}
    assert len({v["hashPrefix"] for v in streak}) == 1
    assert [v["count"] for v in streak] == list(range(1, 31))
    assert denied == list(range(22, 50))  # the first denial is the streak's third call
    # the 30th call exists only in fncall_response
    assert verdicts[-1]["path"] == "$.fncall_response.choices[0].message.tool_calls[0]"
    assert verdicts[-1]["callId"] == "toolu_50"


@pytest.mark.parametrize(("name", "count", "streak"), [(STUCK_16667, 50, 30), (STUCK_12713, 34, 4)])
def test_shared_completion_logs(shared_samples: Path, name: str, count: int, streak: int) -> None:
    fmt, records = read(shared_samples / name)
    assert fmt == "openhands"
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert len(calls(records)) == count
    assert longest_streak(records)[0] == streak


def test_real_output_jsonl_record() -> None:
    fmt, records = read(FIXTURES / "openhands" / PONYC)
    assert fmt == "openhands"
    found = calls(records)
    assert len(found) == 33
    assert {c.session for c in found} == {"ponylang__ponyc-4593"}
    assert [c.call_id for c in found] == [f"toolu_{n:02d}" for n in range(1, 34)]
    assert found[0].path == "$.history[4]"
    assert found[-1].tool == "finish"
    # the arguments are the model's call, not OpenHands' translated action args
    assert "thought" not in found[0].args and "command" in found[0].args
    assert longest_streak(records)[0] == 2


@pytest.mark.parametrize(
    ("name", "tools"),
    [
        ("OpenHands__tests-runtime-trajs__basic.json", ["str_replace_editor", "finish"]),
        (
            "OpenHands__tests-runtime-trajs__wrong_initial_state.json",
            ["str_replace_editor", "execute_bash", "str_replace_editor", "finish"],
        ),
    ],
)
def test_real_event_streams(name: str, tools: list[str]) -> None:
    path = FIXTURES / "openhands" / name
    fmt, records = read(path)
    assert fmt == "openhands"
    assert [c.tool for c in calls(records)] == tools
    assert {c.session for c in calls(records)} == {str(path)}


@pytest.mark.parametrize(
    "name",
    [
        PONYC,
        "OpenHands__tests-runtime-trajs__basic.json",
        "OpenHands__tests-runtime-trajs__wrong_initial_state.json",
    ],
)
def test_shared_copies_agree(shared_samples: Path, name: str) -> None:
    assert read(shared_samples / "trajectories/openhands" / name)[0] == "openhands"


TRIMMED = "the model response was trimmed from this log"


def test_edge_cases() -> None:
    path = FIXTURES / "openhands/synthetic--edge-cases.json"
    fmt, records = read(path)
    assert fmt == "openhands"
    assert summary(records) == [
        # two calls of one response: each action picks its own tool call by id
        ("execute_bash", {"command": "ls"}, "toolu_01", None, "$[1]", False),
        ("str_replace_editor", {"command": "view", "path": "/workspace"}, "toolu_02", None,
         "$[2]", False),
        # $[3] is the observation: same metadata, not a call
        # no model_response: the action's own args
        ("execute_bash", {"command": "ls", "thought": TRIMMED}, "toolu_03", None, "$[4]", False),
        ("execute_bash", {}, "toolu_04", None, "$[5]", False),
        ("execute_bash", '{"command": "unterminated', "toolu_05", None, "$[6]", True),
        ("BAD", None, "$[7]"),
        ("BAD", None, "$[8]"),
        ("BAD", None, "$[9]"),
        ("finish", {}, "toolu_07", None, "$[10]", False),
    ]  # fmt: skip


def test_instances_keep_their_own_ids() -> None:
    """output.jsonl: every instance restarts at toolu_01; both instances' calls count."""
    call = {"id": "toolu_01", "function": {"name": "execute_bash", "arguments": '{"c": 1}'}}
    event = {"action": "run", "tool_call_metadata": {
        "function_name": "execute_bash", "tool_call_id": "toolu_01",
        "model_response": {"choices": [{"message": {"tool_calls": [call]}}]}}}  # fmt: skip
    lines = [{"instance_id": f"i{n}", "history": [event]} for n in (1, 2)]
    data = b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"
    assert get("openhands").sniff(data)
    records = parse_bytes("openhands", data)
    assert [(r.session, r.call_id, r.line) for r in records] == [
        ("i1", "toolu_01", 1),
        ("i2", "toolu_01", 2),
    ]


def test_completion_log_reads_one_representation() -> None:
    call = {"id": "toolu_01", "function": {"name": "t", "arguments": "{}"}}
    log = {
        "messages": [{"role": "assistant", "content": "<function=t>\n</function>"}],
        "fncall_messages": [{"role": "assistant", "content": "", "tool_calls": [call]}],
        "response": {"choices": [{"message": {"content": "<function=t>\n</function>"}}]},
        "fncall_response": {"choices": [{"message": {"tool_calls": [dict(call, id="toolu_02")]}}]},
    }
    records = parse_bytes("openhands", json.dumps(log).encode())
    assert [(r.call_id, r.path) for r in records] == [
        ("toolu_01", "$.fncall_messages[0].tool_calls[0]"),
        ("toolu_02", "$.fncall_response.choices[0].message.tool_calls[0]"),
    ]


def test_canary_never_printed(tmp_path: Path) -> None:
    def event(n: int, arguments: str) -> dict:
        call = {"id": f"toolu_{n}", "function": {"name": "execute_bash", "arguments": arguments}}
        metadata = {
            "function_name": "execute_bash",
            "tool_call_id": f"toolu_{n}",
            "model_response": {"choices": [{"message": {"tool_calls": [call]}}]},
        }
        return {"action": "run", "args": {"command": CANARY}, "tool_call_metadata": metadata}

    secret = json.dumps({"command": CANARY})
    events = [{"source": "user", "action": "message", "args": {"content": CANARY}}]
    events += [event(n, secret) for n in range(3)] + [event(9, CANARY + "{")]
    events += [{"action": "run", "tool_call_metadata": {"function_name": 3, "x": CANARY}}]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    assert_canary_hidden("openhands", path)


JSON_KEYS = st.sampled_from(
    ["action", "observation", "tool_call_metadata", "function_name", "tool_call_id",
     "model_response", "choices", "message", "tool_calls", "id", "function", "arguments",
     "args", "history", "instance_id", "fncall_messages", "fncall_response", "messages",
     "response", "role", "name", "source", "thought", "issue", "owner", "repo", "number"]
)  # fmt: skip
JSON_VALUES = json_shapes(
    JSON_KEYS,
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=5)
    | st.sampled_from(["{}", "{", "run", "agent", "user"]),
    dict_size=6,
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(data=bytes_or_json(JSON_VALUES))
def test_never_raises(data: bytes) -> None:
    assert_never_raises("openhands", data)


def test_older_history_pairs_and_late_history() -> None:
    """[action, observation] pairs are read; an instruction-first record is still detected."""
    call = {"id": "toolu_01", "function": {"name": "execute_bash", "arguments": '{"c": 1}'}}
    metadata = {"function_name": "execute_bash", "tool_call_id": "toolu_01",
                "model_response": {"choices": [{"message": {"tool_calls": [call]}}]}}  # fmt: skip
    pair = [{"action": "run", "tool_call_metadata": metadata}, {"observation": "run"}]
    record = {"instance_id": "i1", "instruction": "x" * 70000, "history": [pair]}
    data = json.dumps(record).encode() + b"\n"
    assert get("openhands").sniff(data[:65536])
    (found,) = parse_bytes("openhands", data)
    assert (found.tool, found.args, found.path) == ("execute_bash", {"c": 1}, "$.history[0][0]")


def test_derived_messages_only_file_read_as_openhands(shared_samples: Path) -> None:
    """--format openhands on the DERIVED {"messages": [...]} copy gives the same 50 calls."""
    name = (
        "trajectories/openhands/DERIVED__gsmoon97-swe-agent-eval__django__django-16667__"
        "chat_messages_only.json"
    )
    _, records = read(shared_samples / name, "openhands")
    assert len(calls(records)) == 50
    assert longest_streak(records) == (30, 28)


def test_sdk_v1_history() -> None:
    """Agent-SDK ActionEvents: tool_call arguments, else the action without its kind."""
    fmt, records = read(FIXTURES / "openhands/synthetic--sdk-v1-output.jsonl")
    assert fmt == "openhands"
    records = calls_and_errors(records)  # results: test_formats_results_usage.py
    assert [(r.tool, r.args, r.call_id, r.path) for r in records] == [
        ("terminal", {"command": "pytest -q"}, "call_1", "$.history[1]"),
        ("terminal", {"command": "pytest -q"}, "call_2", "$.history[3]"),
        ("terminal", {"command": "pytest -q"}, "call_3", "$.history[5]"),
        ("file_editor", {"command": "view", "path": "/w/a.py"}, "call_4", "$.history[7]"),
        ("finish", {}, "call_5", "$.history[8]"),
    ]
    assert {r.session for r in records} == {"sdk__demo-1"}
    assert longest_streak(records) == (3, 1)


def test_sdk_v1_event_files_share_their_conversation() -> None:
    folder = FIXTURES / "openhands/synthetic--sdk-v1-conversation"
    files = sorted(str(p) for p in (folder / "events").glob("event-*.json"))
    result = run_cli("filter", "--format", "openhands", "--continue-sessions", *files)
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [v["callId"] for v in verdicts] == ["call_1", "call_2"]
    assert {v["sessionId"] for v in verdicts} == {str(folder)}
    assert [v["count"] for v in verdicts] == [1, 2]


# Older output, before function calling: no tool_call_metadata anywhere in the history.
EDIT = "edit_file_by_replace(\n'/workspace/app.py',\nto_replace=\"print('hi')\",\nnew_content=\"print('hello')\"\n)"  # noqa: E501


def test_older_resolver_output_flat_actions() -> None:
    """As the resolver's mock output.jsonl: actions written flat, sessions from the issue."""
    fmt, records = read(FIXTURES / "openhands/synthetic--resolver-output.jsonl")
    assert fmt == "openhands"
    records = calls_and_errors(records)  # results: test_formats_results_usage.py
    assert [(r.session, *summary([r])[0]) for r in records] == [
        ("octo/hello#5", "run", {"command": "ls"}, None, 1, "$.history[1]", False),
        ("octo/hello#5", "run_ipython", {"code": "print(open('README.md').read())"}, None, 1,
         "$.history[3]", False),
        # $.history[0] is the user's message, [2] and [4] observations, [5] finish
        ("octo/hello#7", "run_ipython", {"code": "open_file('/workspace/app.py')"}, None, 2,
         "$.history[1]", False),
        ("octo/hello#7", "run_ipython", {"code": EDIT}, None, 2, "$.history[3]", False),
        ("octo/hello#7", "run_ipython", {"code": EDIT}, None, 2, "$.history[5]", False),
        ("octo/hello#7", "run_ipython", {"code": EDIT}, None, 2, "$.history[7]", False),
        ("octo/hello#7", "run", {"command": "python app.py"}, None, 2, "$.history[9]", False),
    ]  # fmt: skip
    # the same edit three times, each with a new apology in its thought: one streak of 3
    assert longest_streak(records) == (3, 1)


def test_older_action_observation_pairs() -> None:
    """As a 2024 CodeActAgent output.jsonl: serialized events in [action, observation] pairs."""
    fmt, records = read(FIXTURES / "openhands/synthetic--older-pairs.jsonl")
    assert fmt == "openhands"
    calc = "/workspace/calc.py"
    assert summary(records) == [
        ("run", {"command": "ls", "background": False}, None, None, "$.history[1][0]", False),
        ("run_ipython", {"code": "print(1 + 1)"}, None, None, "$.history[2][0]", False),
        # $.history[3][0] is a run whose source is the user: not the model's call
        ("read", {"path": calc, "start": 0, "end": -1}, None, None, "$.history[4][0]", False),
        ("write", {"path": calc, "content": "def add(a, b):\n    return a + b\n", "start": 0,
                   "end": -1}, None, None, "$.history[5][0]", False),
        ("browse", {"url": "https://docs.python.org/3/"}, None, None, "$.history[6][0]", False),
        # $.history[7][0] is the agent's message
        ("run", {"command": "ls", "background": False}, None, None, "$.history[8][0]", False),
        # $.history[9][0] is finish
    ]  # fmt: skip
    assert {r.session for r in records} == {"demo__calc-1"}
    assert longest_streak(records) == (1, 0)


def test_older_event_stream() -> None:
    path = FIXTURES / "openhands/synthetic--older-event-stream.json"
    fmt, records = read(path)
    assert fmt == "openhands"
    test_a = {"path": "/workspace/test_a.py", "content": "def test_a():\n    assert True\n",
              "start": 1, "end": -1}  # fmt: skip
    assert summary(records) == [
        # recall (the user's), think, an environment's run, an unknown action and finish are not
        ("run", {"command": "pytest -q", "is_input": False}, None, None, "$[2]", False),
        ("run", {"command": "pytest -q", "is_input": False}, None, None, "$[4]", False),
        ("edit", test_a, None, None, "$[7]", False),
    ]
    assert {r.session for r in records} == {str(path)}
    assert longest_streak(records) == (2, 0)


def test_older_shapes_edge_cases() -> None:
    flat = {"command": "ls", "thought": "t", "action": "run", "is_confirmed": "confirmed"}
    data = json.dumps([flat, {"action": ["run"]}, {"action": "run", "args": "ls -l"}]).encode()
    assert get("openhands").sniff(data)  # flat events, no source: still OpenHands
    assert summary(parse_bytes("openhands", data)) == [
        ("run", {"command": "ls"}, None, None, "$[0]", False),
        ("run", "ls -l", None, None, "$[2]", True),
    ]
    # a history with tool_call_metadata is function calling: a bare action there is not a call
    call = {"id": "toolu_01", "function": {"name": "execute_bash", "arguments": '{"c": 1}'}}
    metadata = {"function_name": "execute_bash", "tool_call_id": "toolu_01",
                "model_response": {"choices": [{"message": {"tool_calls": [call]}}]}}  # fmt: skip
    mixed = [{"action": "run", "tool_call_metadata": metadata}, dict(flat, source="agent")]
    records = parse_bytes("openhands", json.dumps(mixed).encode())
    assert [(r.tool, r.path) for r in records] == [("execute_bash", "$[0]")]
    # a record without instance_id or issue is the file's session
    record = {"history": [dict(flat, source="agent")], "issue": {"owner": "o", "repo": 5}}
    (found,) = parse_bytes("openhands", json.dumps(record).encode())
    assert found.session == "fuzz.json"


def test_older_output_detection_does_not_need_instance_id() -> None:
    head = (FIXTURES / "openhands/synthetic--resolver-output.jsonl").read_bytes()
    assert b"instance_id" not in head and get("openhands").sniff(head)
    pairs = (FIXTURES / "openhands/synthetic--older-pairs.jsonl").read_bytes()
    assert get("openhands").sniff(pairs.replace(b'"instance_id"', b'"question_id"'))
    # an OpenHands action name alone, without a field only OpenHands writes, is not enough
    other = {"history": [{"role": "assistant", "action": "edit"}], "trajectory": []}
    assert not get("openhands").sniff(json.dumps(other).encode())


def test_canary_never_printed_by_replay_older_output(tmp_path: Path) -> None:
    def run(thought: str) -> dict:
        return {"command": f"deploy --token {CANARY}", "thought": thought, "keep_prompt": True,
                "action": "run", "is_confirmed": "confirmed", "action_risk": None}  # fmt: skip

    history = [{"content": CANARY, "wait_for_response": False, "action": "message"}]
    history += [run(f"{CANARY} try {n}") for n in range(3)]
    history += [{"content": CANARY, "command": CANARY, "exit_code": 1, "observation": "run"}]
    history += [{"action": "run", "args": f"{CANARY}{{", "source": "agent"}]
    record = {"issue": {"owner": "octo", "repo": "hello", "number": 1, "body": CANARY},
              "instruction": CANARY, "history": history}  # fmt: skip
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert read(path)[0] == "openhands"
    for mode in ([], ["--verdicts"], ["--json"]):
        result = run_cli("replay", *mode, str(path))
        assert CANARY.encode() not in result.stdout + result.stderr, mode
    verdicts = run_cli("replay", "--verdicts", str(path)).stdout.splitlines()
    assert [json.loads(v)["verdict"] for v in verdicts] == ["pass", "pass", "deny", "pass"]
