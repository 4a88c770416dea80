"""filter's session table under a policy (``readers/policy_table.py``, the C step of
``_policy_slots.h``) answers every call as the dict and ``streak.policy_step`` it
replaces (``core/table.py``'s ``MemoryTable``, and ``BoundedMemoryTable`` with
``max_sessions``): the same ``PolicySlot`` after every call, field by field (the
streak, the decision of each rule, the cycle window and its runs, the window's
digests), the same duplicate flag, the same evictions and least-recently-used order.

Drawn: policies with ``warn_at`` (global and per rule), per-tool limits, exemptions,
``args_ignore``, ``[cycles]`` (max_period up to 16), ``[window]`` (up to 64 calls) and
``[stop]``; sequences of a few sessions, tools and digests (so streaks, alternations
and cycles of every period happen), duplicate call ids, ends, resets. And the policies
the C step must leave to ``policy_step`` (``c_rules`` says None)."""

from __future__ import annotations

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from test_event_scan import event_lines, subset_lines

from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.core.policy.model import CycleRule, Policy, StopRule, ToolRule, WindowRule
from loop_brake_cli.core.table import memory_table
from loop_brake_cli.readers import policy_table

if not policy_table.AVAILABLE:  # in CI an unmeant skip fails the run: the reader is built
    pytest.skip("the C reader is not built", allow_module_level=True)
CompactPolicyTable = policy_table.CompactPolicyTable

DIGESTS = [call_digest("t", {"q": i}) for i in range(4)]
DIGESTS.append(DIGESTS[0][:31] + bytes([DIGESTS[0][31] ^ 1]))  # the hash is compared whole
TOOLS = ["a", "a", "b", "read_x", "grep", "list_dir"]
SESSIONS = ["s", "t", "\ud800", ""]
CALL_IDS = [None, None, None, "c1", "c2", 1, True]

MATCH = st.sampled_from(['["a"]', '["read_*"]', '["*"]', '["b", "grep"]', '["list_*"]'])
RULE = st.one_of(
    st.fixed_dictionaries({"match": MATCH, "exempt": st.just(True)}),
    st.fixed_dictionaries(
        {"match": MATCH, "max_repeats": st.integers(1, 6)},
        optional={"warn_at": st.integers(1, 5), "args_ignore": st.just('["$.t"]')},
    ),
)
SECTIONS = st.fixed_dictionaries(
    {},
    optional={
        "cycles": st.tuples(st.sampled_from([2, 3, 4, 16]), st.integers(2, 3)).map(
            lambda c: f"max_period = {c[0]}\nmax_repeats = {c[1]}\n"
        ),
        "window": st.tuples(st.integers(2, 4), st.sampled_from([0, 1, 3, 60])).map(
            lambda w: f"calls = {w[0] + w[1]}\nmax_repeats = {w[0]}\n"
        ),
        "stop": st.integers(1, 3).map(lambda n: f"after_denials = {n}\n"),
    },
)


def _toml(warn_at: int | None, rules: list[dict[str, object]], sections: dict[str, str]) -> str:
    text = "" if warn_at is None else f"warn_at = {warn_at}\n"
    for rule in rules:
        text += "[[tools]]\n" + "".join(f"{k} = {str(v).lower()}\n" for k, v in rule.items())
    return text + "".join(f"[{name}]\n{body}" for name, body in sections.items())


POLICY = st.builds(_toml, st.one_of(st.none(), st.integers(1, 4)), st.lists(RULE, max_size=3),
                   SECTIONS)  # fmt: skip
OP = st.one_of(
    st.tuples(
        st.just("call"),
        st.sampled_from(SESSIONS),
        st.sampled_from(TOOLS),
        st.integers(0, len(DIGESTS) - 1),
        st.sampled_from(CALL_IDS),
    ),
    st.tuples(st.just("end"), st.sampled_from(SESSIONS), st.sampled_from(CALL_IDS)),
    st.tuples(st.just("reset"), st.sampled_from([*SESSIONS, None])),
)
# mostly calls of two sessions over two digests: long streaks, alternations, cycles
CALLS = st.lists(
    st.one_of(
        st.tuples(
            st.just("call"),
            st.sampled_from(SESSIONS[:2]),
            st.sampled_from(TOOLS[:3]),
            st.integers(0, 2),
            st.just(None),
        ),
        OP,
    ),
    max_size=120,
)


def _policy(text: str) -> Policy:
    try:
        return parse_policy(text, "policy.toml")[0]
    except PolicyError:
        reject()  # keys that exclude each other
        raise


def _same(got, want) -> bool:
    (state_a, dup_a), (state_b, dup_b) = got, want
    return (
        dup_a is dup_b
        and tuple(state_a) == tuple(state_b)
        and type(state_a.slot.call_id) is type(state_b.slot.call_id)
        and type(state_a.decision.limit) is type(state_b.decision.limit)
    )


