"""Which results the adapters flag as errors (``ToolResult.error``), for ``[same_error]``.

A result is an error only where the transcript records the failure in a field of
its own (an error observation, an exit code, a failed status), never because of
what its text says. The real fixtures (tests/fixtures/SOURCES.md gives their
repository, path and commit) show the rule firing on real failures and real
successes left alone; small written lines pin the edges. Without a policy nothing
of this is read: the outputs stay as they were (``/work/baseline.sh``, the docs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import CANARY, FIXTURES, read
from conftest import run_cli

from loop_brake_cli.core.records import ToolResult

PONYC = (
    FIXTURES
    / "openhands"
    / ("OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl")
)
CODEX_MCP = FIXTURES / "codex" / "real--codemie-rollout-019e1695-EXCERPT-mcp-namespace.jsonl.gz"
CODEX_POLLS = (
    FIXTURES / "codex" / "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
)
CODEX_SHELL = FIXTURES / "codex" / "real--codemie-rollout-019b7f94-shell.jsonl"
EPS = FIXTURES / "swe-agent" / "SWE-agent__trajectories-demonstrations-ctf-crypto__eps.traj"


def errors(path: Path, fmt: str | None = None) -> tuple[list, int]:
    """(call ids of the results flagged as errors, number of results) of one file."""
    _, records = read(path, fmt)
    results = [r for r in records if isinstance(r, ToolResult)]
    assert all(r.error in (True, None) for r in results)  # an error, or nothing said
    return [r.call_id for r in results if r.error], len(results)


def policy(tmp_path: Path, after: int) -> str:
    path = tmp_path / "same-error.toml"
    path.write_text(f"[same_error]\nafter = {after}\n")
    return str(path)


def denied(policy_file: str, path: Path | str, *extra: str) -> list[dict]:
    """The verdict lines ``replay --verdicts --policy`` denies, read from a real run."""
    done = run_cli("replay", "--verdicts", "--policy", policy_file, *extra, str(path))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [line for line in lines if line["verdict"] == "deny"]


# --- OpenHands -----------------------------------------------------------------------


def test_openhands_flags_the_commands_whose_exit_code_is_not_zero() -> None:
    # ls src/lib exits 2, grep -r exits 1; the 10 other commands exit 0, the editor
    # observations (read, edit) record no failure
    assert errors(PONYC) == (["toolu_02", "toolu_08"], 32)


def test_same_error_fires_on_the_real_openhands_run(tmp_path: Path) -> None:
    # after = 1: the failed `ls src/lib` (toolu_02) denies the next commands until
    # another tool is called (toolu_12, the editor); the seed's brake denies none
    lines = denied(policy(tmp_path, 1), PONYC)
    assert [line["callId"] for line in lines] == [f"toolu_{n:02d}" for n in range(3, 12)]
    assert {(line["rule"], line["toolName"], line["errors"]) for line in lines} == {
        ("same_error", "execute_bash", 1)
    }
    assert denied(policy(tmp_path, 2), PONYC) == []  # its two errors differ


def _events(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    return path


def _run(call: str, observation: dict) -> list[dict]:
    """A call and its observation, as OpenHands writes them with function calling."""
    meta = {"function_name": "execute_bash", "tool_call_id": call}
    action = {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}}
    return [{**action, "tool_call_metadata": meta}, {**observation, "tool_call_metadata": meta}]


def test_openhands_error_observations_and_exit_codes(tmp_path: Path) -> None:
    base = {"source": "agent", "observation": "run", "content": "out"}
    events = [
        *_run("a", {**base, "observation": "error", "content": "bad parameter"}),
        *_run("b", {**base, "extras": {"metadata": {"exit_code": 2}}}),
        *_run("c", {**base, "extras": {"exit_code": 1}}),  # older versions
        *_run("d", {**base, "extras": {"metadata": {"exit_code": -1}}}),  # still running
        *_run("e", {**base, "extras": {"metadata": {"exit_code": 0}}}),
        *_run("f", {**base, "content": "ERROR: text is text", "extras": {}}),
        *_run("g", {**base, "extras": {"metadata": {"exit_code": "1"}}}),  # not a number
        *_run("h", {**base, "success": False, "extras": {"metadata": {"exit_code": True}}}),
    ]
    assert errors(_events(tmp_path, events), "openhands") == (["a", "b", "c"], 8)


def test_openhands_older_history_error_observation(tmp_path: Path) -> None:
    # before function calling: the observation answers the call its cause names
    events = [
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "make"}},
        {"id": 2, "cause": 1, "source": "agent", "observation": "error", "content": "x"},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "ls"}},
        {"id": 4, "cause": 3, "source": "agent", "observation": "run", "content": "a b",
         "extras": {"command_id": -1, "command": "ls", "exit_code": 0}},
    ]  # fmt: skip
    _, records = read(_events(tmp_path, events), "openhands")
    assert [r.error for r in records if isinstance(r, ToolResult)] == [True, None]


def test_openhands_sdk_errors(tmp_path: Path) -> None:
    """The agent SDK (V1): an observation with ``is_error``, an ``AgentErrorEvent``
    (written from the SDK's field names, as tests/fixtures/openhands/synthetic--sdk-v1-*)."""

    def action(call: str) -> dict:
        return {"kind": "ActionEvent", "source": "agent", "tool_name": "terminal",
                "tool_call_id": call, "tool_call": {"id": call, "name": "terminal",
                "arguments": json.dumps({"command": f"make {call}"})}}  # fmt: skip

    def observed(call: str, is_error: object) -> dict:
        observation = {"kind": "TerminalObservation", "content": [], "is_error": is_error}
        return {"kind": "ObservationEvent", "source": "environment", "tool_name": "terminal",
                "tool_call_id": call, "observation": observation}  # fmt: skip

    events = [
        action("a"), observed("a", True),
        action("b"), {"kind": "AgentErrorEvent", "source": "agent", "tool_name": "terminal",
                      "tool_call_id": "b", "error": "no such tool argument"},
        action("c"), observed("c", False),
        action("d"), observed("d", "true"),  # not a boolean: nothing said
    ]  # fmt: skip
    assert errors(_events(tmp_path, events), "openhands") == (["a", "b"], 4)
    # real-shaped V1 successes stay no error
    assert errors(FIXTURES / "openhands" / "synthetic--sdk-v1-output.jsonl")[0] == []


# --- Codex rollouts ----------------------------------------------------------------


def test_codex_flags_the_exit_code_codex_writes_above_the_output() -> None:
    # exec_command `ps …` exits 1 ("Process exited with code 1" in Codex's header)
    assert errors(CODEX_MCP) == (["call_3f7AXDMZ9PHz7zedrTO4twut"], 7)
    # the write_stdin poll that saw `npm test` exit 1; the exec_command that started
    # it answered "Process running", and its exec_command_end (exit 1, failed) came
    # after that output: it changes nothing
    assert errors(CODEX_POLLS) == (["call_PAoFGDC6cPakVp8JImcOm2uB"], 37)


def test_codex_successes_are_not_errors() -> None:
    # codex exec 0.77: each output is the JSON string {"output", "metadata": {"exit_code": 0}}
    assert errors(CODEX_SHELL) == ([], 3)


def test_same_error_fires_on_the_real_codex_session(tmp_path: Path) -> None:
    lines = denied(policy(tmp_path, 1), CODEX_MCP)
    assert [(line["callId"], line["rule"]) for line in lines] == [
        ("call_fOqgRQMFHp9giVTCngL0DIS2", "same_error")  # the next exec_command
    ]
    assert denied(policy(tmp_path, 1), CODEX_SHELL) == []


def _rollout(tmp_path: Path, lines: list[dict]) -> Path:
    meta = {"type": "session_meta", "payload": {"id": "s-1"}}
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [meta, *lines]))
    return path


