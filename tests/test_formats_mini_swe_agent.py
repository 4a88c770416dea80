"""The mini-swe-agent adapter: v1 action blocks, v2 recorded actions; results, usage, canary.

The v2 fixtures were written from mini-swe-agent's source (2.4: ``agents/default.py``,
``models/utils/actions_*.py``, ``agents/interactive.py``; no public v2 trajectory was
found). The real v1 runs (Gemini 3 Pro on SWE-bench Verified, mini-swe-agent 1.15.0;
an interactive ``mini`` run, 1.9.1) are read from ``shared/samples-real`` when there,
their calls and denials counted by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import (
    CANARY,
    FIXTURES,
    SAMPLES,
    assert_canary_hidden,
    calls,
    longest_streak,
    read,
    summary,
)
from conftest import SHARED_SKIP, run_cli, shared_dir

from loop_brake_cli.core.records import BadRecord, ToolResult, Usage, UserTurn
from loop_brake_cli.formats import detect, get, parse_records
from loop_brake_cli.readers.reader import open_source

MINI = FIXTURES / "mini-swe-agent"
SAMPLE = SAMPLES / "mini-swe-agent.traj.json"
FIX = "sed -i 's/Helo/Hello/' hello.py && python hello.py"


def bash(command: str) -> tuple[str, dict[str, str]]:
    return "bash", {"command": command}


def calls_of(records: list) -> list[tuple[str, Any, Any, str | None]]:
    return [(c.tool, c.args, c.call_id, c.path) for c in calls(records)]


def test_own_sample_runs_the_same_fix_three_times() -> None:
    fmt, records = read(SAMPLE)
    assert fmt == "mini-swe-agent"
    assert [(c.tool, c.args) for c in calls(records)] == [bash("cat hello.py")] + [bash(FIX)] * 3
    assert longest_streak(records) == (3, 1)
    assert {c.session for c in calls(records)} == {str(SAMPLE)}


def test_v1_one_block_is_a_call_and_anything_else_a_format_error() -> None:
    """mini-swe-agent 1.x's rule: exactly one match of action_regex, stripped, ran;
    zero or two ran nothing, so a format error between identical calls keeps the streak."""
    _, records = read(MINI / "synthetic--v1-edge-cases.traj.json")
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"
    assert summary(records) == [
        ("bash", {"command": "ls -la"}, None, None, "$.messages[2].content", False),
        ("bash", {"command": "pytest -q"}, None, None, "$.messages[8].content", False),
        ("bash", {"command": "pytest -q"}, None, None, "$.messages[10].content", False),
        ("bash", {"command": "pytest -q"}, None, None, "$.messages[14].content", False),
        ("bash", {"command": "sleep 999"}, None, None, "$.messages[16].content", False),
        ("BAD", None, "$.messages[18]"),
        ("bash", {"command": submit}, None, None, "$.messages[19].content", False),
    ]
    assert longest_streak(records) == (3, 1)
    # each call's observation (a timeout notice, the submission) answers it; no format error does
    results = [r.path for r in records if isinstance(r, ToolResult)]
    assert results == [f"$.messages[{n}]" for n in (3, 9, 11, 15, 17, 20)]
    assert all(r.error is None for r in records if isinstance(r, ToolResult))
    usage = [r for r in records if isinstance(r, Usage)]
    assert [u.turn for u in usage] == [f"chatcmpl-e{n}" for n in range(1, 10)]
    assert [u.input_tokens for u in usage[:2]] == [500, 520]


def test_v2_tool_calls_are_the_recorded_actions() -> None:
    """v2: ``extra.actions`` is what ran (two in one response both count); a format
    error adds no model message but its turn's usage; a command the user typed is not
    the model's call; results pair by id, a non-zero returncode or an exception_info
    an error."""
    _, records = read(MINI / "synthetic--v2-toolcall.traj.json")
    at = "$.messages[{}].extra.actions[{}]"
    assert calls_of(records) == [
        ("bash", {"command": "cat hello.py"}, "toolu_01", at.format(2, 0)),
        ("bash", {"command": "ls"}, "toolu_02", at.format(2, 1)),
        ("bash", {"command": "python hello.py"}, "toolu_03", at.format(6, 0)),
        ("bash", {"command": "python hello.py"}, "toolu_04", at.format(8, 0)),
        ("bash", {"command": "python hello.py"}, "toolu_05", at.format(10, 0)),
        ("bash", {"command": "sed -i 's/Helo/Hello/' hello.py"}, "toolu_06", at.format(15, 0)),
        (
            "bash",
            {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
            "toolu_07",
            at.format(17, 0),
        ),
    ]
    assert longest_streak(records) == (3, 1)
    results = [(r.call_id, r.error) for r in records if isinstance(r, ToolResult)]
    assert results == [
        ("toolu_01", None),
        ("toolu_02", None),
        ("toolu_03", True),
        ("toolu_04", True),
        ("toolu_05", True),  # not executed: returncode -1, exception_info
        ("toolu_06", None),
    ]
    usage = [r for r in records if isinstance(r, Usage)]
    assert [u.turn for u in usage] == [
        "chatcmpl-t1", "chatcmpl-fe1", "chatcmpl-t2", "chatcmpl-t3", "chatcmpl-t4",
        "chatcmpl-t5", "chatcmpl-t6",
    ]  # fmt: skip
    first = usage[0]  # LiteLLM's Anthropic usage: prompt includes the cache read and write
    assert (first.input_tokens, first.output_tokens, first.cache_write_tokens) == (100, 50, 900)
    assert first.model == "claude-sonnet-4-5-20250929"


def test_v2_user_turns_are_the_users_own_messages() -> None:
    path = MINI / "synthetic--v2-toolcall.traj.json"
    source = open_source(str(path))
    try:
        records = list(parse_records(get("mini-swe-agent"), source, user_turns=True))
    finally:
        source.close()
    turns = [r.path for r in records if isinstance(r, UserTurn)]
    assert turns == [
        "$.messages[1]",
        "$.messages[12]",
        "$.messages[13]",
    ]  # task, rejection, command


def test_v2_text_based_and_responses_runs() -> None:
    _, records = read(MINI / "synthetic--v2-textbased.traj.json")
    assert [c.args["command"] for c in calls(records)] == [
        "grep -n Helo hello.py", "grep -n Helo hello.py", "sed -i 's/Helo/Hello/' hello.py",
        "rm -rf build",
    ]  # fmt: skip
    # the interruption at [7] and the rejection at [11] (the call at [10] never ran) are
    # the user's words, not observations
    results = [r.path for r in records if isinstance(r, ToolResult)]
    assert results == ["$.messages[3]", "$.messages[6]", "$.messages[9]"]
    usage = [r for r in records if isinstance(r, Usage)]
    assert [(u.turn, u.output_tokens, u.reasoning_tokens) for u in usage] == [
        ("chatcmpl-b1", 80, 40), ("chatcmpl-b2", 4096, None),
        ("chatcmpl-b3", 60, 30), ("chatcmpl-b4", 60, 30), ("chatcmpl-b5", 60, 30),
    ]  # fmt: skip
    _, records = read(MINI / "synthetic--v2-responses.traj.json")
    assert [(c.args["command"], c.call_id) for c in calls(records)] == [
        ("cat hello.py", "call_a"),
        ("python hello.py", "call_b"),
        ("git diff", "call_c"),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "call_d"),
    ]
    assert [r.call_id for r in records if isinstance(r, ToolResult)] == [
        "call_a",
        "call_b",
        "call_c",
    ]
    usage = [r for r in records if isinstance(r, Usage)]
    assert [(u.turn, u.input_tokens, u.cache_read_tokens) for u in usage] == [
        ("resp_01", 800, 0), ("resp_02", 182, 768), ("resp_03", 76, 1024), ("resp_04", 176, 1024)
    ]  # fmt: skip


def _v1_run(tmp_path: Path, regex: str | None, contents: list[str]) -> Path:
    config = {"agent": {"action_regex": regex}} if regex is not None else {}
    messages = [{"role": "assistant", "content": text} for text in contents]
    path = tmp_path / "run.traj.json"
    info = {"exit_status": "Submitted", "mini_version": "1.17.5", "config": config}
    path.write_text(
        json.dumps({"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1"})
    )
    return path


def test_v1_reads_the_run_s_own_action_regex(tmp_path: Path) -> None:
    xml = _v1_run(
        tmp_path,
        "<bash_code>(.*?)</bash_code>",
        ["<bash_code> ls </bash_code>", "```bash\nls\n```"],
    )
    assert [c.args for c in calls(read(xml)[1])] == [{"command": "ls"}]
    other = _v1_run(tmp_path, r"<cmd>(.*?)</cmd>", ["<cmd>make</cmd>", "<cmd>a</cmd><cmd>b</cmd>"])
    assert [c.args for c in calls(read(other)[1])] == [{"command": "make"}]  # by RE2


def test_v1_a_regex_it_cannot_run_safely_is_one_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "re2", None)  # the re2 extra not installed
    path = _v1_run(tmp_path, r"(a+)+<cmd>(.*?)</cmd>", ["<cmd>make</cmd>"])
    _, records = read(path)
    assert [(r.message, r.path) for r in records if isinstance(r, BadRecord)] == [
        (
            "action_regex is not one mini-swe-agent ships; reading it needs the RE2 engine: "
            "pip install 'loop-brake-cli[re2]'",
            "$.info.config.agent.action_regex",
        )
    ]
    assert calls(records) == []


def test_detected_when_a_long_submission_hides_the_version(tmp_path: Path) -> None:
    """mini-swe-agent writes ``info`` first; a 150 kB patch in it pushes mini_version and
    trajectory_format past the 64 KiB head (as in real SWE-bench runs)."""
    doc = json.loads(SAMPLE.read_text())
    doc["info"]["submission"] = "+x\n" * 50_000  # info's second key, before mini_version
    path = tmp_path / "long.traj.json"
    path.write_text(json.dumps(doc, indent=2))
    assert path.read_bytes()[:65536].find(b'"mini_version"') == -1
    fmt, records = read(path)
    assert fmt == "mini-swe-agent" and len(calls(records)) == 4


def test_sniff_wants_mini_swe_agent_s_own_keys() -> None:
    sniff = get("mini-swe-agent").sniff
    assert sniff(b'{"info": {"exit_status": "Submitted", "submission": "diff')
    assert sniff(b'{"messages": [], "trajectory_format": "mini-swe-agent-1.1"}')
    assert not sniff(b'{"messages": [{"role": "assistant", "content": "```bash\\nls\\n```"}]}')
    assert not sniff(b'{"text": "\\"mini_version\\": \\"1.0\\""}')
    assert detect(b'{"trajectory": [{"action": "ls"}], "info": {}}', "x").INFO.name == "swe-agent"


def test_no_argument_in_any_output(tmp_path: Path) -> None:
    command = f"curl -H 'Authorization: Bearer {CANARY}' https://example.invalid"
    doc = json.loads(SAMPLE.read_text())
    for message in doc["messages"]:
        if message["role"] == "assistant":
            message["content"] = f"THOUGHT: again.\n\n```bash\n{command}\n```"
    path = tmp_path / "secret.traj.json"
    path.write_text(json.dumps(doc))
    assert_canary_hidden("mini-swe-agent", path)
    for args in (
        ["replay", str(path)],
        ["replay", "--json", str(path)],
        ["replay", "--verdicts", str(path)],
    ):
        result = run_cli(*args)
        assert result.returncode == 0, result.stderr
        assert CANARY.encode() not in result.stdout + result.stderr


SHARED = shared_dir() / "samples-real" / "trajectories" / "mini-swe-agent"
# name in shared/samples-real/trajectories/mini-swe-agent/ -> (calls, denials at 3), by hand
HAND_COUNTED = {
    # Gemini 3 Pro, 1.15.0: 46 model messages, 4 format errors (4, 9, 2 and 0 blocks);
    # messages 40, 42, 44 and 48 run one sed (46 between them a format error): 2 denials
    "gruckion-mini-swe-agent__gemini-3-pro__sympy__sympy-15976.traj.json": (42, 2),
    # the same run's django-15629: a 156 kB submission ahead of mini_version; 51 model
    # messages (api_calls 51), two of them with 2 blocks
    "gruckion-mini-swe-agent__gemini-3-pro__django__django-15629.traj.json": (49, 0),
    # an interactive `mini` run, 1.9.1, no usage recorded: 6 blocks, one each
    "euforicio-test-mini-swe__last_run-1436c4bb.traj.json": (6, 0),
}


@pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_SKIP)
@pytest.mark.parametrize(("name", "expected"), HAND_COUNTED.items(), ids=list(HAND_COUNTED))
def test_real_runs_equal_the_hand_count(name: str, expected: tuple[int, int]) -> None:
    fmt, records = read(SHARED / name)
    assert fmt == "mini-swe-agent"
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert (len(calls(records)), longest_streak(records)[1]) == expected
