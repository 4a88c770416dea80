"""The gateway's Redis round trips on its event loop (``stores/redis_loop.py``).

The shared store suite (tests/test_stores.py, ``redis-loop``) holds its verdicts to
the memory brake's, and the fault tests (tests/test_store_redis.py, ``loop``) its
time-outs, breaker and recovery to the store's. Here is what only this path has: a
command past the decision's deadline whose late reply must not answer the next one,
several commands waiting on one connection, the login, the first answer that reads the
server's ``maxmemory-policy`` when the start could not, and which URLs it takes.
Against a real redis-server (tests/redis_server.py); a frozen server (SIGSTOP) stands
for a slow one, with no timing margin.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer, free_port

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.mcp_gateway.counters import GatewayCounters
from loop_brake_cli.mcp_gateway.store_calls import StoreCalls
from loop_brake_cli.stores import StoreUnavailable
from loop_brake_cli.stores.redis_loop import RedisLoop
from loop_brake_cli.stores.redis_store import RedisStore

pytest.importorskip("redis", reason="redis-py is in the test extra: pip install -e '.[test]'")
pytest.importorskip("hiredis", reason="hiredis is in the redis extra: pip install -e '.[test]'")

DIGEST = call_digest("read", {"p": 1})
PASSWORD = "s3cret-loop-pw"
LONG = 120.0  # a hang guard: nothing here waits for it to pass


class FakeClock:
    """The breaker's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server():
    """A server of the test's own, to freeze, lock or restart."""
    started = RedisServer().start()
    yield started
    started.stop()


def on_loop(url: str, connections: int = 4, **options: Any) -> RedisLoop:
    found = RedisLoop.for_store(RedisStore(url, **options), connections)
    assert found is not None
    return found


def test_many_counts_at_once_on_few_connections_lose_nothing(redis_url: str) -> None:
    """64 counts of one session at once on 2 connections: each reply reaches its own
    command, so the counts are 1 to 64, once each; again on a second event loop (the
    first one's connections are left, not used)."""
    link = on_loop(redis_url, connections=2)

    async def run(session: str) -> list[Any]:
        deadline = asyncio.get_running_loop().time() + LONG
        answers = await asyncio.gather(
            *(link.count(session, "read", DIGEST, f"c{n}", deadline) for n in range(64))
        )
        return [answers, len(link.pool)]

    for session in ("many", "again"):
        answers, connections = asyncio.run(run(session))
        assert sorted(slot.count for slot, _duplicate in answers) == list(range(1, 65))
        assert [slot.call_id for slot, _ in answers] == [f"c{n}" for n in range(64)]
        assert not any(duplicate for _, duplicate in answers) and connections == 2


def test_counts_one_after_another_keep_to_one_connection(redis_url: str) -> None:
    """A connection with nothing waiting is used again, not another one opened."""
    link = on_loop(redis_url, connections=4)

    async def run() -> list[int]:
        deadline = asyncio.get_running_loop().time() + LONG
        counts = [(await link.count("one", "read", DIGEST, None, deadline))[0].count]
        counts += [(await link.count("one", "read", DIGEST, None, deadline))[0].count]
        counts += [(await link.count("one", "read", DIGEST, None, deadline))[0].count]
        return [*counts, len(link.pool)]

    assert asyncio.run(run()) == [1, 2, 3, 1]


def test_a_command_past_its_deadline_does_not_answer_the_next_one(server: RedisServer) -> None:
    """Frozen server, a 0.05 s deadline and a 120 s store timeout: the count is answered
    ``TimeoutError``; after the thaw, the next count on the same connection gets its own
    reply (the late one dropped), and the late count was made by the server."""
    link = on_loop(f"{server.url}?socket_timeout=120", connections=1)

    async def run() -> list[Any]:
        loop = asyncio.get_running_loop()
        first = await link.count("a", "read", DIGEST, None, loop.time() + LONG)
        server.freeze()
        try:
            with pytest.raises(TimeoutError):
                await link.count("a", "read", DIGEST, None, loop.time() + 0.05)
        finally:
            server.thaw()
        other = await link.count("b", "read", DIGEST, "id-b", loop.time() + LONG)
        again = await link.count("a", "read", DIGEST, None, loop.time() + LONG)
        return [first, other, again, len(link.pool)]

    first, other, again, connections = asyncio.run(run())
    assert first[0].count == 1
    assert (other[0].count, other[0].call_id, other[1]) == (1, "id-b", False)
    assert again[0].count == 3  # the timed-out count was counted by the server
    assert connections == 1  # the deadline did not cost the connection
    assert link.store._breaker.failures == 0


