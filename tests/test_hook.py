"""`loop-brake hook` for real: separate processes, a real SQLite store, each dialect.

Acceptance items 1, 2, 3 and 5 of issue 5 for the hook: three identical calls
(allow, allow, deny in the agent's own JSON), 40 concurrent calls that use the
counts 1..40 exactly once, no argument bytes anywhere, and failures that print
one stderr line and keep each agent's exit-code contract.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, run_cli, spawn_cli

CANARY = "CANARY-7f3a-do-not-leak"
MESSAGE_START = 'loop brake: tool "Bash" called 3 times in a row with identical arguments'


def claude_input(i: int = 1, session: str = "sess-1", args: object = None, **extra) -> bytes:
    payload = {
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/p/sess.jsonl",
        "cwd": "/home/u/p",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": args if args is not None else {"command": f"cat {CANARY}.txt"},
        "tool_use_id": f"toolu_{i:04d}",
    }
    payload.update(extra)
    return json.dumps(payload).encode()


def codex_input(i: int = 1, args: object = None) -> bytes:
    payload = json.loads(claude_input(i, args=args))
    payload["turn_id"] = "turn-1"
    payload["model"] = "gpt-5"
    return json.dumps(payload).encode()


def gemini_input(i: int = 1, args: object = None) -> bytes:
    return json.dumps(
        {
            "session_id": "g-1",
            "transcript_path": "/t.json",
            "cwd": "/w",
            "hook_event_name": "BeforeTool",
            "timestamp": f"2026-11-29T19:00:{i:02d}Z",
            "tool_name": "Bash",
            "tool_input": args if args is not None else {"command": CANARY},
        }
    ).encode()


def cursor_input(i: int = 1, args: object = None, event: str = "beforeMCPExecution") -> bytes:
    tool_input = args if args is not None else json.dumps({"query": CANARY})
    return json.dumps(
        {
            "conversation_id": "conv-1",
            "generation_id": f"gen-{i}",
            "hook_event_name": event,
            "workspace_roots": ["/w"],
            "tool_name": "Bash",
            "tool_input": tool_input,
        }
    ).encode()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


def hook(state: Path, payload: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("hook", "--state", str(state), *args, input=payload)


def assert_allowed(result: subprocess.CompletedProcess[bytes]) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr


def store_bytes(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in state.parent.iterdir() if p.is_file())


# -- acceptance 1: three identical calls per dialect --------------------------------


def test_claude_code_third_identical_call_is_denied(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    third = hook(state, claude_input(3))
    assert third.returncode == 0
    out = json.loads(third.stdout)
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"].startswith(MESSAGE_START)
    assert "limit 3" in specific["permissionDecisionReason"]
    assert third.stderr == b""
    # a different call resets the streak; the old one starts again at 1
    assert_allowed(hook(state, claude_input(4, args={"command": "ls"})))
    assert_allowed(hook(state, claude_input(5)))
    assert_allowed(hook(state, claude_input(6)))
    assert json.loads(hook(state, claude_input(7)).stdout)["hookSpecificOutput"]


def test_codex_deny_has_exactly_three_fields(state: Path) -> None:
    assert_allowed(hook(state, codex_input(1)))
    assert_allowed(hook(state, codex_input(2)))
    out = json.loads(hook(state, codex_input(3)).stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert sorted(out["hookSpecificOutput"]) == [
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
    ]
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert_allowed(hook(state, codex_input(4, args={"command": "pwd"})))


def test_gemini_before_tool_deny(state: Path) -> None:
    assert_allowed(hook(state, gemini_input(1)))
    assert_allowed(hook(state, gemini_input(2)))
    third = hook(state, gemini_input(3))
    out = json.loads(third.stdout)
    assert sorted(out) == ["decision", "reason"]
    assert out["decision"] == "deny"
    assert out["reason"].startswith(MESSAGE_START)
    assert_allowed(hook(state, gemini_input(4, args={"command": "other"})))


@pytest.mark.parametrize("event", ["beforeMCPExecution", "preToolUse"])
def test_cursor_deny_and_string_tool_input(state: Path, event: str) -> None:
    # tool_input as a JSON string and as the object it encodes hash alike
    assert_allowed(hook(state, cursor_input(1, event=event)))
    assert_allowed(hook(state, cursor_input(2, args={"query": CANARY}, event=event)))
    out = json.loads(hook(state, cursor_input(3, event=event)).stdout)
    assert sorted(out) == ["agent_message", "permission", "user_message"]
    assert out["permission"] == "deny"
    assert out["agent_message"].startswith(MESSAGE_START)
    assert_allowed(hook(state, cursor_input(4, args='{"query": "else"}', event=event)))


def test_forced_agent_overrides_detection(state: Path) -> None:
    # no event name: a call for every decoder; --agent picks the dialect of the answer
    bare = json.loads(claude_input(1))
    del bare["hook_event_name"]
    for i in (1, 2):
        bare["tool_use_id"] = f"toolu_{i}"
        assert_allowed(hook(state, json.dumps(bare).encode(), "--agent", "gemini"))
    bare["tool_use_id"] = "toolu_3"
    out = json.loads(hook(state, json.dumps(bare).encode(), "--agent", "gemini").stdout)
    assert out["decision"] == "deny"


def test_forced_agent_reads_with_its_own_decoder(state: Path) -> None:
    # a Claude Code PreToolUse is not a Gemini pre-tool event: nothing to count
    for i in (1, 2, 3):
        result = hook(state, claude_input(i), "--agent", "gemini", "-m", "1")
        assert_allowed(result)
        assert result.stderr == b""
    assert not state.exists()


@pytest.mark.parametrize(
    "payload",
    [
        claude_input(1, hook_event_name="PostToolUse", tool_response={"stdout": CANARY}),
        claude_input(1, hook_event_name="Stop"),
        gemini_input(1).replace(b"BeforeTool", b"AfterTool"),
        cursor_input(1, event="afterMCPExecution"),
        cursor_input(1, event="beforeShellExecution"),
        json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit"}).encode(),
    ],
    ids=["post-tool-use", "stop", "after-tool", "after-mcp", "before-shell", "prompt"],
)
def test_events_that_are_not_pre_tool_calls_are_allowed_silently(
    state: Path, payload: bytes
) -> None:
    for _ in range(3):
        result = hook(state, payload, "-m", "1", "--fail-closed")
        assert_allowed(result)
        assert result.stderr == b""
    assert not state.exists()


def test_max_repeats_option_and_environment(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1), "-m", "2"))
    assert json.loads(hook(state, claude_input(2), "-m", "2").stdout)
    env = cli_env(DSH_LOOP_BRAKE_MAX_REPEATS="5")
    other = state.parent / "other.db"
    for i in range(1, 5):
        result = run_cli("hook", "--state", str(other), input=claude_input(i), env=env)
        assert_allowed(result)
    result = run_cli("hook", "--state", str(other), input=claude_input(5), env=env)
    assert "limit 5" in json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_duplicate_call_id_is_not_counted_again(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(1)))  # the same call seen twice
    assert_allowed(hook(state, claude_input(2)))
    denied = hook(state, claude_input(3))
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    again = hook(state, claude_input(3))  # same id again: same verdict, count stays 3
    assert again.stdout == denied.stdout


def test_subagent_has_its_own_streak(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    # a subagent's identical call neither trips nor extends the main streak
    assert_allowed(hook(state, claude_input(3, agent_id="agent-a")))
    main = hook(state, claude_input(4))
    assert "3 times" in json.loads(main.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    listing = run_cli("state", "list", "--state", str(state), "--json")
    sessions = {json.loads(line)["sessionId"] for line in listing.stdout.splitlines()}
    assert sessions == {"sess-1", "sess-1/agent-a"}


# -- acceptance 2: concurrency ---------------------------------------------------------


def _spawn(state: Path, payload: bytes, *args: str) -> subprocess.Popen[bytes]:
    return spawn_cli("hook", "--state", str(state), *args)


def _finish(procs, payloads):
    results = []
    for proc, payload in zip(procs, payloads, strict=True):
        out, err = proc.communicate(payload, timeout=120)
        results.append((proc.returncode, out, err))
    return results


def _log_counts(log: Path) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        counts.setdefault(record["sessionId"], []).append(record["count"])
    return counts


def test_forty_concurrent_identical_calls_lose_no_count(state: Path) -> None:
    log = state.parent.parent / "verdicts.jsonl"
    payloads = [claude_input(i) for i in range(40)]
    # start all 40 before feeding any stdin, so they really race for the store
    procs = [_spawn(state, b"", "--log", str(log)) for _ in payloads]
    results = _finish(procs, payloads)
    assert all(code == 0 for code, _, _ in results)
    assert all(err == b"" for _, _, err in results), [e for _, _, e in results if e]
    denied = [out for _, out, _ in results if out]
    assert len(denied) == 38
    # every denial logged once with its count: 3..40, each exactly once; with the
    # final count at 40 this leaves 1 and 2 for the two allowed calls
    assert sorted(_log_counts(log)["sess-1"]) == list(range(3, 41))
    with sqlite3.connect(state) as conn:
        assert conn.execute("SELECT count FROM streaks").fetchall() == [(40,)]


def test_two_sessions_in_parallel_do_not_interfere(state: Path) -> None:
    log = state.parent.parent / "verdicts.jsonl"
    payloads = [claude_input(i, session=f"s{i % 2}") for i in range(30)]
    procs = [_spawn(state, b"", "--log", str(log)) for _ in payloads]
    results = _finish(procs, payloads)
    assert sum(1 for _, out, _ in results if out) == 26
    counts = _log_counts(log)
    assert sorted(counts["s0"]) == list(range(3, 16))
    assert sorted(counts["s1"]) == list(range(3, 16))


# -- acceptance 3: no argument value anywhere -------------------------------------------


def test_no_argument_value_in_store_outputs_listing_or_log(state: Path) -> None:
    log = state.parent.parent / "shadow.jsonl"
    args = {"command": CANARY, CANARY + "-key": [CANARY, {"nested": CANARY}]}
    outputs = b""
    for i in range(4):
        result = hook(state, claude_input(i, args=args))
        outputs += result.stdout + result.stderr
        result = hook(
            state, claude_input(i, session="shadowed", args=args), "--shadow", "--log", str(log)
        )
        assert_allowed(result)
        outputs += result.stdout + result.stderr
    assert b"deny" in outputs
    listing = run_cli("state", "list", "--state", str(state))
    listing_json = run_cli("state", "list", "--state", str(state), "--json")
    secret = CANARY.encode()
    assert secret not in outputs
    assert secret not in store_bytes(state)
    assert secret not in listing.stdout + listing.stderr + listing_json.stdout
    assert secret not in log.read_bytes()
    # the sqlite file bytes after a checkpoint too
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert secret not in store_bytes(state)


# -- shadow and fail-closed ---------------------------------------------------------------


def test_shadow_never_denies_and_logs_the_would_be_denial(state: Path) -> None:
    log = state.parent.parent / "shadow.jsonl"
    for i in range(4):
        assert_allowed(hook(state, claude_input(i), "--shadow", "--log", str(log)))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["count"] for r in records] == [3, 4]
    first = records[0]
    assert first["verdict"] == "deny"
    assert first["toolName"] == "Bash"
    assert first["sessionId"] == "sess-1"
    assert first["callId"] == "toolu_0002"
    assert first["maxRepeats"] == 3
    assert len(first["hashPrefix"]) == 12
    assert first["code"] == "LOOP_BRAKE"
    assert first["message"].startswith(MESSAGE_START)


def test_fail_closed_denies_when_the_brake_cannot_decide(state: Path) -> None:
    result = hook(state, claude_input(1), "--fail-closed", "-m", "0")
    assert result.returncode == 0
    reason = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "could not decide" in reason and "--fail-closed" in reason
    assert result.stderr.decode().count("\n") == 1
    # unparseable input: no dialect to answer in, so exit 2 (every agent blocks on 2)
    result = hook(state, b"{not json", "--fail-closed")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert b"not valid JSON" in result.stderr
    # shadow wins over fail-closed: never deny
    assert result.stdout == b""
    assert_allowed_with_warning(hook(state, b"{not json", "--fail-closed", "--shadow"))


def assert_allowed_with_warning(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0
    assert result.stdout == b""
    text = result.stderr.decode()
    assert text.startswith("loop-brake hook: ")
    assert text.count("\n") == 1, text
    assert "Traceback" not in text
    return text


# -- acceptance 5: failures give one stderr line and the documented exit --------------------


@pytest.mark.parametrize(
    "payload, expected",
    [
        (b"", "hook input is empty"),
        (b'{"session_id": "s", "tool_input": {"a": "' + CANARY.encode(), "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"session_id": "s", "tool_input": {}}', "hook input: tool_name missing"),
        (b'{"session_id": "s", "tool_name": 7, "tool_input": {}}', "tool_name not a string"),
        (b'{"session_id": 42, "tool_name": "Bash"}', "session_id is not a string"),
        (b'{"session_id": "s", "tool_name": "Bash", "agent_id": 1}', "agent_id is not a string"),
        (b'{"conversation_id": 1.5, "tool_name": "Bash"}', "conversation_id is not a string"),
        (
            b'{"session_id": "s", "tool_name": "Bash", "tool_use_id": true}',
            "tool_use_id is not a string or an integer",
        ),
        (b"\xff\xfe", "not valid UTF-8"),
    ],
)
def test_unparseable_input_fails_open_with_one_line(
    state: Path, payload: bytes, expected: str
) -> None:
    text = assert_allowed_with_warning(hook(state, payload))
    assert expected in text
    assert "allowed" in text
    assert CANARY not in text


def test_bad_options_fail_open_not_exit_2(state: Path) -> None:
    for args in (["-m", "zero"], ["-m", "0"], ["--ttl", "soon"], ["--agent", "vim"], ["--bogus"]):
        text = assert_allowed_with_warning(hook(state, claude_input(1), *args))
        assert "allowed" in text


def test_corrupt_state_file_is_moved_aside_and_recreated(state: Path) -> None:
    state.parent.mkdir(parents=True)
    state.write_bytes(b"this is not an sqlite database at all\n" * 200)
    text = assert_allowed_with_warning(hook(state, claude_input(1)))
    assert "unreadable" in text and "moved it to" in text
    aside = [p for p in state.parent.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1
    assert aside[0].read_bytes().startswith(b"this is not an sqlite")
    # the new store works: this was call 1, two more identical calls deny
    assert_allowed(hook(state, claude_input(2)))
    assert json.loads(hook(state, claude_input(3)).stdout)


def test_malformed_sqlite_pages_are_moved_aside(state: Path) -> None:
    state.parent.mkdir(parents=True)
    assert_allowed(hook(state, claude_input(1)))
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(state.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)  # keep the header, wreck every page
    state.write_bytes(bytes(data))
    text = assert_allowed_with_warning(hook(state, claude_input(2)))
    assert "moved it to" in text


def _read_only_state(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        directory = tmp_path / "ro"
        directory.mkdir()
        directory.chmod(0o555)
        return directory / "state.db"
    # root ignores permission bits; /sys is a read-only place no one can create in
    return Path("/sys/loop-brake-test/state.db")


def test_read_only_state_directory_fails_open(tmp_path: Path) -> None:
    state = _read_only_state(tmp_path)
    text = assert_allowed_with_warning(hook(state, claude_input(1)))
    assert "state store" in text and "allowed" in text
    closed = hook(state, claude_input(1), "--fail-closed")
    assert json.loads(closed.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert closed.stderr.decode().count("\n") == 1


def test_store_locked_past_the_timeout_fails_open(state: Path) -> None:
    assert_allowed(hook(state, claude_input(1)))
    holder = sqlite3.connect(state, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        text = assert_allowed_with_warning(hook(state, claude_input(2), "--lock-timeout", "0.2"))
        assert "locked" in text
        closed = hook(state, claude_input(2), "--lock-timeout", "0.2", "--fail-closed")
        assert json.loads(closed.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- pruning ----------------------------------------------------------------------------------


def test_idle_session_past_ttl_starts_over_and_is_pruned(state: Path) -> None:
    for i in (1, 2):
        assert_allowed(hook(state, claude_input(i)))
    with sqlite3.connect(state) as conn:
        conn.execute("UPDATE streaks SET updated = updated - 7200")
        conn.execute("INSERT INTO streaks VALUES ('old', zeroblob(32), 2, NULL, 'Read', 0)")
    # idle for 2h with --ttl 1h: a new streak, not the third identical call
    assert_allowed(hook(state, claude_input(3), "--ttl", "1h"))
    assert_allowed(hook(state, claude_input(4, session="new"), "--ttl", "1h"))
    with sqlite3.connect(state) as conn:
        rows = dict(conn.execute("SELECT session, count FROM streaks").fetchall())
    assert rows == {"sess-1": 1, "new": 1}


def test_session_cap_drops_the_oldest(state: Path) -> None:
    for n in range(5):
        assert_allowed(hook(state, claude_input(n, session=f"s{n}"), "--max-sessions", "3"))
    with sqlite3.connect(state) as conn:
        sessions = sorted(s for (s,) in conn.execute("SELECT session FROM streaks"))
    assert sessions == ["s2", "s3", "s4"]


def test_help_lists_the_options() -> None:
    result = run_cli("hook", "--help")
    assert result.returncode == 0
    for option in ("--agent", "--max-repeats", "--state", "--ttl", "--fail-closed", "--shadow"):
        assert option.encode() in result.stdout


def test_hook_path_imports_nothing_it_does_not_need(state: Path) -> None:
    """The hook runs before every tool call: no rich, no transcript formats, no reader."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loop_brake_cli", "hook", "--state", str(state)],
        input=claude_input(1),
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines()}
    for unwanted in ("rich", "loop_brake_cli.formats", "loop_brake_cli.reader", "argparse"):
        assert unwanted not in imported
    assert "loop_brake_cli.hook.runner" in imported


