"""``filter --max-sessions N``: at most N session slots, least recently used evicted
first; an evicted session starts a new streak; the summary counts evictions."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, run_cli


def _events(*sessions: str) -> bytes:
    return b"".join(
        json.dumps({"tool": "search", "args": {"q": "x"}, "sessionId": s}).encode() + b"\n"
        for s in sessions
    )


def _counts(output: bytes) -> list[tuple[str, int]]:
    return [(v["sessionId"], v["count"]) for v in map(json.loads, output.splitlines())]


PATTERN = ("a", "b", "a", "c", "a", "b", "a")


@pytest.mark.parametrize("exact", ["", "1"])
def test_lru_eviction_restarts_the_streak(exact):
    result = run_cli(
        "filter",
        "--max-sessions",
        "2",
        "--summary",
        input=_events(*PATTERN),
        env=cli_env(LOOP_BRAKE_EXACT=exact, COLUMNS="200"),
    )
    assert result.returncode == 0, result.stderr
    # c evicts b (least recently used: a was just seen); b comes back at 1 and
    # evicts c; a, used most recently each time, keeps its streak.
    assert _counts(result.stdout) == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("c", 1),
        ("a", 3),
        ("b", 1),
        ("a", 4),
    ]
    assert b"2 session(s) evicted" in result.stderr


def test_default_is_unbounded():
    result = run_cli("filter", input=_events(*PATTERN))
    assert _counts(result.stdout)[5] == ("b", 2)


def test_one_slot_is_allowed_and_zero_is_a_usage_error():
    one = run_cli("filter", "--max-sessions", "1", input=_events("a", "b", "a"))
    assert _counts(one.stdout) == [("a", 1), ("b", 1), ("a", 1)]
    zero = run_cli("filter", "--max-sessions", "0", input=b"")
    assert zero.returncode == 2
    assert b"--max-sessions" in zero.stderr


def test_streaks_survive_when_the_sessions_fit():
    many = [f"s{i % 50}" for i in range(500)]
    bounded = run_cli("filter", "--max-sessions", "50", input=_events(*many))
    unbounded = run_cli("filter", input=_events(*many))
    assert bounded.stdout == unbounded.stdout