def _check(policy: Policy, ops, max_repeats: int, max_sessions: int | None) -> None:
    reference = memory_table(max_sessions)
    compact = CompactPolicyTable(policy, max_repeats, max_sessions)
    for op in ops:
        if op[0] == "call":
            _, session, tool, which, call_id = op
            digest = DIGESTS[which]
            got = compact.count_call(session, tool, digest, call_id, max_repeats, policy)
            want = reference.count_call(session, tool, digest, call_id, max_repeats, policy)
            assert _same(got, want), (op, got, want)
        elif op[0] == "end":
            _, session, call_id = op
            assert compact.end_call(session, call_id) == reference.end_call(session, call_id)
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
        assert compact.get(session) == reference._slots.get(session)


@settings(max_examples=400, deadline=None)
@given(POLICY, CALLS, st.sampled_from([1, 2, 3, 5]), st.sampled_from([None, None, 1, 2, 3]))
def test_drawn_policies_and_calls_give_policy_steps_states(text, ops, max_repeats, bound):
    _check(_policy(text), ops, max_repeats, bound)


def test_a_cycle_of_every_period_up_to_sixteen():
    """Cycles of 2..16 distinct calls, each repeated until denied, then broken; with a
    window wider than the cycle, and with an exempt tool inside a cycle."""
    for period in (2, 3, 7, 16):
        for window in ("", "[window]\ncalls = 64\nmax_repeats = 64\n"):
            policy = _policy(
                'warn_at = 2\n[[tools]]\nmatch = "list_*"\nexempt = true\n'
                f"[cycles]\nmax_period = 16\nmax_repeats = 3\n[stop]\nafter_denials = 2\n{window}"
            )
            digests = [call_digest("t", {"n": i}) for i in range(period)]
            ops = []
            for n in range(period * 5):
                tool = "list_dir" if n % period == 1 and period == 7 else "a"
                ops.append(("call", "s", tool, digests[n % period], None))
            ops += [("call", "s", "a", DIGESTS[0], None)] * 4
            reference = memory_table(None)
            compact = CompactPolicyTable(policy, 9, None)
            rules = set()
            for _, session, tool, digest, call_id in ops:
                got = compact.count_call(session, tool, digest, call_id, 9, policy)
                want = reference.count_call(session, tool, digest, call_id, 9, policy)
                assert _same(got, want)
                rules.add(want[0].decision.rule)
            assert "cycle" in rules or period == 7  # the exempt tool breaks every cycle
            assert "stop" in rules or period == 7


def test_eviction_at_max_sessions_forgets_the_whole_state():
    """A bounded table evicts the least recently used session, its window and cycle
    state with it: when it returns it starts afresh, as in BoundedMemoryTable."""
    policy = _policy(
        "[window]\ncalls = 8\nmax_repeats = 3\n[cycles]\nmax_period = 4\nmax_repeats = 3\n"
    )
    ops = []
    for round_ in range(6):
        for session in ("a", "b", "c"):
            ops.append(("call", session, "t", round_ % 2, None))
    _check(policy, ops, 5, 2)
    compact = CompactPolicyTable(policy, 5, 2)
    for op in ops:
        compact.count_call(op[1], op[2], DIGESTS[op[3]], None, 5, policy)
    assert compact.evictions == len(ops) - 2


def test_the_policies_the_c_step_leaves_to_policy_step():
    """Results, user turns and sizes past the C step's bounds: ``c_rules`` says None,
    once per policy, and the table refuses to be made for them."""
    rule = ToolRule(("a",), max_repeats=3)
    covered = Policy(tools=(rule,), cycles=CycleRule(4, 3), window=WindowRule(8, 3),
                     stop=StopRule(2), warn_at=2)  # fmt: skip
    assert policy_table.c_rules(covered, 3) == (8, 3, 4, 3, 2)
    assert policy_table.c_rules(Policy(), 3) == (0, 0, 0, 0, -1)
    for left in (
        Policy(progress=True),
        Policy(reset_on_user_turn=True),
        _policy("[same_error]\nafter = 2\n"),
        _policy("[same_result]\nafter = 2\n"),
        _policy('[[tools]]\nmatch = "a"\nmax_repeats = 3\nprogress = true\n'),
        Policy(window=WindowRule(1, 1)),
        Policy(window=WindowRule(65, 3)),
        Policy(cycles=CycleRule(17, 3)),
        Policy(cycles=CycleRule(1, 3)),
        Policy(tools=(ToolRule(("a",), max_repeats=1 << 62),)),
        Policy(warn_at=-(1 << 62)),
        Policy(stop=StopRule(1 << 70)),
    ):
        assert policy_table.c_rules(left, 3) is None, left
        with pytest.raises(ValueError, match="does not cover"):
            CompactPolicyTable(left, 3)
    assert policy_table.c_rules(covered, 1 << 62) is None


def test_the_table_counts_only_its_own_policy():
    policy = _policy("warn_at = 2\n")
    compact = CompactPolicyTable(policy, 3)
    with pytest.raises(ValueError, match="its own policy"):
        compact.count_call("s", "t", DIGESTS[0], None, 3, _policy("warn_at = 2\n"))
    with pytest.raises(ValueError, match="its own policy"):
        compact.count_call("s", "t", DIGESTS[0], None, 4, policy)
    with pytest.raises(ValueError, match="seed's rule only"):
        policy_table.SessionSlots.count_call(compact, "s", "t", DIGESTS[0])
    with pytest.raises(ValueError, match="reads no results"):
        compact.observe_result("s", None, DIGESTS[0], policy)