def _item(payload: dict) -> dict:
    return {"timestamp": "t", "type": "response_item", "payload": payload}


def _event(payload: dict) -> dict:
    return {"timestamp": "t", "type": "event_msg", "payload": payload}


def _call(call_id: str, name: str = "exec_command") -> dict:
    arguments = json.dumps({"cmd": f"make {call_id}", "token": CANARY})  # never repeats
    return _item(
        {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}
    )


def _output(call_id: str, output: str) -> dict:
    return _item({"type": "function_call_output", "call_id": call_id, "output": output})


HEADER = "Chunk ID: ab12\nWall time: 0.1 seconds\n{}\nOriginal token count: 3\nOutput:\n{}"


@pytest.mark.parametrize(
    ("output", "error"),
    [
        (HEADER.format("Process exited with code 2", "boom"), True),
        (HEADER.format("Process exited with code 0", "Process exited with code 1"), False),
        ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom", True),
        ("Exit code: 0\nWall time: 0.2 seconds\nOutput:\nError: still text", False),
        # a first line Codex never writes: not its header, nothing is read
        ("make: boom\nProcess exited with code 1\nOutput:\n", False),
        ('{"output": "boom", "metadata": {"exit_code": 1, "duration_seconds": 0.1}}', True),
        ('{"output": "ok", "metadata": {"exit_code": 0}}', False),
        ('{"output": "exit_code 1", "metadata": {}}', False),
        ("{not json", False),
        ("Process running with session ID 7\nOutput:\n", False),
    ],
)
def test_codex_output_fields(tmp_path: Path, output: str, error: bool) -> None:
    path = _rollout(tmp_path, [_call("c1"), _output("c1", output)])
    assert errors(path) == ((["c1"] if error else []), 1)


