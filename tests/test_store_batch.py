"""Calls decided together are decided as one at a time (issue 41 goal 3).

``filter --store`` sends the calls it has already read to the store together
(``readers/batched.py``, ``RedisStore.count_calls``: each session's calls in one run
of ``redis_step.lua``, or one compare-and-set under a policy, the sessions' runs in
one write). Here drawn calls over several sessions, cut into drawn batches, go through
``LoopBrake.observe_many`` on every shared store (a real redis-server through redis-py
and through the hook's connection, a real three-master cluster, whose pipelines reach
several masters, and SQLite, which has no ``count_calls``) and must get the verdicts a
memory brake gives them one at a time, under no policy and under policies. Then the
command: ``filter --store`` batched and with ``LOOP_BRAKE_STORE_BATCH=1`` writes the
same bytes, live input is answered line by line, and a store killed while a batch
waits for its answers fails open, said once, as one call at a time does.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_server import RedisServer

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.stores import open_store

CANARY = "canary-batch-5d0e-secret"
POLICIES = {
    "seed": None,
    "cycles-stop": """
[[tools]]
match = "poll*"
max_repeats = 5
[[tools]]
match = "free"
exempt = true
[cycles]
max_period = 3
max_repeats = 2
[stop]
after_denials = 3
""",
    "window-warn": """
warn_at = 2
[window]
calls = 4
max_repeats = 2
""",
}
TOOLS = ["read", "poll", "free"]
ARGS = [{"p": 1}, {"p": 2}, {"p": CANARY}]
CALL_IDS = [None, None, "c1", "c2", 1, 1.0, True, [1, "x"]]
_runs = itertools.count()
LATE = "?socket_timeout=60"  # a loaded machine answers late: no fail-open in these tests


@pytest.fixture(params=["sqlite", "redis", "redis-resp", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        opened = open_store(str(tmp_path / "state.db"))
    elif request.param == "redis-cluster":
        opened = open_store(request.getfixturevalue("redis_cluster_url") + LATE)
    else:
        short_lived = request.param == "redis-resp"
        url = request.getfixturevalue("redis_url") + LATE
        opened = open_store(url, short_lived=short_lived)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("policies")
    loaded = {}
    for name, text in POLICIES.items():
        if text is None:
            loaded[name] = None
            continue
        path = folder / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        loaded[name] = load_policy(str(path))
    return loaded


drawn_calls = st.lists(
    st.tuples(
        st.integers(0, 5),  # the session
        st.sampled_from(range(len(TOOLS))),
        st.sampled_from(range(len(ARGS))),
        st.sampled_from(range(len(CALL_IDS))),
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    drawn=drawn_calls,
    cuts=st.lists(st.integers(1, 40), min_size=1, max_size=8),
    which=st.sampled_from(sorted(POLICIES)),
)
def test_calls_decided_together_get_the_verdicts_of_one_at_a_time(
    store, policies, drawn, cuts, which
) -> None:
    policy = policies[which]
    run = next(_runs)
    calls = [
        (f"b{run}-{session}", TOOLS[tool], call_digest(TOOLS[tool], ARGS[arg]), CALL_IDS[cid])
        for session, tool, arg, cid in drawn
    ]
    reference = LoopBrake(3, policy=policy)
    expected = [reference.observe(*call) for call in calls]
    batched = LoopBrake(3, policy=policy, store=store, warn=pytest.fail)
    got = []
    start = 0
    for cut in itertools.cycle(cuts):
        if start >= len(calls):
            break
        got += batched.observe_many(calls[start : start + cut])
        start += cut
    assert got == expected
    assert batched.store_failures == 0


def test_a_pipeline_reaches_every_master_of_a_cluster(redis_cluster, redis_cluster_url) -> None:
    """64 sessions in one batch: their keys live on the three masters; each session's
    third identical call is denied, once."""
    store = open_store(redis_cluster_url + LATE)
    brake = LoopBrake(3, store=store, warn=pytest.fail)
    digest = call_digest("read", {"q": CANARY})
    calls = [(f"m{k}", "read", digest, None) for _ in range(3) for k in range(64)]
    verdicts = brake.observe_many(calls)
    assert [v.count for v in verdicts] == [1] * 64 + [2] * 64 + [3] * 64
    assert [v.denied for v in verdicts] == [False] * 128 + [True] * 64
    held = [
        int(node.info("keyspace").get("db0", "keys=0").split(",")[0][5:])
        for node in redis_cluster.masters()
    ]
    assert len(held) == 3 and all(held) and sum(held) == 64
    store.close()


def test_a_batch_after_script_flush_loads_the_script_again(redis_server: RedisServer) -> None:
    redis_server.command("FLUSHALL")
    store = open_store(redis_server.url + LATE)
    brake = LoopBrake(3, store=store, warn=pytest.fail)
    digest = call_digest("read", {"q": CANARY})
    assert [v.count for v in brake.observe_many([("f", "read", digest, None)] * 2)] == [1, 2]
    assert redis_server.command("SCRIPT", "FLUSH") == "OK"
    calls = [("f", "read", digest, None), ("g", "read", digest, None)]
    assert [v.count for v in brake.observe_many(calls)] == [3, 1]
    store.close()


# -- the command ---------------------------------------------------------------------


def _events(path: Path, n: int, sessions: int, seed: int, results: bool = False) -> None:
    """Event lines over ``sessions`` sessions, identical calls in streaks, some call ids
    repeated (duplicates), a bad line now and then; with ``results``, result lines and
    user turns too (read under a progress policy and reset_on_user_turn)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        session = f"s{rng.randrange(sessions)}"
        roll = rng.random()
        if roll < 0.02:
            lines.append('{"tool": "read", "args": {"q": 1')  # not JSON: an error verdict
            continue
        if results and roll < 0.12:
            result = {"out": rng.randrange(2), "secret": CANARY}
            lines.append(json.dumps({"type": "result", "sessionId": session, "result": result}))
            continue
        if results and roll < 0.15:
            lines.append(json.dumps({"type": "user", "sessionId": session}))
            continue
        event = {
            "tool": rng.choice(["read", "poll", "free"]),
            "args": {"q": rng.randrange(2), "secret": CANARY},
            "sessionId": session,
        }
        if rng.random() < 0.5:
            event["callId"] = f"c{rng.randrange(n // 3)}"
        lines.append(json.dumps(event))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _filter(args: list[str], batch: str | None, stdin=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("LOOP_BRAKE_STORE_BATCH", None)
    if batch is not None:
        env["LOOP_BRAKE_STORE_BATCH"] = batch
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "filter", "--summary", *args],
        capture_output=True,
        env=env,
        input=stdin,
        timeout=300,
    )


