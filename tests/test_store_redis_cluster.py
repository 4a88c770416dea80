"""The Redis store on a real Redis Cluster (issue 37 item 7): ``redis+cluster://``.

Three masters started on free loopback ports by the test (tests/redis_cluster.py;
the shared suite, tests/test_stores.py, runs on one too). Here: a fleet of 8
processes storms one session and 64 sessions spread over every master, counts
exact; then the master that holds a looping session's slot is killed with SIGKILL
in the middle of a storm: its replica is promoted, the workers never crash, each
failure is one line, and the loop is counted and denied again on the new master.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redis_cluster import RedisCluster
from test_store_redis import _spawn_workers, _wait_for, _workers, stop_all

from loop_brake_cli import LoopBrake
from loop_brake_cli.stores import open_store

CANARY = "canary-cluster-91c4-secret"


@pytest.mark.parametrize("with_policy", [False, True], ids=["seed-script", "policy-cas"])
def test_8_processes_x_250_identical_calls_on_a_cluster_lose_no_update(
    redis_cluster_url: str, tmp_path: Path, with_policy: bool
) -> None:
    policy = None
    if with_policy:
        policy = tmp_path / "policy.toml"
        policy.write_text("[cycles]\nmax_period = 3\nmax_repeats = 3\n", encoding="utf-8")
    records = _workers(
        tmp_path / "sync", redis_cluster_url, "same", 250, 8, str(policy) if policy else None
    )
    assert len(records) == 2000
    assert sorted(r["count"] for r in records) == list(range(1, 2001))
    assert sorted(r["version"] for r in records) == list(range(1, 2001))
    assert sum(not r["denied"] for r in records) == 2  # exactly maxRepeats - 1


def test_64_sessions_over_three_masters_x_8_processes(
    redis_cluster: RedisCluster, redis_cluster_url: str, tmp_path: Path
) -> None:
    records = _workers(tmp_path / "sync", redis_cluster_url, "sessions:64", 200, 8)
    by_session: dict[str, list] = {}
    for r in records:
        by_session.setdefault(r["session"], []).append(r)
    assert len(by_session) == 64
    for rows in by_session.values():
        assert sorted(r["count"] for r in rows) == list(range(1, len(rows) + 1))
        assert sum(not r["denied"] for r in rows) == 2
    # the sessions are spread: every master holds some (one key per session, its slot)
    held = [
        int(node.info("keyspace").get("db0", "keys=0").split(",")[0][5:])
        for node in (redis_cluster.masters())
    ]
    assert len(held) == 3 and all(held) and sum(held) == 64


def test_state_list_and_reset_see_every_master(redis_cluster_url: str) -> None:
    store = open_store(redis_cluster_url)
    brake = LoopBrake(3, store=store)
    for k in range(30):
        brake.check("read", {"q": CANARY}, session_id=f"list-{k}")
    rows, skipped = store.sessions()
    assert sorted(row.session for row in rows) == sorted(f"list-{k}" for k in range(30))
    assert skipped == 0
    assert store.reset() == 30 and store.sessions() == ([], 0)
    store.close()


@pytest.fixture
def cluster_with_replicas(tmp_path: Path):
    """Three masters with a replica each: a cluster of the test's own, to kill."""
    cluster = RedisCluster(tmp_path / "cluster", replicas=1).start()
    yield cluster
    cluster.stop()


