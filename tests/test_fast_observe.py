"""``readers/fast_observe.py`` equals the specification it speeds up: ``observe_for``
gives, call by call, the verdict ``LoopBrake.observe`` gives (``verdicts.verdict_of``
on the table's state), and ``digest_for`` hashes a marked stream as
``canonical.call_digest`` does. The speed is measured by bench/, never here."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.records import ToolCall
from loop_brake_cli.readers.fast_canonical import AVAILABLE
from loop_brake_cli.readers.fast_observe import digest_for, observe_for, plain_records

CALLS = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3", "\udc80"]),
        st.sampled_from(["read", "write", "\u2603"]),
        st.sampled_from([{}, {"p": 1}, {"p": [1, "x"]}]),
        st.sampled_from([None, "c1", "c2", 1, 1.0, True]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(calls=CALLS, max_repeats=st.integers(1, 4), bound=st.sampled_from([None, 2]))
def test_the_fast_observe_is_loop_brake_observe(calls, max_repeats, bound) -> None:
    fast_brake = LoopBrake(max_repeats, max_sessions=bound)
    spec_brake = LoopBrake(max_repeats, max_sessions=bound)
    fast = observe_for(fast_brake)
    assert fast != fast_brake.observe  # the fast one is taken for a memory brake
    for session, tool, args, call_id in calls:
        digest = call_digest(tool, args)
        got = fast(session, tool, digest, call_id)
        want = spec_brake.observe(session, tool, digest, call_id)
        assert got == want and type(got) is type(want)
        assert got.message == want.message and repr(got) == repr(want)


def test_a_policy_or_a_store_keeps_the_brakes_own_observe(tmp_path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text("[stop]\nafter_denials = 2\n", encoding="utf-8")
    with_policy = LoopBrake(3, policy=policy)
    assert observe_for(with_policy) == with_policy.observe
    with_store = LoopBrake(3, store=str(tmp_path / "state.db"))
    assert observe_for(with_store) == with_store.observe


@pytest.mark.skipif(not AVAILABLE, reason="orjson is not installed: no fast digest")
def test_a_marked_stream_hashes_as_the_contract() -> None:
    values = [{}, {"b": 1, "a": [1.5, "\u2603", None, True]}, "text", [1, {"x": -0.0}]]

    def stream():
        for index, value in enumerate(values):
            yield ToolCall("t", value, "s", index)

    def other():  # another function's generators: not marked (the code is)
        yield from stream()

    assert digest_for(other()) is call_digest and digest_for(values) is call_digest
    fast = digest_for(plain_records(stream()))
    assert digest_for(stream()) is fast  # every generator of a marked function
    assert fast is not call_digest
    for value in values:
        assert fast("t", value) == call_digest("t", value)