PROGRESS_POLICY = """
progress = true
reset_on_user_turn = true
warn_at = 2
[cycles]
max_period = 2
max_repeats = 2
[same_error]
after = 2
"""


@pytest.mark.parametrize("which", ["seed", "cycles-stop", "window-warn", "progress"])
def test_filter_store_batched_writes_the_bytes_of_one_call_at_a_time(
    redis_server: RedisServer, tmp_path: Path, which: str
) -> None:
    events = tmp_path / "events.jsonl"
    _events(events, 3000, 40, seed=len(which), results=which == "progress")
    args = [str(events)]
    text = PROGRESS_POLICY if which == "progress" else POLICIES[which]
    if text is not None:
        policy = tmp_path / "policy.toml"
        policy.write_text(text, encoding="utf-8")
        args += ["--policy", str(policy)]
    memory = _filter(args, None)
    runs = {}
    for batch in ("1", None, "7"):  # one at a time, the default, batches of 7 calls
        redis_server.command("FLUSHALL")
        runs[batch] = _filter([*args, "--store", redis_server.url + LATE], batch)
    one = runs["1"]
    assert one.returncode == 0, one.stderr
    verdicts = one.stdout.decode().splitlines()
    assert len(verdicts) > 2000 and CANARY.encode() not in one.stdout + one.stderr
    assert {json.loads(line)["verdict"] for line in verdicts} >= {"pass", "deny", "error"}
    for batch in (None, "7"):
        assert runs[batch].stdout == one.stdout
        assert runs[batch].stderr == one.stderr and runs[batch].returncode == 0
    assert one.stdout == memory.stdout  # the store counts as memory does


def _read_lines(stream, n: int) -> list[dict]:
    return [json.loads(stream.readline()) for _ in range(n)]


