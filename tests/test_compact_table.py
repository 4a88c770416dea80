"""filter's compact session table (``readers/compact_table.py``, the C reader's
``SessionSlots``) answers every call as the dict it replaces (``core/table.py``'s
``MemoryTable``, and ``BoundedMemoryTable`` with ``max_sessions``): the same Slot
(digest, count, call id and its type, tool), the same duplicate flag, the same
evictions, the same sessions in the same least-recently-used order.

The edges: lone surrogates in session keys, call ids and tools (kept as
surrogatepass UTF-8), ids equal across types (``1``, ``True``, ``1.0``) or not
(``"1"``), ints past 64 bits, empty strings, ids that grow (the arena moves the
session) and shrink, and enough sessions to rebuild the index and compact the
arena many times over."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.table import memory_table
from loop_brake_cli.readers import compact_table
from loop_brake_cli.readers.policy_table import CompactPolicyTable

if not compact_table.AVAILABLE:  # in CI an unmeant skip fails the run: the reader is built
    pytest.skip("the C reader is not built", allow_module_level=True)
CompactTable = compact_table.CompactTable

DIGESTS = [call_digest("t", {"q": i}) for i in range(4)]
DIGESTS.append(DIGESTS[0][:31] + bytes([DIGESTS[0][31] ^ 1]))  # the hash is compared whole
SESSIONS = ["a", "b", "", "\ud800", "\udfff\ud83d", "é", "日本", "a" * 300, "b\x00c"]
TOOLS = ["search", "read", "\ud800x", ""]
CALL_IDS = [None, "c1", "c2", "", "\udc80", "1", 1, 2, True, 1.0, -5, 2**53, 2**70, "x" * 200]


def _fresh(text: str) -> str:
    """An equal string that is another object (the reader makes one per line)."""
    return "".join(list(text)) if len(text) > 1 else (text + "\x00")[:-1]


def _same(left, right) -> bool:
    """Equal answers, the call id's type included (``1 == True`` is not enough)."""
    (slot_a, dup_a), (slot_b, dup_b) = left, right
    return (
        dup_a is dup_b
        and type(slot_a) is type(slot_b)
        and tuple(slot_a) == tuple(slot_b)
        and type(slot_a.call_id) is type(slot_b.call_id)
        and type(slot_a.digest) is bytes
    )


def _check(ops, max_sessions):
    reference = memory_table(max_sessions)
    compact = CompactTable(max_sessions)
    for number, op in enumerate(ops):
        if op[0] == "count":
            _, session, tool, digest, call_id = op
            # the fast path passes one tool object per name (its cache), the exact path
            # a new string per record: both
            given = tool if number % 3 else _fresh(tool)
            got = compact.count_call(_fresh(session), given, digest, call_id)
            want = reference.count_call(session, tool, digest, call_id)
            assert _same(got, want), (op, got, want)
        elif op[0] == "end":
            _, session, call_id = op
            assert compact.end_call(_fresh(session), call_id) == reference.end_call(
                session, call_id
            ), op
        else:
            assert compact.reset(op[1]) == reference.reset(op[1]), op
        assert len(compact) == len(reference)
        assert compact.evictions == reference.evictions
    held = list(reference._slots)
    if max_sessions is None:
        assert sorted(compact.sessions()) == sorted(held)
    else:
        assert compact.sessions() == held  # least recently used first
    for session in SESSIONS:
        mine, theirs = compact.get(session), reference._slots.get(session)
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert tuple(mine) == tuple(theirs)
            assert type(mine.call_id) is type(theirs.call_id)


OPS = st.one_of(
    st.tuples(
        st.just("count"),
        st.sampled_from(SESSIONS),
        st.sampled_from(TOOLS),
        st.sampled_from(DIGESTS),
        st.sampled_from(CALL_IDS),
    ),
    st.tuples(st.just("end"), st.sampled_from(SESSIONS), st.sampled_from(CALL_IDS)),
    st.tuples(st.just("reset"), st.sampled_from([None, *SESSIONS])),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(OPS, max_size=60), st.sampled_from([None, 1, 2, 3, 5]))
