"""run.watch: when ``loop-brake run`` ends the agent, decided from the calls it sees.

Written from docs/ci.md and run/watch.py's docstring: a denial is *ignored* when the
session's previous verdict was a denial of the same call (the agent was told and made
it again); a denial after a denial of another call is the agent changing course; a
call's line sent again with its call id is the same call (a duplicate verdict), not a
new ignored denial; ``--stop-after N`` ends the run at the Nth ignored denial, and
``--session`` names every session, a subagent's suffix kept. The calls go through a
real in-memory brake (``readers.pipeline.judge``), as in the run.
"""

from __future__ import annotations

from conftest import ROOT

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.records import ToolCall
from loop_brake_cli.readers.pipeline import judge
from loop_brake_cli.run.watch import Decision, Watch


class _Seen:
    """The analyzer's one method the watch calls."""

    def __init__(self) -> None:
        self.records: list[object] = []

    def add(self, record: object, verdict: object) -> None:
        self.records.append(record)


def _watch(
    calls: list[ToolCall],
    stop_after: int,
    session_key: str | None = None,
    brake: LoopBrake | None = None,
) -> Watch:
    decisions: list[Decision] = []
    watch = Watch(
        brake if brake is not None else LoopBrake(2),
        _Seen(),
        stop_after,
        reachable=True,
        on_call=lambda call, verdict: None,
        on_decision=decisions.append,
        session_key=session_key,
    )
    for record, verdict in judge(watch.records(iter(calls)), watch.brake):
        watch.see(record, verdict)
    assert decisions == ([] if watch.decision is None else [watch.decision])
    return watch


def _call(n: int, path: str, session: str = "s") -> ToolCall:
    return ToolCall("Read", {"path": path}, session, f"call-{n}")


def test_a_denial_of_another_call_after_a_denial_is_not_ignored() -> None:
    # maxRepeats 2: the second A is denied, then the second B (after the first B)
    calls = [_call(1, "a"), _call(2, "a"), _call(3, "b"), _call(4, "b")]
    watch = _watch(calls, stop_after=1)
    assert watch.ignored == 0 and watch.decision is None


def test_a_denial_right_after_a_denial_of_another_call_is_not_ignored() -> None:
    """Under a [window] policy A, B, A, B, A, B: the third A is denied, then the third B,
    whose session's previous verdict is a denial, but of A: the agent did change course."""
    brake = LoopBrake(policy=str(ROOT / "samples" / "policies" / "window.toml"))
    calls = [_call(n, "ab"[n % 2]) for n in range(6)]
    watch = _watch(calls, stop_after=1, brake=brake)
    assert [verdict for verdict, _ in watch.sessions.values()] == [True]
    assert watch.ignored == 0 and watch.decision is None


def test_the_same_denied_call_again_is_ignored_and_ends_the_run_at_stop_after() -> None:
    calls = [_call(n, "a") for n in range(1, 6)]  # denied from the second on
    watch = _watch(calls, stop_after=2)
    assert watch.decision is not None and watch.decision.kind == "ignored"
    assert watch.ignored == 2 and watch.decision.count == 2


def test_one_ignored_denial_short_of_stop_after_goes_on() -> None:
    calls = [_call(n, "a") for n in range(1, 4)]  # denied, then ignored once
    watch = _watch(calls, stop_after=2)
    assert watch.ignored == 1 and watch.decision is None


def test_a_denied_calls_line_sent_again_is_no_ignored_denial() -> None:
    calls = [_call(1, "a"), _call(2, "a"), _call(2, "a"), _call(2, "a")]
    watch = _watch(calls, stop_after=1)
    assert watch.ignored == 0 and watch.decision is None


def test_session_names_the_streams_sessions_and_keeps_a_subagents_suffix() -> None:
    calls = [_call(1, "a", "abc"), _call(2, "a", "abc/sub-1"), _call(3, "b", "other")]
    watch = _watch(calls, stop_after=5, session_key="ci-job-7")
    assert [call.session for call in watch.analyzer.records] == [
        "ci-job-7",
        "ci-job-7/sub-1",
        "ci-job-7",
    ]
    assert set(watch.sessions) == {"ci-job-7", "ci-job-7/sub-1"}