def _server_holds_unread_bytes(port: int) -> bool:
    """Whether a connection to ``port`` has bytes its (frozen) server has not read:
    /proc/net/tcp's rx_queue of the server's side."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, queues = fields[1], fields[4]
            if int(local.rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                if int(queues.split(":")[1], 16) > 0:
                    return True
    return False


def test_a_store_killed_while_a_batch_waits_fails_open_said_once(tmp_path: Path) -> None:
    """Live input: each written line is answered before the next is written (no batch
    waits for more input). Then, the server frozen, 12 calls of 4 sessions are written at
    once: the batch is sent, the server is killed before it answers (SIGKILL), and every
    call of the batch is allowed uncounted (count 0, rule store), one line on stderr says
    so; restarted, the store counts again and says how many calls it missed."""
    server = RedisServer().start()
    url = server.url + LATE  # the kill, not a time-out, ends the wait
    proc = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "filter", "--summary", "--store", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def call(session: str) -> bytes:
        event = {"tool": "read", "args": {"q": CANARY}, "sessionId": session}
        return json.dumps(event).encode() + b"\n"

    try:
        for count in (1, 2):  # live: each line's verdict comes before the next is written
            for session in ("a", "b"):
                proc.stdin.write(call(session))
                proc.stdin.flush()
                [verdict] = _read_lines(proc.stdout, 1)
                assert (verdict["sessionId"], verdict["count"]) == (session, count)
        server.freeze()
        proc.stdin.write(b"".join(call(s) for _ in range(3) for s in "abcd"))
        proc.stdin.flush()
        while not _server_holds_unread_bytes(server.port):  # the batch was sent
            pass
        server.kill()
        during = _read_lines(proc.stdout, 12)
        assert [v["verdict"] for v in during] == ["pass"] * 12
        assert [v["count"] for v in during] == [0] * 12
        server.start()
        proc.stdin.write(call("a") + call("c"))
        proc.stdin.flush()
        after = _read_lines(proc.stdout, 2)
        assert [(v["sessionId"], v["count"]) for v in after] == [("a", 1), ("c", 1)]
        proc.stdin.close()
        stderr = proc.stderr.read().decode()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.stop()
    failed = [line for line in stderr.splitlines() if "not counted until it answers" in line]
    assert len(failed) == 1 and "allowed (fail-open)" in failed[0]
    assert "answers again" in stderr and "12 calls were allowed (fail-open)" in stderr
    assert "12 calls decided without it" in stderr
    assert CANARY not in stderr


def test_a_dead_master_fails_open_only_its_sessions_of_a_batch(tmp_path: Path) -> None:
    """Three masters, no replicas, the others serving their slots while one is down
    (``cluster-require-full-coverage no``): a batch over 30 sessions after one master is
    killed counts the sessions the live masters hold and fails open only those of the
    dead one (docs/scaling.md: a master that cannot be asked fails open only the
    sessions whose slots it holds), said as one call at a time says it."""
    from redis_cluster import RedisCluster

    cluster = RedisCluster(tmp_path / "cluster").start()
    try:
        for node in cluster.masters():
            assert node.command("CONFIG", "SET", "cluster-require-full-coverage", "no") == "OK"
        warned: list[str] = []
        store = open_store(cluster.url + LATE)
        brake = LoopBrake(3, store=store, warn=warned.append)
        digest = call_digest("read", {"q": CANARY})
        calls = [(f"d{k}", "read", digest, None) for k in range(30)]
        assert [v.count for v in brake.observe_many(calls)] == [1] * 30
        dead = cluster.master_of("lb:v1:{d0}")
        on_dead = {s for s, *_ in calls if cluster.master_of(f"lb:v1:{{{s}}}") is dead}
        assert 0 < len(on_dead) < 30
        cluster.kill(dead)
        verdicts = brake.observe_many(calls)
        assert [(v.session_id, v.count) for v in verdicts] == [
            (s, 0 if s in on_dead else 2) for s, *_ in calls
        ]
        assert not any(v.denied for v in verdicts)
        # said as one call at a time says it: once when a call fails after one counted,
        # once when one is counted after one failed (so the outage's every edge)
        dead_runs = [s in on_dead for s, *_ in calls]
        edges = [k for k in range(30) if dead_runs[k] != (k > 0 and dead_runs[k - 1])]
        assert len(warned) == len(edges)
        for line, k in zip(warned, edges, strict=True):
            assert ("allowed (fail-open)" in line) and ("answers again" in line) != dead_runs[k]
            assert CANARY not in line
        store.close()
    finally:
        cluster.stop()
