"""The SQLite store's documented edges, in process on a real SQLite file (docs/hook.md:
``--ttl`` default 24h, a row is live while it is at most ttl seconds old; at most
``--max-sessions`` rows, the oldest dropped first; under a policy its part of the
state is kept beside the streak row and dropped with it)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import parse_policy
from loop_brake_cli.stores.sqlite_store import DEFAULT_TTL, StateStore

T0 = 1_700_000_000.0
DIGEST = call_digest("Read", {"file": "a"})


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "state.db")


def _count(store: StateStore, at: float, session: str = "s", policy=None, tool: str = "Read"):
    digest = call_digest(tool, {})
    state, duplicate = store.count_call(session, tool, digest, None, 10, now=at, policy=policy)
    return LoopBrake(10, policy=policy).slot_verdict(state, session, None, duplicate)


def _rows(path: str, table: str = "streaks") -> list[str]:
    with sqlite3.connect(path) as conn:
        return sorted(s for (s,) in conn.execute(f"SELECT session FROM {table}"))


def test_a_row_exactly_ttl_seconds_old_is_live_and_kept_by_a_prune(path: str) -> None:
    store = StateStore(path, ttl=60)
    assert _count(store, T0).count == 1
    assert _count(store, T0 + 60).count == 2  # exactly ttl old: live
    assert _count(store, T0 + 120.5).count == 1  # past it: a new streak
    store.close()
    store = StateStore(path, ttl=60)
    _count(store, T0, "old")
    _count(store, T0 + 60, "new")  # a new session prunes, at the instant "old" turns ttl old
    assert _rows(path) == ["new", "old", "s"]
    _count(store, T0 + 61, "newer")
    assert "old" not in _rows(path)
    store.close()


def test_the_default_ttl_is_a_day(path: str) -> None:
    assert DEFAULT_TTL == 24 * 3600
    store = StateStore(path)
    assert _count(store, T0).count == 1
    assert _count(store, T0 + 13 * 3600).count == 2  # 13 hours later: the same streak
    assert _count(store, T0 + 13 * 3600 + 24 * 3600 + 1).count == 1
    store.close()


def test_max_sessions_keeps_that_many_newest(path: str) -> None:
    store = StateStore(path, max_sessions=2)
    for n in range(4):
        _count(store, T0 + n, f"s{n}")
    assert _rows(path) == ["s2", "s3"]
    assert _count(store, T0 + 10, "s2").count == 2  # kept, and its streak goes on
    store.close()


def test_policy_rows_follow_their_sessions_and_keep_the_cycle_window(path: str) -> None:
    text = "[cycles]\nmax_period = 2\nmax_repeats = 2\n[stop]\nafter_denials = 2\n"
    policy = parse_policy(text, "policy.toml")[0]
    store = StateStore(path, max_sessions=1)
    verdicts = [_count(store, T0 + n, "a", policy, tool) for n, tool in enumerate("ababa")]
    assert [v.denied for v in verdicts] == [False, False, False, True, True]
    assert verdicts[3].rule == "cycle" and verdicts[4].stop and verdicts[4].denials == 2
    _count(store, T0 + 10, "b", policy)
    assert _rows(path) == ["b"] and _rows(path, "policy_state") == ["b"]
    store.close()


def test_the_stored_cycle_window_is_max_period_calls_long(path: str) -> None:
    """docs/policies.md: the state grows with max_period only (its digests, their tool
    names and max_period - 1 counters), however long the session."""
    policy = parse_policy("[cycles]\nmax_period = 3\n", "policy.toml")[0]
    store = StateStore(path)
    for n in range(20):
        _count(store, T0 + n, "s", policy, f"tool{n % 5}")
    store.close()
    with sqlite3.connect(path) as conn:
        (state,) = conn.execute("SELECT state FROM policy_state").fetchone()
    stored = json.loads(state)
    assert len(stored["r"]) == len(stored["t"]) == 3 and len(stored["n"]) == 2
    assert stored["t"] == ["tool2", "tool3", "tool4"]
