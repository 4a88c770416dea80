"""The shared store suite: every session table against the one-process rule.

Parametrised over the memory table (``core/table.py``), SQLite and a real
redis-server (tests/redis_server.py), through redis-py and through the hook's own
connection (``stores/resp.py``) and as ``mcp-gateway`` asks it on its event loop
(``stores/redis_loop.py``, tests/redis_loop_table.py): a backend is correct when this whole file
passes against it (STYLE habit 10). Each drawn sequence of calls (and, under a
policy, results and ends) goes through the table and through the reference,
``MemoryTable`` on ``streak.step``/``streak.policy_step``: every state must be
equal, field for field (the policy part too), and so every verdict. The listing
tests (``state list``) run against the shared stores. A real three-master Redis Cluster
(tests/redis_cluster.py, ``redis+cluster://``) runs it too. A backend registered from a
test alone runs this whole suite too (tests/test_store_registry.py). Concurrency
and failures of the Redis store are in tests/test_store_redis.py.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_loop_table import LoopTable

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.core.streak import PolicySlot, Slot
from loop_brake_cli.core.table import MemoryTable
from loop_brake_cli.stores import open_store
from loop_brake_cli.stores.rows import call_id_key

POLICY = """
[[tools]]
match = "poll*"
max_repeats = 5
progress = true
[[tools]]
match = "free"
exempt = true
[cycles]
max_period = 3
max_repeats = 2
[stop]
after_denials = 3
"""

TOOLS = ["read", "poll", "free"]
ARGS = [{"p": 1}, {"p": 2}]
# ids Python finds equal (1, 1.0, True) must be duplicates of each other in every store
CALL_IDS = [None, None, "c1", "c2", 1, 1.0, True, "1", [1, "x"]]
RESULTS = [{"r": 1}, {"r": 2}]
_sessions = itertools.count()


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A shared store's URL: one SQLite file, the test's flushed redis-server, or the
    flushed three-master cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "state.db")
    return request.getfixturevalue(request.param.replace("-", "_") + "_url")


@pytest.fixture(params=["sqlite", "redis", "redis-resp", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    """A shared store (it also lists its sessions, for ``state list``). ``redis-resp``:
    the Redis store as the hook opens it (``short_lived``: stores/resp.py's connection,
    not redis-py)."""
    yield from _opened(request, tmp_path)


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-resp", "redis-loop", "redis-cluster"])
def table(request: pytest.FixtureRequest, tmp_path: Path):
    """Every session table a brake can count through. ``redis-loop``: the Redis store as
    ``mcp-gateway`` asks it (its count without a policy and its end on the event loop,
    stores/redis_loop.py)."""
    if request.param == "memory":
        yield MemoryTable()
        return
    if request.param == "redis-loop":
        loop_table = LoopTable(open_store(request.getfixturevalue("redis_url")))
        yield loop_table
        loop_table.close()
        return
    yield from _opened(request, tmp_path)


def _opened(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        opened = open_store(str(tmp_path / "state.db"))
    elif request.param == "redis-cluster":  # redis-py's cluster client, three masters
        opened = open_store(request.getfixturevalue("redis_cluster_url"))
    else:
        short_lived = request.param == "redis-resp"
        opened = open_store(request.getfixturevalue("redis_url"), short_lived=short_lived)
        if short_lived:  # the connection the hook gets, where hiredis is installed
            opened.count_call("probe", "t", b"p" * 32, None, 3)
            assert opened._client.__class__.__name__ == "RespConnection"
            opened.reset("probe")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("policy") / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return load_policy(str(path))


calls = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from(range(len(ARGS))),
        st.sampled_from(range(len(CALL_IDS))),
        st.sampled_from([None, 0, 1]),  # a result after the call (policy runs only)
        st.booleans(),  # the call ends after it (its answer was seen: end_call)
    ),
    min_size=1,
    max_size=14,
)
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _run(table, drawn, policy=None) -> None:
    """Each drawn call (and result, and end) through ``table`` and through the reference
    memory table: equal states and answers, and so equal verdicts through a brake."""
    session = f"s{next(_sessions)}"
    reference = MemoryTable()
    counted, expected = LoopBrake(3, policy=policy, store=table), LoopBrake(3, policy=policy)
    for tool, arg, cid, result, end in drawn:
        call_id = CALL_IDS[cid]
        digest = call_digest(tool, ARGS[arg])
        state, duplicate = table.count_call(session, tool, digest, call_id, 3, policy)
        assert (state, duplicate) == reference.count_call(session, tool, digest, call_id, 3, policy)
        assert type(duplicate) is bool and type(state) is (Slot if policy is None else PolicySlot)
        assert counted.slot_verdict(state, session, call_id, duplicate) == expected.observe(
            session, tool, digest, call_id
        )
        if policy is not None and result is not None:
            result_digest = call_digest("result", RESULTS[result])
            paired = table.observe_result(session, call_id, result_digest, policy)
            assert paired is reference.observe_result(session, call_id, result_digest, policy)
            expected.observe_result(session, call_id, digest=result_digest)
        if end:
            ended = table.end_call(session, call_id)
            assert ended is reference.end_call(session, call_id)
            expected.end_call(session, call_id)


@SETTINGS
@given(drawn=calls)
def test_the_seed_rule_is_streak_step(table, drawn) -> None:
    _run(table, drawn)


@SETTINGS
@given(drawn=calls)
def test_under_a_policy_the_rule_is_policy_step(table, policy, drawn) -> None:
    _run(table, drawn, policy)


RULES_POLICY = """
[[tools]]
match = "free"
exempt = true
[window]
calls = 4
max_repeats = 2
[same_error]
after = 2
[stop]
after_denials = 3
"""


@SETTINGS
@given(
    drawn=calls,
    errors=st.lists(st.booleans(), min_size=14, max_size=14),
)
def test_under_window_and_same_error_the_rule_is_policy_step(
    table, tmp_path_factory, drawn, errors
) -> None:
    """Issue 29's rules: the window's digests and the run of identical errors live in
    the policy row (``stores/policy_rows.py``), so each table decides as memory does."""
    path = tmp_path_factory.mktemp("rules") / "policy.toml"
    path.write_text(RULES_POLICY, encoding="utf-8")
    policy = load_policy(str(path))
    reference = MemoryTable()
    session = f"s{next(_sessions)}"
    for (tool, arg, cid, result, end), error in zip(drawn, errors, strict=False):
        call_id = CALL_IDS[cid]
        digest = call_digest(tool, ARGS[arg])
        got = table.count_call(session, tool, digest, call_id, 3, policy)
        assert got == reference.count_call(session, tool, digest, call_id, 3, policy)
        if result is not None:
            result_digest = call_digest("result", RESULTS[result])
            paired = table.observe_result(session, call_id, result_digest, policy, error)
            assert paired is reference.observe_result(
                session, call_id, result_digest, policy, error
            )
        if end:
            assert table.end_call(session, call_id) is reference.end_call(session, call_id)


CEILING_POLICY = """
progress = true
progress_max = 3
[[tools]]
match = "free"
same_result = false
[same_result]
after = 2
any_tool = true
"""


@SETTINGS
@given(drawn=calls)
def test_under_progress_max_and_same_result_the_rule_is_policy_step(
    table, tmp_path_factory, drawn
) -> None:
    """Issue 39's rules: the identical calls in a row and the run of identical results
    live in the policy row (``stores/policy_rows.py``), so each table decides as memory
    does."""
    path = tmp_path_factory.mktemp("ceiling") / "policy.toml"
    path.write_text(CEILING_POLICY, encoding="utf-8")
    _run(table, drawn, load_policy(str(path)))


def test_a_table_counts_identical_errors_as_memory_does(table, tmp_path: Path) -> None:
    """``[same_error] after = 2`` alone: two calls of one tool (other arguments each
    time) whose results are the same error, and the third call is denied; another
    tool's call, or a success, starts the run over. The error flag reaches the
    table's state."""
    path = tmp_path / "same-error.toml"
    path.write_text("[same_error]\nafter = 2\n", encoding="utf-8")
    policy = load_policy(str(path))
    brake, memory = LoopBrake(9, policy=policy, store=table), LoopBrake(9, policy=policy)
    session = f"s{next(_sessions)}"
    failed = call_digest("result", RESULTS[0])
    calls = ["read"] * 3 + ["write"] + ["read"] * 5  # None: denied (no result)
    outcomes = [True, True, None, False, True, False, True, True, None]
    for index, (tool, error) in enumerate(zip(calls, outcomes, strict=True)):
        digest = call_digest(tool, {"p": index})
        got = brake.observe(session, tool, digest, f"c{index}")
        assert got == memory.observe(session, tool, digest, f"c{index}")
        assert got.denied == (error is None)
        if error is None:
            assert got.rule == "same_error"
            continue
        assert brake.observe_result(session, f"c{index}", digest=failed, error=error)
        memory.observe_result(session, f"c{index}", digest=failed, error=error)


