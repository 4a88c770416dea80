"""`loop-brake hook`'s SQLite store for real: concurrency, failures, pruning, call ids.

Acceptance item 2 of issue 5 (40 concurrent calls use the counts 1..40 exactly
once), a corrupt, read-only or locked store (the call fails open with one stderr
line), TTL and session-cap pruning, call ids stored so that 7 and "7" differ,
and a store of an older layout started afresh. Files that are not a store
(links, other applications' files): tests/test_hook_store_files.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli, spawn_cli
from hook_helpers import (
    assert_allowed,
    assert_allowed_with_warning,
    claude_input,
    hook,
    logged,
)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


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


def test_a_file_that_is_not_sqlite_is_refused_not_moved_aside(state: Path) -> None:
    # only a store that carries loop-brake's mark is ever moved aside (issue 10)
    state.parent.mkdir(parents=True)
    state.write_bytes(b"this is not an sqlite database at all\n" * 200)
    text = assert_allowed_with_warning(hook(state, claude_input(1)))
    assert "is not an SQLite file" in text and "left untouched" in text
    assert [p.name for p in state.parent.iterdir()] == ["state.db"]
    assert state.read_bytes().startswith(b"this is not an sqlite")


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


def test_integer_and_string_call_ids_stay_distinct(state: Path) -> None:
    log = state.parent.parent / "log.jsonl"
    for call_id in (7, "7", "7", 7.0, 7):
        payload = json.loads(claude_input(1))
        payload["tool_use_id"] = call_id
        out = hook(state, json.dumps(payload).encode(), "-m", "1", "--log", str(log))
        assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert logged(log) == [
        ("sess-1", 7, 1, False),
        ("sess-1", "7", 2, False),
        ("sess-1", "7", 2, True),  # the same call seen twice
        ("sess-1", 7, 3, False),  # 7.0 is the integer 7, a new id after "7"
        ("sess-1", 7, 3, True),
    ]
    listing = run_cli("state", "list", "--state", str(state), "--json")
    assert json.loads(listing.stdout)["callId"] == 7


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