def test_past_the_deadline_the_store_timeout_still_tells_the_breaker(server: RedisServer) -> None:
    """A 0.05 s deadline, the store's 0.2 s timeout, a frozen server: the count is
    answered ``TimeoutError`` at its deadline, and at the store's timeout its connection
    fails and the breaker hears it, as a worker thread's timed-out call tells it."""
    link = on_loop(server.url, connections=1)

    async def run() -> list[Any]:
        loop = asyncio.get_running_loop()
        await link.count("d", "read", DIGEST, None, loop.time() + LONG)
        server.freeze()
        try:
            with pytest.raises(TimeoutError):
                await link.count("d", "read", DIGEST, None, loop.time() + 0.05)
            after_deadline = link.store._breaker.failures
            guard = loop.time() + LONG
            while link.pool:  # until the store's timeout closes the connection
                assert loop.time() < guard, "the connection never timed out"
                await asyncio.sleep(0.01)
        finally:
            server.thaw()
        return [after_deadline, link.store._breaker.failures]

    assert asyncio.run(run()) == [0, 1]


def test_a_trial_past_its_deadline_lets_the_next_call_try(server: RedisServer) -> None:
    """Half-open: the one trial call misses its deadline (the server frozen); that must not
    wedge the breaker half-open: the next call, the server thawed, is the trial, counted."""
    clock = FakeClock()
    link = on_loop(f"{server.url}?socket_timeout=120", connections=1, clock=clock)
    breaker = link.store._breaker

    async def run() -> Any:
        loop = asyncio.get_running_loop()
        await link.count("h", "read", DIGEST, None, loop.time() + LONG)  # the script loaded
        for _ in range(breaker.threshold):
            breaker.failed()  # an outage the breaker saw: open
        clock.now += 1.0  # its cool-down is over: the next call is the trial
        server.freeze()
        try:
            with pytest.raises(TimeoutError):
                await link.count("h", "read", DIGEST, None, loop.time() + 0.05)
        finally:
            server.thaw()
        return await link.count("h", "read", DIGEST, None, loop.time() + LONG)

    assert asyncio.run(run())[0].count == 3  # the timed-out one was counted too
    assert breaker.failures == 0 and not breaker.trial


def test_the_store_timeout_fails_every_command_waiting_on_the_connection(
    server: RedisServer,
) -> None:
    link = on_loop(server.url, connections=1)  # the store's timeout: 0.2 s

    async def run() -> list[BaseException]:
        loop = asyncio.get_running_loop()
        await link.count("t", "read", DIGEST, None, loop.time() + LONG)
        server.freeze()
        try:
            waits = [link.count(f"t{n}", "read", DIGEST, None, loop.time() + LONG) for n in (1, 2)]
            return await asyncio.gather(*waits, return_exceptions=True)
        finally:
            server.thaw()

    failures = asyncio.run(run())
    assert [type(failure) for failure in failures] == [StoreUnavailable, StoreUnavailable]
    assert all("no answer within 0.2 s" in str(failure) for failure in failures)
    assert link.pool == [] and link.store._breaker.failures == 2


def test_it_logs_in_and_selects_the_database(server: RedisServer) -> None:
    assert server.command("CONFIG", "SET", "requirepass", PASSWORD) == "OK"
    host = f"127.0.0.1:{server.port}"
    link = on_loop(f"redis://:{PASSWORD}@{host}/3")
    wrong = on_loop(f"redis://:wrong-{PASSWORD}@{host}/3")

    async def run() -> Any:
        deadline = asyncio.get_running_loop().time() + LONG
        counted = await link.count("db", "read", DIGEST, "x", deadline)
        ended = await link.end("db", "x", deadline)
        with pytest.raises(StoreUnavailable) as refused:
            await wrong.count("db", "read", DIGEST, None, deadline)
        return counted, ended, str(refused.value)

    counted, ended, refused = asyncio.run(run())
    assert counted[0].count == 1 and ended is True
    assert refused == f"redis store redis://{host}/3: authentication failed"
    import redis

    client = redis.Redis.from_url(f"redis://:{PASSWORD}@{host}/3")
    assert client.exists(b"lb:v1:{db}") == 1
    client.close()


def test_a_user_named_in_the_url_logs_in_as_that_user(server: RedisServer) -> None:
    rule = ["ACL", "SETUSER", "looper", "on", f">{PASSWORD}", "~*", "+@all"]
    assert server.command(*rule) == "OK"
    link = on_loop(f"redis://looper:{PASSWORD}@127.0.0.1:{server.port}/0")

    async def run() -> Any:
        deadline = asyncio.get_running_loop().time() + LONG
        return await link.count("user", "read", DIGEST, None, deadline)

    assert asyncio.run(run())[0].count == 1


def test_the_urls_it_takes() -> None:
    port = free_port()
    taken = [f"redis://127.0.0.1:{port}/0", f"unix:///tmp/nowhere-{port}.sock"]
    assert all(RedisLoop.for_store(RedisStore(url), 4) is not None for url in taken)
    left = [  # TLS, options resp does not read, a cluster: the worker pool's
        f"rediss://127.0.0.1:{port}/0",
        f"redis://127.0.0.1:{port}/0?health_check_interval=5",
        f"redis+cluster://127.0.0.1:{port}",
    ]
    assert [RedisLoop.for_store(RedisStore(url), 4) for url in left] == [None, None, None]