def test_reset_says_how_many_sessions_it_removed(table) -> None:
    """``reset`` answers an int in every table: 1 or 0 for one session, the number
    removed for all; a reset session starts afresh."""
    digest = call_digest("read", {})
    for session in ("a", "b", "c"):
        table.count_call(session, "read", digest)
    assert table.count_call("a", "read", digest)[0].count == 2
    assert table.reset("a") == 1
    assert table.reset("a") == 0
    assert table.count_call("a", "read", digest)[0].count == 1
    assert table.reset() == 3
    assert table.reset() == 0
    assert table.count_call("b", "read", digest)[0].count == 1


def test_call_id_keys_are_equal_exactly_when_python_finds_the_ids_equal() -> None:
    ids = [None, 0, 1, 1.0, True, False, "1", 1.5, [1], [True], {"a": 1}, {"a": True}, "x"]
    for a, b in itertools.product(ids, repeat=2):
        if a is None or b is None:
            continue
        assert (call_id_key(a) == call_id_key(b)) == (a == b), (a, b)


def test_sessions_list_and_reset(store) -> None:
    digest = call_digest("read", {"p": 1})
    for call_id in ("c1", "c2"):
        store.count_call("alpha", "read", digest, call_id, 3)
    store.count_call("beta", "write", call_digest("write", {}), 7, 3)
    rows, skipped = store.sessions()
    assert skipped == 0
    assert sorted((r.session, r.tool, r.count, r.call_id) for r in rows) == [
        ("alpha", "read", 2, "c2"),
        ("beta", "write", 1, 7),
    ]
    assert {r.hash_prefix for r in rows if r.session == "alpha"} == {digest[:6].hex()}
    assert [r.session for r in store.sessions("beta")[0]] == ["beta"]
    assert store.sessions("nobody") == ([], 0)
    assert store.reset("alpha") == 1
    assert store.reset("alpha") == 0
    assert store.count_call("alpha", "read", digest, "c3", 3)[0].count == 1
    assert store.reset() == 2
    assert store.sessions() == ([], 0)