def test_drawn_sequences_answer_as_the_dict(ops, max_sessions):
    _check(ops, max_sessions)


@pytest.mark.parametrize("max_sessions", [None, 1, 7, 1000])
def test_many_sessions_rebuild_and_compact_alike(max_sessions):
    """Thousands of sessions (index rebuilds, arena growth and compaction, freed
    entries and tools reused), ids of changing length, resets and ends."""
    rng = random.Random(max_sessions or 0)
    sessions = [f"s{i}-{'é' * (i % 5)}" for i in range(3000)] + SESSIONS
    tools = [f"tool{i}" for i in range(40)] + TOOLS
    ops = []
    for i in range(40_000):
        roll = rng.random()
        session = rng.choice(sessions[: 50 + i // 8])
        if roll < 0.90:
            call_id = rng.choice([*CALL_IDS, f"call-{i}", "y" * rng.randrange(60), i])
            ops.append(("count", session, rng.choice(tools), rng.choice(DIGESTS), call_id))
        elif roll < 0.97:
            ops.append(("end", session, rng.choice(CALL_IDS)))
        elif roll < 0.9995:
            ops.append(("reset", session))
        else:
            ops.append(("reset", None))
    _check(ops, max_sessions)


def test_a_policy_a_bad_digest_and_a_reentered_call_are_refused():
    table = CompactTable()
    with pytest.raises(ValueError, match="policy"):
        table.count_call("s", "t", DIGESTS[0], None, 3, object())
    for digest in (DIGESTS[0][:31], DIGESTS[0].hex(), None):
        with pytest.raises(TypeError):
            table.count_call("s", "t", digest)
    assert len(table) == 0

    class Reenters:
        def __eq__(self, other):
            table.count_call("other", "t", DIGESTS[1])
            return True

        __hash__ = object.__hash__

    table.count_call("s", "t", DIGESTS[0], Reenters())
    with pytest.raises(RuntimeError, match="in use"):
        table.count_call("s", "t", DIGESTS[0], Reenters())
    assert table.sessions() == ["s"]


def test_keywords_as_the_interface_names_them():
    table = CompactTable()
    slot, duplicate = table.count_call(session="s", tool="t", digest=DIGESTS[0], call_id="c")
    assert (slot.count, duplicate) == (1, False)
    assert table.count_call("s", "t", DIGESTS[0], call_id="c", max_repeats=3, now=1.0)[1]
    with pytest.raises(TypeError):
        table.count_call("s", "t", DIGESTS[0], sessions="x")


def test_filter_counts_in_it_only_without_a_policy_a_store_or_the_plain_paths(
    monkeypatch, tmp_path
):
    brake = LoopBrake(3)
    assert compact_table.use_compact_table(brake)
    assert isinstance(brake.table, CompactTable)
    verdict = brake.observe("s", "t", DIGESTS[0], "c")
    assert (verdict.count, len(brake), brake.evictions) == (1, 1, 0)
    bounded = LoopBrake(3, max_sessions=2)
    assert compact_table.use_compact_table(bounded)
    for session in "abc":
        bounded.observe(session, "t", DIGESTS[0])
    assert (len(bounded), bounded.evictions) == (2, 1)

    policy = tmp_path / "policy.toml"
    policy.write_text("warn_at = 2\n")
    covered = LoopBrake(3, policy=str(policy))  # the C step's: policy_table.py
    assert compact_table.use_compact_table(covered)
    assert isinstance(covered.table, CompactPolicyTable)
    assert not isinstance(covered.table, CompactTable)
    policy.write_text("progress = true\n")  # results: the dict and policy_step
    assert not compact_table.use_compact_table(LoopBrake(3, policy=str(policy)))
    assert not compact_table.use_compact_table(LoopBrake(3, store=str(tmp_path / "s.db")))
    for name in ("LOOP_BRAKE_EXACT", "LOOP_BRAKE_PURE_PYTHON"):
        with monkeypatch.context() as env:
            env.setenv(name, "1")
            assert not compact_table.use_compact_table(LoopBrake(3))
            policy.write_text("warn_at = 2\n")
            assert not compact_table.use_compact_table(LoopBrake(3, policy=str(policy)))
