"""The counting rules of dsh-loop-brake, through the library (no CLI).

Per session one slot: the same hash extends the streak, another resets it to 1;
the call whose count reaches maxRepeats is denied and counts too; a repeated
call id is the same call seen twice; sessions never share a streak.
"""

from __future__ import annotations

import pytest

from loop_brake_cli import InvalidMaxRepeatsError, LoopBrake, normalize_max_repeats, session_key
from loop_brake_cli.core.limits import parse_env_max_repeats, resolve_max_repeats

A = ("search", {"q": "weather"})
B = ("search", {"q": "weather "})


def counts(brake: LoopBrake, calls, **kwargs) -> list[tuple[int, bool]]:
    out = []
    for tool, args in calls:
        verdict = brake.check(tool, args, **kwargs)
        out.append((verdict.count, verdict.denied))
    return out


def test_a_a_b_a_leaves_a_at_one() -> None:
    assert counts(LoopBrake(3), [A, A, B, A]) == [(1, False), (2, False), (1, False), (1, False)]


def test_third_identical_call_denied_and_denied_calls_count() -> None:
    assert counts(LoopBrake(3), [A] * 5) == [
        (1, False),
        (2, False),
        (3, True),
        (4, True),
        (5, True),
    ]


def test_max_repeats_one_denies_every_call() -> None:
    assert counts(LoopBrake(1), [A, B, A, A]) == [(1, True), (1, True), (1, True), (2, True)]


def test_key_order_and_number_spelling_are_one_call() -> None:
    brake = LoopBrake(3)
    brake.check("t", {"a": 1, "b": 2.0})
    verdict = brake.check("t", {"b": 2, "a": 1.0})
    assert verdict.count == 2
    assert brake.check("u", {"b": 2, "a": 1.0}).count == 1  # another tool is another call


def test_sessions_are_independent() -> None:
    brake = LoopBrake(3)
    for _ in range(2):
        brake.check(*A, session_id="s1")
        brake.check(*A, session_id="s2")
    assert brake.check(*A, session_id="s1").denied
    assert brake.check(*A, session_id="s3").count == 1
    assert brake.check(*A, session_id="s2").denied
    assert len(brake) == 3


def test_session_key_fallback() -> None:
    assert session_key("s", "a") == "s"
    assert session_key(None, "a") == "a"
    assert session_key(None, None) == "default"
    assert session_key("", "a") == ""  # ?? not ||: an empty session id is a session
    brake = LoopBrake(3)
    brake.check(*A, agent_id="agent-1")
    assert brake.check(*A, session_id="agent-1").count == 2  # same key, same streak
    assert brake.check(*A).count == 1  # "default"
    assert brake.check(*A, session_id="", agent_id="agent-1").count == 1


def test_repeated_call_id_is_not_counted_again() -> None:
    brake = LoopBrake(2)
    first = brake.check(*A, call_id="c1")
    again = brake.check(*A, call_id="c1")
    assert (first.count, first.denied, first.duplicate) == (1, False, False)
    assert (again.count, again.denied, again.duplicate) == (1, False, True)
    assert brake.check(*A, call_id="c2").denied  # a new id counts
    # A duplicate id wins over a different hash: it is the call already counted.
    dup = brake.check(*B, call_id="c2")
    assert dup.duplicate and dup.denied and dup.count == 2
    assert dup.hash_prefix == brake.check(*A, call_id="c2").hash_prefix
    # No id, or an id equal to an older call's, counts normally.
    assert brake.check(*A).count == 3
    assert brake.check(*A, call_id="c1").count == 4
    assert brake.check(*A, call_id=7).count == 5
    assert brake.check(*A, call_id="7").count == 6  # "7" is not 7


def test_reset_forgets_streaks() -> None:
    brake = LoopBrake(2)
    brake.check(*A, session_id="s1")
    brake.check(*A, session_id="s2")
    brake.reset("s1")
    assert brake.check(*A, session_id="s1").count == 1
    assert brake.check(*A, session_id="s2").count == 2
    brake.reset()
    assert len(brake) == 0


def test_memory_is_one_slot_per_session() -> None:
    brake = LoopBrake(3)
    for n in range(10_000):
        brake.check("t", {"n": n}, session_id=f"s{n % 5}")
    assert len(brake) == 5


@pytest.mark.parametrize("value", [5, 5.0, 1, 10**6])
def test_normalize_accepts_integers(value: object) -> None:
    assert normalize_max_repeats(value) == int(value)  # type: ignore[call-overload]


@pytest.mark.parametrize("value", [True, False, "5", 2.5, 0, -1, 0.0, None, float("nan"), [3]])
def test_normalize_rejects(value: object) -> None:
    with pytest.raises(InvalidMaxRepeatsError) as info:
        normalize_max_repeats(value, "config")
    assert "config" in str(info.value)
    with pytest.raises(InvalidMaxRepeatsError):
        LoopBrake(value) if value is not None else normalize_max_repeats(value)


def test_infinity_is_rejected() -> None:
    with pytest.raises((InvalidMaxRepeatsError, OverflowError)):
        normalize_max_repeats(float("inf"))


@pytest.mark.parametrize(("raw", "expected"), [(" 5 ", 5), ("5", 5), ("", None), ("  ", None)])
def test_env_parsing(raw: str, expected: int | None) -> None:
    assert parse_env_max_repeats(raw) == expected