def test_a_failover_of_the_master_holding_a_looping_session(
    cluster_with_replicas: RedisCluster, tmp_path: Path
) -> None:
    """Four processes count the same call of session ``s``; its master is killed with
    SIGKILL; the nodes promote its replica (waited for, as the nodes say it). The
    workers never crash and say each failure in one line; after the failover the
    streak goes on from what the replica had received, so the loop is denied again,
    and every count given after it is distinct."""
    cluster = cluster_with_replicas
    stop, sync = tmp_path / "stop", tmp_path / "sync"
    url = cluster.url + "?socket_timeout=2&socket_connect_timeout=2"  # a loaded CI
    master = cluster.master_of("lb:v1:{s}")
    procs = _spawn_workers(sync, [url, "storm", str(stop)], 4)
    try:
        _wait_for(lambda: _count(cluster) >= 100, "the storm did not reach 100")
        cluster.kill(master)
        _wait_for(lambda: any(sync.glob("failed-*")), "no worker saw the master gone")
        promoted = cluster.wait_promoted(master, "lb:v1:{s}")
        assert promoted is not master
        Path(str(stop) + ".restarted").touch()  # from here, calls are on the new master
        reached = _count(cluster)
        _wait_for(lambda: _count(cluster) >= reached + 100, "no count after the failover")
    finally:
        stop.touch()
        outputs = [proc.communicate(timeout=120) for proc in procs]
        stop_all(procs)
    after: list[int] = []
    errors = 0
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0 and err == b"", err.decode()
        for line in out.splitlines():
            record = json.loads(line)
            if "error" in record:
                errors += 1
                assert record["error"].startswith(f"redis store {cluster.url}: ")
            elif record["restarted"]:
                after.append(record["count"])
    final = _count(cluster)
    assert errors > 0 and after
    assert len(after) == len(set(after)) and set(after) <= set(range(1, final + 1))
    assert max(after) >= 3  # the loop is denied again on the promoted master


def _count(cluster: RedisCluster) -> int:
    """The storm's count where session ``s`` lives now (0 while no master answers)."""
    try:
        found = cluster.master_of("lb:v1:{s}").command("HGET", "lb:v1:{s}", "c")
    except (RuntimeError, OSError):
        return 0
    return int(found) if found.isdigit() else 0


def test_a_master_that_evicts_is_said_once_and_doctor_names_it(
    redis_cluster: RedisCluster, redis_cluster_url: str
) -> None:
    """Every master is asked, not one picked at random: one of three on volatile-lru
    is enough for the start-up line, and for doctor's ✗."""
    from loop_brake_cli.doctor.store import store_checks

    one = redis_cluster.masters()[1]
    ok = store_checks(redis_cluster_url, {})
    assert [check.status for check in ok] == ["ok", "ok"], ok
    one.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
    try:
        warned: list[str] = []
        brake = LoopBrake(3, store=redis_cluster_url, warn=warned.append)
        assert [brake.check("read", {"q": CANARY}, session_id="e").count for _ in range(3)] == [
            1,
            2,
            3,
        ]
        assert len(warned) == 1 and "maxmemory-policy is volatile-lru" in warned[0]
        assert warned[0].startswith(f"redis store {redis_cluster_url}: ")
        brake.store.close()
        (evicts,) = store_checks(redis_cluster_url, {})
        assert evicts.status == "fail" and "maxmemory-policy is volatile-lru" in evicts.detail
    finally:
        one.command("CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_the_hook_counts_on_a_cluster(redis_cluster_url: str) -> None:
    """The hook (short_lived) reaches a cluster through redis-py's cluster client:
    stores/resp.py speaks to one server and follows no redirection."""
    from test_store_redis import _claude, _hook

    answers = [_hook("--store", redis_cluster_url, input=_claude("hc", "make")) for _ in range(3)]
    assert [a.returncode for a in answers] == [0, 0, 0]
    assert [a.stdout for a in answers[:2]] == [b"", b""] and answers[0].stderr == b""
    assert b'"permissionDecision":"deny"' in answers[2].stdout
    store = open_store(redis_cluster_url, short_lived=True)
    assert store.sessions()[0][0].count == 3
    assert store._client.__class__.__name__ == "RedisCluster"
    store.close()


def test_an_unreachable_cluster_is_one_line_without_its_password() -> None:
    from redis_server import free_port

    password = "cluster-pass-7e2a"
    nodes = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    url = f"redis+cluster://admin:{password}@{nodes}/0?password={password}"
    warned: list[str] = []
    brake = LoopBrake(3, store=url, warn=warned.append)
    verdict = brake.check("read", {"q": CANARY}, session_id="u")
    assert (verdict.rule, verdict.count, verdict.denied) == ("store", 0, False)
    assert len(warned) == 1 and warned[0].startswith(f"redis store redis+cluster://{nodes}/0: ")
    assert password not in warned[0] and "admin" not in warned[0] and CANARY not in warned[0]
    bad = LoopBrake(3, store="redis+cluster://127.0.0.1:1,nohost/0", warn=warned.append)
    assert bad.check("read", {}, session_id="u").rule == "store"
    assert "a cluster node is host:port, not 'nohost'" in warned[-1]