def test_codex_end_events_before_the_output(tmp_path: Path) -> None:
    ok = "Wall time: 0.1 seconds\nOutput:\ndone"
    lines = [
        _call("x1"),
        _event({"type": "exec_command_end", "call_id": "x1", "exit_code": 1, "status": "failed"}),
        _output("x1", ok),
        _call("x2", "apply_patch"),
        _event({"type": "patch_apply_end", "call_id": "x2", "success": False}),
        _output("x2", ok),
        _call("x3", "js"),
        _event({"type": "mcp_tool_call_end", "call_id": "x3", "result": {"Err": "gone"}}),
        _output("x3", ok),
        _call("x4", "js"),
        _event({"type": "mcp_tool_call_end", "call_id": "x4",
                "result": {"Ok": {"content": [], "isError": True}}}),
        _output("x4", ok),
        _call("x5"),
        _event({"type": "exec_command_end", "call_id": "x5", "exit_code": 0,
                "status": "completed"}),
        _output("x5", ok),
        _call("x6", "apply_patch"),
        _event({"type": "patch_apply_end", "call_id": "x6", "success": True}),
        _output("x6", ok),
        _call("x7", "js"),
        _event({"type": "mcp_tool_call_end", "call_id": "x7", "result": {"Ok": {"content": []}}}),
        _output("x7", ok),
        _call("x8"),
        _output("x8", ok),  # its end event comes after: the output stands as it was
        _event({"type": "exec_command_end", "call_id": "x8", "exit_code": 1, "status": "failed"}),
    ]  # fmt: skip
    assert errors(_rollout(tmp_path, lines)) == (["x1", "x2", "x3", "x4"], 8)


def test_codex_same_error_and_the_canary(tmp_path: Path) -> None:
    """Arguments and results carry a canary; no output of a policy run shows it."""
    failed = HEADER.format("Process exited with code 1", f"make: *** {CANARY} Error 1")
    lines = []
    for n in range(4):
        lines += [_call(f"m{n}"), _output(f"m{n}", failed)]
    path = _rollout(tmp_path, lines)
    rule = policy(tmp_path, 2)
    deny = denied(rule, path)
    assert [(line["callId"], line["rule"], line["errors"]) for line in deny] == [
        ("m2", "same_error", 2), ("m3", "same_error", 2)
    ]  # fmt: skip
    for args in (
        ("replay", "--verdicts", "--policy", rule, str(path)),
        ("replay", "--json", "--policy", rule, str(path)),
        ("replay", "--policy", rule, str(path)),
        ("replay", "--compare-policy", rule, str(path)),
        ("replay", "--compare-policy", rule, "--json", str(path)),
    ):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        assert CANARY.encode() not in done.stdout + done.stderr
        assert b"same_error" in done.stdout  # the rule was reached, not skipped