@pytest.mark.parametrize("raw", ["abc", "0", "2.5", "-1", "5x", "1e3", "0x5", "٣"])
def test_env_parsing_rejects(raw: str) -> None:
    with pytest.raises(InvalidMaxRepeatsError) as info:
        parse_env_max_repeats(raw)
    assert "DSH_LOOP_BRAKE_MAX_REPEATS" in str(info.value)


def test_resolution_order() -> None:
    env = {"DSH_LOOP_BRAKE_MAX_REPEATS": "7"}
    assert resolve_max_repeats(2, env) == (2, "--max-repeats")
    assert resolve_max_repeats(None, env) == (7, "$DSH_LOOP_BRAKE_MAX_REPEATS")
    assert resolve_max_repeats(None, {"DSH_LOOP_BRAKE_MAX_REPEATS": ""}) == (3, "default")
    assert resolve_max_repeats(None, {}) == (3, "default")
    with pytest.raises(InvalidMaxRepeatsError):
        resolve_max_repeats(None, {"DSH_LOOP_BRAKE_MAX_REPEATS": "abc"})
    with pytest.raises(InvalidMaxRepeatsError):
        resolve_max_repeats(0, env)  # an explicit bad value is not rescued by the environment


def test_brake_reads_env_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_LOOP_BRAKE_MAX_REPEATS", " 4 ")
    assert LoopBrake().max_repeats == 4
    monkeypatch.setenv("DSH_LOOP_BRAKE_MAX_REPEATS", "4.5")
    with pytest.raises(InvalidMaxRepeatsError):
        LoopBrake()
    monkeypatch.delenv("DSH_LOOP_BRAKE_MAX_REPEATS")
    assert LoopBrake().max_repeats == 3


@pytest.mark.parametrize("bound", [None, 2])
def test_a_reused_call_id_counts_again_once_its_call_ended(bound, tmp_path) -> None:
    """Issue 36 item 3, in memory (unbounded, LRU-bounded, and under a policy): a call id
    is a duplicate only while its call is open; ``end_call`` (the result or answer was
    seen) makes the next call with that id a new call, and it is counted."""
    policy = tmp_path / "p.toml"
    policy.write_text("[stop]\nafter_denials = 9\n", encoding="utf-8")
    for brake in (
        LoopBrake(3, max_sessions=bound),
        LoopBrake(3, max_sessions=bound, policy=policy),
    ):
        seen = []
        for _ in range(4):
            first = brake.check(*A, session_id="s", call_id="call_0")
            twice = brake.check(*A, session_id="s", call_id="call_0")  # open: a duplicate
            seen.append((first.count, first.denied, twice.duplicate, twice.count))
            assert brake.end_call("s", "call_0") is True
        assert seen == [
            (1, False, True, 1),
            (2, False, True, 2),
            (3, True, True, 3),
            (4, True, True, 4),
        ]
        assert brake.end_call("s", "call_0") is False  # nothing open under that id
        assert brake.end_call("nobody", "call_0") is False
        assert brake.end_call("s", None) is False


def test_an_end_of_an_older_call_changes_nothing() -> None:
    """Only the session's latest call ends: an older id (or ``"1"`` for ``1``) leaves the
    open call a duplicate; without an end the Node plugin's rule holds."""
    brake = LoopBrake(3)
    brake.check(*A, session_id="s", call_id="a")
    brake.check(*B, session_id="s", call_id=1)
    assert brake.end_call("s", "a") is False
    assert brake.end_call("s", "1") is False
    assert brake.check(*B, session_id="s", call_id=1).duplicate


class _FlakyTable:
    """A session table that cannot be asked while ``down`` (``StoreUnavailable``), else
    counts in memory: the one failure rule, without a server."""

    label = "flaky://test"

    def __init__(self) -> None:
        from loop_brake_cli.core.table import MemoryTable

        self.down = True
        self.memory = MemoryTable()

    def _ask(self, name: str, *args):
        from loop_brake_cli.core.table import StoreUnavailable

        if self.down:
            raise StoreUnavailable("flaky store: not asked")
        return getattr(self.memory, name)(*args)

    def count_call(self, *args):
        return self._ask("count_call", *args)

    def observe_result(self, *args):
        return self._ask("observe_result", *args)

    def end_call(self, *args):
        return self._ask("end_call", *args)

    def reset(self, *args):
        return self._ask("reset", *args)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("fail_closed", [False, True])
def test_a_store_that_fails_decides_uncounted_and_says_so_once(fail_closed: bool) -> None:
    """``LoopBrake.uncounted``, the one rule: rule "store", count 0, allowed (or denied
    fail-closed), one line when it starts failing and one when it answers again;
    ``failure`` says why meanwhile, and nothing was counted."""
    said: list[str] = []
    table = _FlakyTable()
    brake = LoopBrake(2, store=table, fail_closed=fail_closed, warn=said.append)
    verdicts = [brake.check(*A, session_id="s", call_id=n) for n in range(3)]
    assert [(v.rule, v.count, v.denied) for v in verdicts] == [("store", 0, fail_closed)] * 3
    assert brake.store_failures == 3 and brake.failure == "flaky store: not asked"
    assert brake.end_call("s", 2) is False and brake.store_failures == 4
    assert len(said) == 1 and ("denied (fail-closed)" if fail_closed else "allowed") in said[0]
    table.down = False
    assert brake.check(*A, session_id="s").count == 1  # nothing was counted while down
    assert brake.failure is None and len(said) == 2 and "answers again" in said[1]
    how = "denied (fail-closed)" if fail_closed else "allowed (fail-open)"
    assert f"4 calls were {how} and not counted meanwhile" in said[1]