def test_sessions_of_lone_surrogates_stay_apart_and_list_as_written(store) -> None:
    """A session key with a lone surrogate (``"\\ud800"`` in an agent's JSON) is as
    distinct in a store as in memory: never merged with another one's replacement."""
    digest = call_digest("read", {"p": 1})
    names = ["\ud800", "\udfff", "\ud800x", "?"]
    for name in names:
        assert store.count_call(name, "read", digest, None, 3)[0].count == 1
    assert store.count_call("\ud800", "read", digest, None, 3)[0].count == 2
    rows, skipped = store.sessions()
    assert skipped == 0
    assert sorted((r.session, r.count) for r in rows) == sorted(
        [("\ud800", 2), ("\udfff", 1), ("\ud800x", 1), ("?", 1)]
    )


def test_sessions_list_the_latest_updated_first(store) -> None:
    """``state list`` shows the session updated last on top, whatever the order in
    which the sessions were first written."""
    digest = call_digest("read", {})
    now = time.time()
    for session, ago in (("middle", 20.0), ("oldest", 30.0), ("newest", 10.0)):
        store.count_call(session, "read", digest, None, 3, now=now - ago)
    store.count_call("oldest", "read", digest, None, 3, now=now - 5.0)  # now the latest
    assert [row.session for row in store.sessions()[0]] == ["oldest", "newest", "middle"]


def test_two_store_objects_share_one_streak(store_url: str) -> None:
    """Two handles (two processes' worth) on one store count one streak."""
    first, second = open_store(store_url), open_store(store_url)
    try:
        digest = call_digest("read", {"p": 1})
        counts = [
            (first if i % 2 else second).count_call("shared", "read", digest, None, 3)[0].count
            for i in range(4)
        ]
        assert counts == [1, 2, 3, 4]
    finally:
        first.close()
        second.close()