# -- the store: call ids as the brake compares them, and an older layout ------------------


def _logged(log: Path) -> list[tuple]:
    return [
        (r["sessionId"], r.get("callId"), r["count"], r.get("duplicate", False))
        for r in map(json.loads, log.read_text().splitlines())
    ]


def test_integer_and_string_call_ids_stay_distinct(state: Path) -> None:
    log = state.parent.parent / "log.jsonl"
    for call_id in (7, "7", "7", 7.0, 7):
        payload = json.loads(claude_input(1))
        payload["tool_use_id"] = call_id
        out = hook(state, json.dumps(payload).encode(), "-m", "1", "--log", str(log))
        assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert _logged(log) == [
        ("sess-1", 7, 1, False),
        ("sess-1", "7", 2, False),
        ("sess-1", "7", 2, True),  # the same call seen twice
        ("sess-1", 7, 3, False),  # 7.0 is the integer 7, a new id after "7"
        ("sess-1", 7, 3, True),
    ]
    listing = run_cli("state", "list", "--state", str(state), "--json")
    assert json.loads(listing.stdout)["callId"] == 7


def test_session_edges_follow_the_nullish_rule(state: Path) -> None:
    log = state.parent.parent / "log.jsonl"
    cursor = json.loads(cursor_input(4))
    cursor.update(conversation_id=None, session_id="cs")  # null falls back to session_id
    inputs = [
        claude_input(1, session=""),  # "" is a session of its own
        claude_input(2, session=None),  # null falls back to "default"
        claude_input(3, session="", agent_id="sub"),
        json.dumps(cursor).encode(),
    ]
    for payload in inputs:
        assert_allowed(hook(state, payload, "--shadow", "-m", "1", "--log", str(log)))
    assert [s for s, _, _, _ in _logged(log)] == ["", "default", "/sub", "cs"]


