"""`loop-brake state list|reset` against a store the real hook wrote."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli_env, run_cli

SECRET = "CANARY-state-51c2"


def call(state: Path, session: str, i: int, command: str = SECRET, call_id: object = None) -> None:
    payload = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"t{i}" if call_id is None else call_id,
    }
    result = run_cli("hook", "--state", str(state), input=json.dumps(payload).encode())
    assert result.returncode == 0, result.stderr


def test_list_shows_sessions_counts_prefixes_and_ages(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    for i in range(3):
        call(state, "alpha", i)
    call(state, "beta", 9, command="ls")
    result = run_cli("state", "list", "--state", str(state))
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines[0].split() == ["SESSION", "TOOL", "COUNT", "HASH", "CALL", "ID", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["alpha"][1:3] == ["Bash", "3"]
    assert len(rows["alpha"][3]) == 12
    assert rows["alpha"][4] == "t2"
    assert rows["alpha"][5].endswith("s")
    assert rows["beta"][2] == "1"
    assert SECRET.encode() not in result.stdout + result.stderr
    as_json = run_cli("state", "list", "--state", str(state), "--json", "--session", "alpha")
    record = json.loads(as_json.stdout)
    assert record["sessionId"] == "alpha" and record["count"] == 3
    assert record["hashPrefix"] == rows["alpha"][3]


def test_reset_one_session_then_all(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    for i in range(2):
        call(state, "alpha", i)
        call(state, "beta", 10 + i)
    result = run_cli("state", "reset", "--session", "alpha", "--state", str(state))
    assert result.returncode == 0
    assert b"1 removed" in result.stderr
    listing = run_cli("state", "list", "--state", str(state), "--json").stdout
    assert [json.loads(x)["sessionId"] for x in listing.splitlines()] == ["beta"]
    # alpha starts over: two more identical calls are allowed
    call(state, "alpha", 5)
    missing = run_cli("state", "reset", "--session", "nope", "--state", str(state))
    assert missing.returncode == 4
    everything = run_cli("state", "reset", "--all", "--state", str(state))
    assert everything.returncode == 0 and b"2 removed" in everything.stderr
    assert run_cli("state", "list", "--state", str(state), "--json").stdout == b""


def test_no_store_yet_is_empty_not_an_error(tmp_path: Path) -> None:
    state = tmp_path / "never" / "s.db"
    result = run_cli("state", "list", "--state", str(state))
    assert result.returncode == 0
    assert b"no sessions" in result.stderr
    assert not state.exists()
    assert run_cli("state", "reset", "--all", "--state", str(state)).returncode == 0


def test_state_path_from_environment(tmp_path: Path) -> None:
    state = tmp_path / "env.db"
    payload = {"session_id": "e", "tool_name": "Read", "tool_input": {}, "tool_use_id": "x"}
    env = cli_env(LOOP_BRAKE_STATE=str(state))
    assert run_cli("hook", input=json.dumps(payload).encode(), env=env).returncode == 0
    assert state.exists()
    listing = run_cli("state", "list", "--json", env=env)
    assert json.loads(listing.stdout)["sessionId"] == "e"
    xdg = cli_env(XDG_STATE_HOME=str(tmp_path / "xdg"))
    xdg.pop("LOOP_BRAKE_STATE", None)
    assert run_cli("hook", input=json.dumps(payload).encode(), env=xdg).returncode == 0
    assert (tmp_path / "xdg" / "loop-brake" / "state.db").exists()


def test_list_refuses_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    # read-only: the file is neither moved aside nor changed (issue 10)
    state = tmp_path / "s.db"
    state.write_bytes(b"garbage" * 1000)
    result = run_cli("state", "list", "--state", str(state))
    assert result.returncode == 2
    assert b"is not an SQLite file" in result.stderr
    assert b"Traceback" not in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["s.db"]


def test_call_ids_are_shown_as_given_integer_or_string(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    call(state, "numeric", 0, call_id=107)  # an integer tool_use_id
    call(state, "text", 0, call_id="107")
    listing = run_cli("state", "list", "--state", str(state), "--json")
    ids = {
        json.loads(line)["sessionId"]: json.loads(line)["callId"]
        for line in listing.stdout.splitlines()
    }
    assert ids == {"numeric": 107, "text": "107"}
    table = run_cli("state", "list", "--state", str(state)).stdout.decode().splitlines()
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows["numeric"][4] == rows["text"][4] == "107"


def test_reset_without_a_session_asks_for_all(tmp_path: Path) -> None:
    """``state reset`` alone forgets nothing: every session's streak goes only with --all."""
    state = tmp_path / "s.db"
    call(state, "alpha", 1)
    bare = run_cli("state", "reset", "--state", str(state))
    assert bare.returncode == 2 and bare.stdout == b""
    assert bare.stderr == (
        b"loop-brake state reset: give --session KEY, or --all to forget every session\n"
    )
    both = run_cli("state", "reset", "--all", "--session", "alpha", "--state", str(state))
    assert both.returncode == 2 and b"exclude each other" in both.stderr
    listing = run_cli("state", "list", "--state", str(state), "--json").stdout
    assert [json.loads(x)["sessionId"] for x in listing.splitlines()] == ["alpha"]