def test_a_session_key_of_any_text_round_trips(store) -> None:
    digest = call_digest("t", {})
    for session in ("{braces}", "a}b{c", "ünï\u2603", "x" * 500, "lone\udc80"):
        store.count_call(session, "t\u2603", digest, None, 3)
        assert store.count_call(session, "t\u2603", digest, None, 3)[0].count == 2
        rows, _ = store.sessions(session)
        assert [(r.session, r.tool, r.count) for r in rows] == [(session, "t\u2603", 2)]


def test_a_reused_id_counts_again_once_its_call_ended(table) -> None:
    """Issue 36 item 3: an id counts once only while its call is open. A duplicate while
    open is not counted; after ``end_call`` the same id is a new call, counted (a
    client reusing its JSON-RPC id after each answer, a model numbering every turn's
    calls ``call_0``)."""
    brake = LoopBrake(3, store=table)
    digest = call_digest("read", {"p": 1})
    session = f"s{next(_sessions)}"
    first = brake.observe(session, "read", digest, "call_0")
    again = brake.observe(session, "read", digest, "call_0")
    assert (first.count, first.duplicate) == (1, False)
    assert (again.count, again.duplicate) == (1, True)
    assert table.end_call(session, "call_0") is True
    assert table.end_call(session, "call_0") is False  # already ended
    verdicts = [brake.observe(session, "read", digest, "call_0")]
    assert brake.end_call(session, "call_0") is True
    verdicts.append(brake.observe(session, "read", digest, "call_0"))
    assert [(v.count, v.duplicate, v.denied) for v in verdicts] == [
        (2, False, False),
        (3, False, True),
    ]
    table.end_call(session, "call_0")
    assert table.count_call(session, "read", digest, None)[0].count == 4


def test_an_ended_call_is_listed_without_its_id(store) -> None:
    digest = call_digest("read", {"p": 1})
    session = f"s{next(_sessions)}"
    store.count_call(session, "read", digest, "call_0")
    assert [row.call_id for row in store.sessions(session)[0]] == ["call_0"]
    assert store.end_call(session, "call_0")
    assert [(row.call_id, row.count) for row in store.sessions(session)[0]] == [(None, 1)]


def test_only_the_latest_call_ends(table) -> None:
    """An end naming another id (an older call, ``1`` for ``"1"``), no id, or a session
    the table does not hold changes nothing: the open call stays a duplicate."""
    digest = call_digest("read", {})
    session = f"s{next(_sessions)}"
    table.count_call(session, "read", digest, "1")
    assert table.end_call(session, 1) is False
    assert table.end_call(session, None) is False
    assert table.end_call(f"s{next(_sessions)}", "1") is False
    assert table.count_call(session, "read", digest, "1")[1] is True
    assert table.count_call(session, "read", digest, 1)[0].count == 2
    assert table.end_call(session, 1.0) is True  # Python finds 1.0 == 1: the same id


def test_an_end_keeps_the_policy_state(table, tmp_path: Path) -> None:
    """Only the id is forgotten: the consecutive denials that make a stop survive the
    end (the SQLite policy row is stamped with its streak row's ``updated``)."""
    path = tmp_path / "stop.toml"
    path.write_text("[stop]\nafter_denials = 2\n", encoding="utf-8")
    brake = LoopBrake(2, policy=str(path), store=table)
    digest = call_digest("read", {})
    session = f"s{next(_sessions)}"
    kinds = []
    for _ in range(3):
        verdict = brake.observe(session, "read", digest, "c")
        kinds.append((verdict.count, verdict.duplicate, verdict.denied, verdict.stop))
        assert table.end_call(session, "c")
    assert kinds == [(1, False, False, False), (2, False, True, False), (3, False, True, True)]


def test_a_paired_result_ends_its_call(table, tmp_path: Path) -> None:
    """Under a progress policy a result paired by its id ends the call: the id counts
    again, and a second result with that id no longer pairs."""
    path = tmp_path / "progress.toml"
    path.write_text("progress = true\n", encoding="utf-8")
    policy = load_policy(str(path))
    digest, result = call_digest("poll", {}), call_digest("result", RESULTS[0])
    session = f"s{next(_sessions)}"
    assert table.count_call(session, "poll", digest, 7, 3, policy)[0].slot.count == 1
    assert table.count_call(session, "poll", digest, 7, 3, policy)[1] is True
    assert table.observe_result(session, 7, result, policy) is True
    assert table.observe_result(session, 7, result, policy) is False
    state, duplicate = table.count_call(session, "poll", digest, 7, 3, policy)
    assert (state.slot.count, duplicate) == (2, False)