def test_empty_tool_name_is_a_call(state: Path) -> None:
    payload = json.loads(claude_input(1))
    payload["tool_name"] = ""
    out = hook(state, json.dumps(payload).encode(), "-m", "1")
    reason = json.loads(out.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith('loop brake: tool "" called 1 times')


def test_a_store_of_the_older_layout_starts_afresh(state: Path) -> None:
    state.parent.mkdir(parents=True)
    with sqlite3.connect(state) as conn:
        conn.execute(
            "CREATE TABLE streaks (session TEXT PRIMARY KEY, digest BLOB NOT NULL,"
            " count INTEGER NOT NULL, call_id TEXT, tool TEXT NOT NULL, updated REAL NOT NULL)"
        )
        conn.execute("INSERT INTO streaks VALUES ('sess-1', zeroblob(32), 9, 'x', 'Bash', 1e12)")
        conn.execute("PRAGMA user_version = 1")
    listing = run_cli("state", "list", "--state", str(state), "--json")
    assert listing.returncode == 0 and listing.stdout == b""
    text = assert_allowed_with_warning(hook(state, claude_input(1)))
    assert "older version" in text and "afresh" in text
    assert_allowed(hook(state, claude_input(2)))
    assert json.loads(hook(state, claude_input(3)).stdout)
    with sqlite3.connect(state) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        assert conn.execute("SELECT count FROM streaks").fetchall() == [(3,)]