# --- codex exec --json ----------------------------------------------------------


def _exec(tmp_path: Path, items: list[dict]) -> Path:
    lines = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.started"}]
    lines += [{"type": "item.completed", "item": item} for item in items]
    path = tmp_path / "exec.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_codex_exec_failed_items(tmp_path: Path) -> None:
    command = {"type": "command_execution", "command": "make", "aggregated_output": "x"}
    mcp = {"type": "mcp_tool_call", "server": "gh", "tool": "search", "arguments": {}}
    items = [
        {**command, "id": "i0", "exit_code": 2, "status": "failed"},
        {**command, "id": "i1", "exit_code": 1, "status": "completed"},
        {**command, "id": "i2", "exit_code": 0, "status": "completed"},
        {**mcp, "id": "i3", "result": None, "error": {"message": "no"}, "status": "failed"},
        {**mcp, "id": "i4", "result": {"content": []}, "error": None, "status": "completed"},
        {"type": "file_change", "id": "i5", "changes": [], "status": "failed"},
        {"type": "file_change", "id": "i6", "changes": [], "status": "completed"},
    ]
    assert errors(_exec(tmp_path, items)) == (["i0", "i1", "i3", "i5"], 7)


def test_codex_exec_real_successes_are_not_errors() -> None:
    for path in sorted((FIXTURES / "codex-exec").glob("real--*.jsonl")):
        found, results = errors(path)
        assert found == [] and results >= 1, path.name
    # the written edge case: `make test` failed (exit 1) in its second thread
    assert errors(FIXTURES / "codex-exec" / "synthetic--edge-cases.jsonl")[0] == [
        "item_0#2"
    ]  # the second thread: ids get its number


def test_same_error_fires_on_codex_exec(tmp_path: Path) -> None:
    items = [
        {"type": "command_execution", "id": f"i{n}", "command": f"make t{n}",
         "aggregated_output": "FAIL\n", "exit_code": 1, "status": "failed"}
        for n in range(3)
    ]  # fmt: skip
    lines = denied(policy(tmp_path, 2), _exec(tmp_path, items))
    assert [(line["callId"], line["rule"]) for line in lines] == [("i2", "same_error")]


# --- OpenAI Responses, OpenAI chat, SWE-agent ------------------------------------------


def test_openai_responses_mcp_call_error(tmp_path: Path) -> None:
    call = {"type": "mcp_call", "server_label": "fs", "name": "read", "arguments": "{}"}
    items = [
        {**call, "id": "m1", "output": None, "error": "no such file"},
        {**call, "id": "m2", "output": "text", "error": None},
        {"type": "function_call", "call_id": "f1", "name": "run", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": "Error: text is text"},
    ]
    path = tmp_path / "input.json"
    path.write_text(json.dumps(items))
    assert errors(path, "openai-responses") == (["m1"], 3)
    assert errors(FIXTURES / "openai-responses" / "synthetic--results-usage.jsonl")[0] == []


def test_formats_without_an_error_field_flag_nothing() -> None:
    # Chat Completions tool messages and SWE-agent steps record no failure
    for folder in ("openai-chat", "swe-agent"):
        for path in sorted((FIXTURES / folder).iterdir()):
            found, _ = errors(path)
            assert found == [], path.name


def test_same_error_never_fires_on_swe_agent_wrong_flag_loop(tmp_path: Path) -> None:
    # four identical `submit`s, each answered "Wrong flag!": text, not a recorded
    # failure; the seed's streak denies the 3rd and 4th, [same_error] adds nothing
    lines = denied(policy(tmp_path, 1), EPS)
    assert [line["rule"] for line in lines] == ["streak", "streak"]