def test_the_first_answer_reads_the_policy_the_start_could_not(server: RedisServer) -> None:
    """The gateway reads ``maxmemory-policy`` at start (``RedisStore.connect``); when the
    server was not up then, the first answer on the loop has it read (in the pool)."""
    port = server.port
    server.stop()
    said: list[str] = []
    store = RedisStore(f"redis://127.0.0.1:{port}/0", warn=said.append)
    brake = LoopBrake(3, store=store, warn=lambda line: None)
    calls = StoreCalls(brake, GatewayCounters())
    assert calls.on_loop is not None
    with pytest.raises(StoreUnavailable):
        store.connect()  # the start: nobody there (one failure: the breaker stays closed)
    assert not store.eviction_checked
    restarted = RedisServer(port).start()
    try:
        assert restarted.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru") == "OK"
        verdict = asyncio.run(calls.count("m", "read", DIGEST, None, brake))
        assert verdict.rule is None and verdict.count == 1
        calls.pool.shutdown(wait=True)  # the read in the pool is over
    finally:
        restarted.stop()
    assert len(said) == 1 and "maxmemory-policy is volatile-lru" in said[0]
    assert store.eviction_checked


def test_under_a_policy_the_count_is_the_policys_through_the_pool(
    redis_url: str, tmp_path: Path
) -> None:
    """The loop counts only without a policy (``redis_step.lua``, the seed's rule); a
    policy's count (``policy_step`` and a compare-and-set) goes through the worker pool:
    the verdicts are the memory brake's under the same policy, and its ends on the loop
    free the ids its counts wrote."""
    path = tmp_path / "policy.toml"
    path.write_text('[[tools]]\nmatch = "read"\nmax_repeats = 5\n', encoding="utf-8")
    policy = load_policy(str(path))
    brake = LoopBrake(3, policy=policy, store=RedisStore(redis_url))
    reference = LoopBrake(3, policy=policy)
    calls = StoreCalls(brake, GatewayCounters())
    assert calls.on_loop is not None
    digest = brake.digest("read", {"p": 1})

    async def run() -> list[Any]:
        verdicts = []
        for _ in range(6):
            verdicts.append(await calls.count("pol", "read", digest, "same", brake))
            told = asyncio.Event()
            calls.end("pol", "same", told.set, brake)
            await told.wait()
        return verdicts

    verdicts = asyncio.run(run())
    calls.close()
    expected = []
    for _ in range(6):
        expected.append(reference.observe("pol", "read", digest, "same"))
        reference.end_call("pol", "same")
    assert verdicts == expected
    assert [verdict.denied for verdict in verdicts] == [False] * 4 + [True] * 2


def _reads(client: Any) -> int:
    """The server's read events so far (``INFO stats``), this command's own included."""
    return int(client.info("stats")["total_reads_processed"])


def test_the_commands_of_one_turn_go_out_in_one_write(redis_url: str) -> None:
    """Four counts asked in one turn of the loop ride one connection's one write: the
    server reads once for them (and once for each INFO that asks it)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.ping()
    link = on_loop(redis_url, connections=4)

    async def run() -> list[Any]:
        deadline = asyncio.get_running_loop().time() + LONG
        await link.count("turn", "read", DIGEST, "c0", deadline)  # the connection opened
        before = _reads(client)
        answers = await asyncio.gather(
            *(link.count("turn", "read", DIGEST, f"c{n}", deadline) for n in range(1, 5))
        )
        after = _reads(client)
        return [[slot.count for slot, _ in answers], len(link.pool), after - before]

    try:
        assert asyncio.run(run()) == [[2, 3, 4, 5], 1, 2]
    finally:
        client.close()


def test_an_end_waits_for_the_next_count_and_goes_out_with_it(redis_url: str) -> None:
    """An end asked alone is held (here as long as the hang guard) until a count is
    asked on a later turn: the two go out in one write, each answered (the id freed, so
    the same id counts again as a new call, not a duplicate)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.ping()
    link = on_loop(redis_url, connections=4)
    link.end_hold = LONG

    async def run() -> list[Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LONG
        first = await link.count("held", "read", DIGEST, "c1", deadline)
        before = _reads(client)
        ending = loop.create_task(link.end("held", "c1", deadline))
        while not link.pool[0].unsent:  # the end asked
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # a turn later: still held, not written alone
        other = await link.count("held", "read", call_digest("read", {"p": 2}), "c2", deadline)
        ended = await ending
        after = _reads(client)
        again = await link.count("held", "read", DIGEST, "c1", deadline)
        return [first[1], ended, other[1], after - before, again[1], len(link.pool)]

    try:
        assert asyncio.run(run()) == [False, True, False, 2, False, 1]
    finally:
        client.close()
