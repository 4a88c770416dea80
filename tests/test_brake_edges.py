"""``LoopBrake``'s documented edges, in process (docs/library.md): ``max_sessions`` of at
least 1 and least-recently-used eviction, where ``max_repeats`` came from, the session
key (``sessionId ?? agentId ?? "default"``, a subagent as ``<session>/<agent>``), no
arguments hashed as ``{}`` and a repeated call id a duplicate."""

from __future__ import annotations

import pytest

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.brake import session_key, subagent_session_key
from loop_brake_cli.core.canonical import call_hash


def test_max_sessions_must_be_at_least_one() -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_sessions must be at least 1"):
            LoopBrake(3, max_sessions=bad, policy=None)
    assert len(LoopBrake(3, max_sessions=1, policy=None)) == 0


def test_the_least_recently_used_session_is_evicted() -> None:
    brake = LoopBrake(3, max_sessions=2, policy=None)
    brake.check("t", {}, session_id="a")
    brake.check("t", {}, session_id="b")
    brake.check("t", {}, session_id="a")  # a is now the most recently used
    brake.check("t", {}, session_id="c")  # evicts b
    assert len(brake) == 2 and brake.evictions == 1
    assert brake.check("t", {}, session_id="a").count == 3
    assert brake.check("t", {}, session_id="b").count == 1  # started afresh
    assert brake.evictions == 2


def test_where_max_repeats_came_from() -> None:
    explicit = LoopBrake(5, source="--config", policy=None)
    assert (explicit.max_repeats, explicit.max_repeats_source) == (5, "--config")
    resolved = LoopBrake(None, source="--config", policy=None)
    assert resolved.max_repeats_source != "--config"  # nothing was given: not the option's
    assert resolved.max_repeats_source == LoopBrake(policy=None).max_repeats_source


def test_session_keys() -> None:
    assert session_key("s", "a") == "s"
    assert session_key("", "a") == ""
    assert session_key(None, "a") == "a"
    assert session_key(None, None) == "default"
    assert subagent_session_key("s", "a") == "s/a"
    assert subagent_session_key("s", None) == "s"
    brake = LoopBrake(3, policy=None)
    assert brake.check("t", session_id="", agent_id="a").session_id == ""


def test_no_arguments_hash_as_an_empty_object_and_ids_deduplicate() -> None:
    brake = LoopBrake(2, policy=None)
    first = brake.check("t", None, session_id="s", call_id="c1")
    assert first.hash_prefix == call_hash("t", {})[:12]
    again = brake.check("t", {}, session_id="s", call_id="c1")
    assert again.duplicate and again.count == 1 and not again.denied
    assert brake.check("t", {}, session_id="s", call_id="c2").denied
    assert not brake.check("t", {}, session_id="s").duplicate  # no id: never a duplicate