# ---- the policy hash in C: policy_digest (_event_scan.c) ---------------------------------

NAMES = st.lists(
    st.sampled_from(["q", "limit", "t", "a", "b", "cursor", "é", "x y", ""]), max_size=4
)


def _policy_hash(line: bytes, names: list[str]) -> bytes | None:
    """``Policy.args_digest`` of the line's call under ``$.name`` paths: the exact path's."""
    from loop_brake_cli.core.canonical import parse_json
    from loop_brake_cli.core.policy.args_paths import strip
    from loop_brake_cli.readers.wire.event_line import decode

    record = decode(parse_json(line), 1)
    return call_digest(record.tool, strip(record.args, tuple((name,) for name in names)))


def _check_policy_digest(line: bytes, names: list[str]) -> bool:
    from loop_brake_cli.readers._event_scan import policy_digest, scan_event

    scanned = scan_event(line)
    keys = tuple(name.encode() for name in names)
    got = policy_digest(line, b"ignored\n", keys)
    if scanned is None:
        assert got is None, line
        return False
    head = (scanned[0] + "\n").encode("utf-8", "surrogatepass")
    assert policy_digest(line, head, keys) == _policy_hash(line, names), (line, names)
    return True


@settings(max_examples=600, deadline=None)
@given(st.data(), NAMES)
def test_policy_digest_leaves_out_the_named_members_as_args_paths_strip_does(data, names):
    """Every line scan_event answers (the subset's lines, near misses), with names some
    of its arguments' members have: the digest ``Policy.args_digest`` makes; None for a
    line it declines."""
    line = data.draw(st.one_of(subset_lines(), event_lines()))
    try:
        from loop_brake_cli.core.canonical import parse_json

        args = parse_json(line).get("args")
    except Exception:
        args = None
    if isinstance(args, dict) and args:
        names = names + data.draw(st.lists(st.sampled_from(sorted(args)), max_size=3))
    _check_policy_digest(line, names)


def test_policy_digest_on_the_benchmarks_lines():
    """bench/gen.py's search calls without ``limit`` (the realistic policy), every
    member left out in turn, and arguments that are not an object."""
    lines = [
        b'{"tool":"search","args":{"q":"x","limit":5,"filters":{"limit":1}},'
        b'"sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":{"a":1,"b":[1,{"a":2}],"c":"\\u00e9\\n"},"sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":[1,2],"sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":"limit","sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":{},"sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":{"limit":{}},"sessionId":"s","callId":"c"}',
        b'{"tool":"t","args":{"lines":2,"limit":1,"limits":3},"sessionId":"s","callId":"c"}',
    ]
    for line in lines:
        for names in ([], ["limit"], ["a"], ["b"], ["c"], ["a", "b", "c"], ["q", "filters"]):
            assert _check_policy_digest(line, names)


EXHAUSTIVE = [
    "[window]\ncalls = 2\nmax_repeats = 2\n[cycles]\nmax_period = 4\nmax_repeats = 2\n",
    "[window]\ncalls = 3\nmax_repeats = 2\n[cycles]\nmax_period = 16\nmax_repeats = 2\n"
    "[stop]\nafter_denials = 2\n",
    "warn_at = 2\n[cycles]\nmax_period = 2\nmax_repeats = 2\n",
    '[[tools]]\nmatch = "b"\nexempt = true\n[cycles]\nmax_period = 3\nmax_repeats = 2\n'
    "[window]\ncalls = 4\nmax_repeats = 3\n",
    '[[tools]]\nmatch = "a"\nmax_repeats = 4\nwarn_at = 3\n[window]\ncalls = 5\nmax_repeats = 3\n',
]


@pytest.mark.parametrize("text", EXHAUSTIVE)
@pytest.mark.parametrize("max_repeats", [3, 9])
def test_every_short_sequence_under_each_rule(text: str, max_repeats: int) -> None:
    """Every sequence of up to six calls over three (tool, digest) pairs in one session,
    under rules whose windows differ in size (a window smaller than the cycle window, an
    exempt tool inside cycles and windows, identical calls under a limit too high to deny
    them first): each state equal to policy_step's."""
    import itertools

    policy = _policy(text)
    calls = [("a", DIGESTS[0]), ("a", DIGESTS[1]), ("b", DIGESTS[2])]
    for size in range(1, 7):
        for sequence in itertools.product(calls, repeat=size):
            reference = memory_table(None)
            compact = CompactPolicyTable(policy, max_repeats, None)
            for tool, digest in sequence:
                got = compact.count_call("s", tool, digest, None, max_repeats, policy)
                want = reference.count_call("s", tool, digest, None, max_repeats, policy)
                assert _same(got, want), (text, sequence)
