"""What every framework integration shares (``integrations/_session.py``), where it is
not a framework's own behaviour: counting from many threads at once."""

from __future__ import annotations

import sys
import threading

from loop_brake_cli.integrations._session import SessionBrake, make_brake, to_json


def test_judge_from_many_threads_loses_no_count() -> None:
    # Parallel tool calls of one turn run in threads (LangGraph's sync ToolNode,
    # smolagents): without the lock a read-count-write interleaves and counts are lost
    # (198 of 4,000 in one run here), so a loop is never denied. A tiny switch interval makes
    # the interleaving all but certain without one.
    seam = SessionBrake(
        make_brake(None, 10**9), session_key=None, default_key=lambda ctx: "s", where="test"
    )

    def work(thread: int) -> None:
        for i in range(1000):
            seam.judge("s", "search", {"q": "x"}, f"{thread}-{i}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert seam.judge("s", "search", {"q": "x"}, "last").count == 4001


# -- the contract of issue 23, once for every integration ---------------------------

import gc  # noqa: E402
import importlib  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from loop_brake_cli.core.brake import DISCOVER, LoopBrake  # noqa: E402
from loop_brake_cli.integrations._session import DEFAULT_MAX_SESSIONS  # noqa: E402


def seam_of(brake: LoopBrake | None = None, session_key: Any = None) -> SessionBrake:
    return SessionBrake(
        make_brake(None, 3) if brake is None else brake,
        session_key=session_key,
        default_key=lambda ctx: f"thread-{ctx}",
        where="test",
    )


def test_1000_threads_leave_a_bounded_number_of_sessions() -> None:
    """The default table is an LRU of DEFAULT_MAX_SESSIONS: 3,000 threads (each one call)
    leave 1,024 sessions; a thread that comes back after eviction starts a new streak."""
    seam = seam_of()
    for thread in range(3000):
        seam.judge(seam.session(thread), "search", {"q": "w"})
    assert len(seam.brake) == DEFAULT_MAX_SESSIONS and seam.brake.evictions == 3000 - 1024
    for thread in range(1000):
        seam.judge(seam.session(thread), "search", {"q": "w"})
    assert len(seam.brake) == DEFAULT_MAX_SESSIONS


def test_a_scoped_session_is_forgotten_with_its_object() -> None:
    class Run:  # stands for a framework's run, connection or request
        pass

    seam = seam_of()
    runs = [Run() for _ in range(1000)]
    keys = {seam.scoped_key(run, "run") for run in runs}
    assert len(keys) == 1000 and seam.scoped_key(runs[0], "run") in keys
    for run in runs:
        seam.judge(seam.scoped_key(run, "run"), "search", {"q": "w"})
    assert len(seam.brake) == 1000
    del runs, run
    gc.collect()
    assert len(seam.brake) == 0 and not seam._scoped


@pytest.mark.parametrize("bad", [42, b"s", "", ["s"]])
def test_a_session_key_must_be_a_non_empty_str(bad: Any) -> None:
    seam = seam_of(session_key=lambda ctx: bad)
    with pytest.raises(TypeError, match="integrations.test: session_key returned"):
        seam.session("ctx")


def test_a_session_key_of_none_falls_back_to_the_default() -> None:
    seam = seam_of(session_key=lambda ctx: None if ctx == "anon" else "mine")
    assert seam.session("anon") == "thread-anon" and seam.session("x") == "mine"


def test_results_feed_only_the_progress_mode_and_only_json() -> None:
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("progress = true\n", "inline.toml")
    seam = seam_of(make_brake(None, 3, policy=policy))
    for step in range(5):  # a changing result: never denied
        verdict = seam.judge("s", "poll", {"job": 7}, f"c{step}")
        assert not verdict.denied
        assert seam.feed(verdict, {"done": step})
    verdict = seam.judge("s", "poll", {"job": 7}, "c5")
    assert not seam.feed(verdict, object())  # no JSON form: no result reported
    plain = seam_of()
    assert not plain.feed(plain.judge("s", "poll", {}), {"done": 1})  # no progress mode


def test_make_brake_passes_the_user_s_brake_through() -> None:
    mine = LoopBrake(5)
    assert make_brake(mine) is mine
    with pytest.raises(ValueError, match="not both"):
        make_brake(mine, 3)
    with pytest.raises(ValueError, match="not both"):
        make_brake(mine, policy=DISCOVER)
    assert make_brake(None, max_sessions=None).max_sessions is None  # the user's choice


BUILDERS = {
    "mcp": ("mcp", lambda m, **kw: m.LoopBrakeMiddleware(**kw)),
    "langchain": ("langchain", lambda m, **kw: m.LoopBrakeMiddleware(**kw)),
    "openai_agents": ("agents", lambda m, **kw: m.LoopBrakeGuardrail(**kw)),
    "pydantic_ai": ("pydantic_ai", lambda m, **kw: m.LoopBrakeCapability(**kw)),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_no_integration_reads_a_policy_it_was_not_given(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .loop-brake.toml in the working directory and $LOOP_BRAKE_POLICY change nothing
    (the old main's integrations discovered both); policy=DISCOVER is the opt-in."""
    package, build = BUILDERS[name]
    pytest.importorskip(package)
    module = importlib.import_module(f"loop_brake_cli.integrations.{name}")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".loop-brake.toml").write_text('[[tools]]\nmatch = "*"\nmax_repeats = 9\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOP_BRAKE_POLICY", raising=False)
    made = build(module, max_repeats=3)
    assert made.brake.policy is None and made.brake.max_sessions == DEFAULT_MAX_SESSIONS
    assert build(module, policy=DISCOVER).brake.policy is not None
    monkeypatch.setenv("LOOP_BRAKE_POLICY", str(tmp_path / ".loop-brake.toml"))
    assert build(module).brake.policy is None


def test_a_str_subclass_result_feeds_the_progress_mode(tmp_path: Path) -> None:
    # smolagents hands tool results over as AgentText, a str subclass, which the
    # canonical form refuses: fed as is, no result ever paired, and a poll whose
    # output kept changing was denied at the third call.
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    seam = SessionBrake(
        make_brake(None, 3, policy=str(policy)),
        session_key=None,
        default_key=lambda ctx: "s",
        where="test",
    )

    class Text(str):
        pass

    assert to_json(Text("tick")).__class__ is str
    for tick in range(5):
        verdict = seam.judge("s", "poll", {"job": 1})
        assert not verdict.denied
        assert seam.feed(verdict, Text(f"tick {tick}"))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_shared_options_are_checked_once_for_every_integration(name: str) -> None:
    """Issue 40.7: every constructor takes ``brake`` and ``BrakeOptions`` through
    ``SessionBrake.of``; a misspelt option is a TypeError naming it, as Python's own."""
    package, build = BUILDERS[name]
    pytest.importorskip(package)
    module = importlib.import_module(f"loop_brake_cli.integrations.{name}")
    with pytest.raises(
        TypeError, match=f"integrations.{name}: unexpected keyword argument 'max_repeat'"
    ):
        build(module, max_repeat=3)
    made = build(module, max_repeats=4, session_key=lambda ctx: "mine")
    assert made.brake.max_repeats == 4 and made.seam.session(object()) == "mine"
    mine = LoopBrake(5)
    assert build(module, brake=mine).brake is mine
    with pytest.raises(ValueError, match="not both"):
        build(module, brake=mine, max_repeats=3)


def test_a_call_id_marks_one_call_only_while_it_is_open() -> None:
    """Issue 36.3: from ``judge`` until ``feed``/``end`` (or a denial, its own answer)
    an id is one call, seen at two seams counted once; after it, the same id is a new
    call. On c40a10b an id equal to the last counted one was never counted again."""
    seam = seam_of()  # maxRepeats 3
    first = seam.judge("s", "search", {"q": "w"}, "call_0")
    second_seam = seam.judge("s", "search", {"q": "w"}, "call_0")  # the same call, open
    assert (first.count, second_seam.duplicate) == (1, True)
    seam.end(second_seam)  # a duplicate leaves the end to the seam that counted it
    assert seam.judge("s", "search", {"q": "w"}, "call_0").duplicate
    seam.feed(first, "results")  # its result: the call ended
    counts = []
    for _ in range(4):
        verdict = seam.judge("s", "search", {"q": "w"}, "call_0")
        counts.append((verdict.count, verdict.denied))
        with pytest.raises(RuntimeError), seam.running(verdict):
            raise RuntimeError("the tool failed")  # a failure ends the call too
    assert counts == [(2, False), (3, True), (4, True), (5, True)]  # denials end at once
