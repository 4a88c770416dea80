"""The Redis store under a fleet and under faults, against a real redis-server.

Processes (tests/store_worker.py, and the real ``loop-brake hook``/``filter``)
count into one server started on a free loopback port (tests/redis_server.py):
no lost update, no two calls given one count, the store's order replayed
through the one-process rule gives the same verdicts; then the server is
absent, paused, has its scripts flushed, is killed with SIGKILL in a storm and
restarted; and no argument is found anywhere in it. The rule itself, call by
call, is tests/test_stores.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_env
from redis_loop_table import LoopTable
from redis_server import RedisServer, free_port

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.stores import StoreUnavailable
from loop_brake_cli.stores.redis_store import RedisStore

WORKER = str(Path(__file__).resolve().parent / "store_worker.py")
CANARY = "canary-7f3e-fleet-secret"
PASSWORD = "hunter2-fleet-password"
POLICY = """
[[tools]]
match = "grep"
max_repeats = 4
[cycles]
max_period = 3
max_repeats = 3
[stop]
after_denials = 4
"""


def _spawn_workers(sync: Path, args: list[str], processes: int) -> list[subprocess.Popen]:
    """``processes`` store workers (tests/store_worker.py URL MODE SYNC N WORKER ...),
    released together once every one is ready: they overlap however slowly each starts."""
    sync.mkdir()
    url, mode, *rest = args
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, url, mode, str(sync), rest[0], str(k), *rest[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(),
            cwd=ROOT,
        )
        for k in range(processes)
    ]
    while not all((sync / f"ready-{k}").exists() for k in range(processes)):
        for proc in procs:
            if proc.poll() is not None:  # died before it was ready: say why, not hang
                stop_all(procs)
                raise AssertionError(proc.stderr.read().decode())  # type: ignore[union-attr]
        time.sleep(0.005)
    (sync / "go").touch()
    return procs


def stop_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _workers(
    sync: Path, url: str, mode: str, n: int, processes: int, policy: str | None = None
) -> list:
    """Run ``processes`` store workers at once; every JSON line they printed."""
    extra = [policy] if policy else []
    url += "?socket_timeout=5&socket_connect_timeout=5"  # no spurious timeout on a loaded CI
    procs = _spawn_workers(sync, [url, mode, str(n), *extra], processes)
    records = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        assert b"Traceback" not in err
        records += [json.loads(line) for line in out.splitlines()]
    return records


@pytest.fixture
def policy_file(tmp_path: Path) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("with_policy", [False, True], ids=["seed-script", "policy-cas"])
def test_8_processes_x_250_identical_calls_lose_no_update(
    redis_url: str, policy_file: str, with_policy: bool, tmp_path: Path
) -> None:
    records = _workers(
        tmp_path / "sync", redis_url, "same", 250, 8, policy_file if with_policy else None
    )
    assert len(records) == 2000
    assert sorted(r["count"] for r in records) == list(range(1, 2001))
    assert sorted(r["version"] for r in records) == list(range(1, 2001))
    assert [r["count"] for r in records if not r["denied"]] in ([1, 2], [2, 1], [1], [2]) or (
        sorted(r["count"] for r in records if not r["denied"]) == [1, 2]
    )
    assert sum(not r["denied"] for r in records) == 2  # exactly maxRepeats - 1


@pytest.mark.parametrize("with_policy", [False, True], ids=["seed-script", "policy-cas"])
def test_6_processes_of_mixed_calls_replay_in_the_stores_order(
    redis_url: str, policy_file: str, with_policy: bool, tmp_path: Path
) -> None:
    """Sorted by the version each decision wrote, the calls of 6 processes replayed
    through the one-process rule (LoopBrake in memory) get every verdict again."""
    records = _workers(
        tmp_path / "sync", redis_url, "mixed", 150, 6, policy_file if with_policy else None
    )
    records.sort(key=lambda r: r["version"])
    assert [r["version"] for r in records] == list(range(1, 901))
    from loop_brake_cli.core.policy import load_policy

    brake = LoopBrake(3, policy=load_policy(policy_file) if with_policy else None)
    tools = ("read", "grep")
    args = ({"p": 1}, {"p": 2})
    for r in records:
        tool = tools[r["tool"]]
        verdict = brake.observe(r["session"], tool, call_digest(tool, args[r["arg"]]), r["callId"])
        assert (verdict.count, verdict.denied, verdict.rule) == (r["count"], r["denied"], r["rule"])
    assert Counter(r["denied"] for r in records)[True] > 0  # the draw did repeat calls


def test_64_sessions_x_8_processes(redis_url: str, tmp_path: Path) -> None:
    records = _workers(tmp_path / "sync", redis_url, "sessions:64", 200, 8)
    by_session: dict[str, list] = {}
    for r in records:
        by_session.setdefault(r["session"], []).append(r)
    assert len(by_session) == 64
    for rows in by_session.values():
        assert sorted(r["count"] for r in rows) == list(range(1, len(rows) + 1))
        assert sum(not r["denied"] for r in rows) == 2


def _claude(session: str, command: str, tool_use_id: str | None = None) -> bytes:
    payload = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if tool_use_id is not None:
        payload["tool_use_id"] = tool_use_id
    return json.dumps(payload).encode()


LOOP_BRAKE = str(Path(sys.executable).with_name("loop-brake"))  # the console script


def _hook(*args: str, input: bytes, timeout: float = 60) -> subprocess.CompletedProcess:
    """``loop-brake hook`` as an agent runs it (the console script: no click)."""
    return subprocess.run(
        [LOOP_BRAKE, "hook", *args],
        input=input,
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=timeout,
    )


def test_8_parallel_hooks_x_25_identical_calls_allow_exactly_2(redis_url: str) -> None:
    """The issue's first "Done when": 200 real hook processes, 8 at a time."""
    results: list[subprocess.CompletedProcess] = []
    lock = threading.Lock()
    url = redis_url + "?socket_timeout=5&socket_connect_timeout=5"  # no spurious timeout in CI

    def run() -> None:
        for _ in range(25):
            done = _hook("--store", url, input=_claude("fleet-1", "make test"))
            with lock:
                results.append(done)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 200
    assert all(r.returncode == 0 and r.stderr == b"" for r in results)
    denied = [r for r in results if b'"permissionDecision":"deny"' in r.stdout]
    assert len([r for r in results if r.stdout == b""]) == 2
    assert len(denied) == 198


def test_three_filter_processes_one_after_another_deny_the_third(redis_url: str) -> None:
    event = json.dumps({"tool": "search", "args": {"q": "x"}, "sessionId": "f1"}) + "\n"
    verdicts = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "filter", "--store", redis_url],
            input=event.encode(),
            capture_output=True,
            env=cli_env(),
            cwd=ROOT,
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == b""
        verdicts.append(json.loads(done.stdout))
    assert [(v["verdict"], v["count"]) for v in verdicts] == [("pass", 1), ("pass", 2), ("deny", 3)]
    assert "rule" not in verdicts[2]  # the seed's verdict line, byte for byte


def test_a_hook_with_the_server_stopped_allows_at_once_with_one_line() -> None:
    """The issue's third "Done when" (and credentials never printed)."""
    url = f"redis://admin:{PASSWORD}@127.0.0.1:{free_port()}/0?password={PASSWORD}"
    done = _hook("--store", url, input=_claude("s", "ls"))
    assert done.returncode == 0 and _allowed(done.stdout)
    assert PASSWORD.encode() not in done.stdout and b"admin" not in done.stdout
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "cannot connect" in lines[0] and "allowed" in lines[0]
    assert PASSWORD not in lines[0] and "admin" not in lines[0] and "Traceback" not in lines[0]
    closed = _hook("--store", url, "--fail-closed", input=_claude("s", "ls"))
    assert b'"permissionDecision":"deny"' in closed.stdout
    assert PASSWORD.encode() not in closed.stdout + closed.stderr


def test_a_wrong_password_is_one_line_without_it(redis_url: str) -> None:
    url = redis_url.replace("redis://", f"redis://admin:{PASSWORD}@")
    done = _hook("--store", url, input=_claude("s", "ls"))
    assert done.returncode == 0 and _allowed(done.stdout)
    assert len(done.stderr.splitlines()) == 1
    assert PASSWORD.encode() not in done.stderr + done.stdout and b"Traceback" not in done.stderr


def _allowed(stdout: bytes) -> bool:
    """A fail-open answer: nothing, or the session's one notice to the person
    (``systemMessage``, hook/notice.py), never a decision."""
    return stdout == b"" or (
        b'"systemMessage"' in stdout and b"Decision" not in stdout and b"decision" not in stdout
    )


def _scan_everything(server: RedisServer) -> bytes:
    """Every key and every value in the server, as one byte string."""
    import redis

    client = redis.Redis.from_url(server.url)
    dump = b""
    for key in client.scan_iter(count=1000):
        dump += key + b"\0"
        kind = client.type(key)
        assert kind == b"hash", (key, kind)
        for field, value in client.hgetall(key).items():
            dump += field + b"=" + value + b"\0"
    client.close()
    return dump


def test_no_argument_text_anywhere_in_redis(
    redis_server: RedisServer, redis_url: str, tmp_path: Path
) -> None:
    """The canary: hook, filter (with results under a progress policy) and LoopBrake,
    with and without a policy; every key and value in the server is scanned, and
    every output."""
    policy = tmp_path / "policy.toml"
    policy.write_text(
        "progress = true\n[cycles]\nmax_period = 2\nmax_repeats = 2\n[stop]\nafter_denials = 2\n"
    )
    outputs = b""
    for extra in ((), ("--policy", str(policy))):  # the hook: stores/resp.py's connection
        for _ in range(3):
            done = _hook("--store", redis_url, *extra, input=_claude("hook-s", f"echo {CANARY}"))
            outputs += done.stdout + done.stderr
    event = {"tool": "search", "args": {"q": CANARY}, "sessionId": "f", "callId": "c1"}
    result = {"type": "result", "sessionId": "f", "callId": "c1", "result": {"text": CANARY}}
    lines = (json.dumps(event) + "\n" + json.dumps(result) + "\n").encode() * 3
    for extra in ((), ("--policy", str(policy))):
        done = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "filter", "--store", redis_url, *extra],
            input=lines,
            capture_output=True,
            env=cli_env(),
            cwd=ROOT,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode()
        outputs += done.stdout + done.stderr
    from loop_brake_cli.core.policy import load_policy

    for chosen in (None, load_policy(str(policy))):
        brake = LoopBrake(3, store=redis_url, policy=chosen)
        for i in range(6):
            brake.check("fetch", {"url": CANARY, "i": i % 2}, session_id=f"lib-{chosen is None}")
            brake.observe_result(f"lib-{chosen is None}", None, {"page": CANARY})
    dump = _scan_everything(redis_server)
    assert dump.count(b"\0") > 20  # the runs above wrote
    assert b"p=" in dump.replace(b"\0p=", b"p=")  # a policy part was written
    assert CANARY.encode() not in dump
    assert CANARY.encode() not in outputs


def test_idle_sessions_expire(redis_server: RedisServer, redis_url: str) -> None:
    """The expiry is read back under a long TTL (a short one may pass on a loaded
    machine before it is read), then a short one is waited out."""
    digest = call_digest("read", {})
    patient = RedisStore(redis_url, idle_ttl=3600)
    assert patient.count_call("ttl", "read", digest, None, 3)[0].count == 1
    ttl = int(redis_server.command("PTTL", "lb:v1:{ttl}"))
    assert 3_500_000 < ttl <= 3_600_000
    patient.close()
    store = RedisStore(redis_url, idle_ttl=0.5)
    assert store.count_call("ttl", "read", digest, None, 3)[0].count >= 1
    # the server expires the key: waited for, not slept on. It expires it when EXISTS
    # reads it past its TTL (0.5 s), whatever the load: 30 s only turns a key without
    # an expiry into a failure
    _wait_for(lambda: redis_server.command("EXISTS", "lb:v1:{ttl}") == "0", "never expired", 30)
    assert store.count_call("ttl", "read", digest, None, 3)[0].count == 1
    store.close()


def test_a_policy_session_expires_too(
    redis_server: RedisServer, redis_url: str, tmp_path: Path
) -> None:
    """Issue 42: under a policy the write is ``redis_cas.lua``: every counted call sets
    the idle expiry, a result and an end keep it (never a key without one), and an
    idle policy session is gone: its next call is count 1 again. The expiry is read
    back under a long TTL (no race with it), then a short one is waited out."""
    path = tmp_path / "policy.toml"
    path.write_text("progress = true\n[stop]\nafter_denials = 2\n", encoding="utf-8")
    policy = load_policy(str(path))
    key = "lb:v1:{pttl}"
    digest, result = call_digest("read", {}), call_digest("result", {"r": 1})

    def expiry() -> None:
        left = int(redis_server.command("PTTL", key))
        assert 0 < left <= 600_000, left  # -1 would be a key that never expires

    store = RedisStore(redis_url, idle_ttl=600)
    try:
        for call_id in ("c1", "c2"):
            store.count_call("pttl", "read", digest, call_id, 3, policy)
            expiry()
        assert store.observe_result("pttl", "c2", result, policy)
        expiry()
        store.count_call("pttl", "read", digest, "c3", 3, policy)
        assert store.end_call("pttl", "c3")
        expiry()
    finally:
        store.close()
    idle = RedisStore(redis_url, idle_ttl=0.2)
    try:
        assert idle.count_call("pttl", "read", digest, "c4", 3, policy)[0].slot.count == 4
        _wait_for(lambda: redis_server.command("EXISTS", key) == "0", f"{key} never expired", 30)
        assert idle.count_call("pttl", "read", digest, "c5", 3, policy)[0].slot.count == 1
    finally:
        idle.close()


@pytest.fixture
def private_server():
    """A server of the test's own, to pause, flush or kill."""
    server = RedisServer().start()
    yield server
    server.stop()


# the store through redis-py, as the hook opens it (stores/resp.py's connection), and as
# mcp-gateway asks it (its count and end on the event loop: stores/redis_loop.py)
CLIENTS = pytest.mark.parametrize("client", ["redis-py", "resp", "loop"])


def _open(url: str, client: str, **options: Any) -> Any:
    """The store at ``url`` as ``client`` asks it."""
    store = RedisStore(url, short_lived=client == "resp", **options)
    return LoopTable(store) if client == "loop" else store


@CLIENTS
def test_a_frozen_server_times_out_and_the_call_still_gets_a_verdict(
    private_server: RedisServer, client: str
) -> None:
    """The server stops answering (frozen by SIGSTOP: it accepts, never replies) for as
    long as the test wants, then answers again (SIGCONT): no pause that must outlast
    the calls made during it."""
    warned: list[str] = []
    store = _open(private_server.url, client)
    brake = LoopBrake(3, store=store, warn=warned.append)
    assert brake.check("read", {"p": 1}, session_id="p").count == 1
    private_server.freeze()
    try:
        with pytest.raises(StoreUnavailable, match="no answer within 0.2 s"):
            brake.store.count_call("p", "read", call_digest("read", {"p": 1}), None, 3)
        paused = brake.check("read", {"p": 1}, session_id="p")
    finally:
        private_server.thaw()
    assert (paused.denied, paused.count, paused.rule) == (False, 0, "store")
    assert len(warned) == 1 and "allowed (fail-open)" in warned[0]
    again = brake.check("read", {"p": 1}, session_id="p")
    assert again.count >= 2 and again.rule is None  # a timed-out call may have counted
    assert len(warned) == 2 and "answers again" in warned[1]


@CLIENTS
def test_script_flush_is_transparent(private_server: RedisServer, client: str) -> None:
    store = _open(private_server.url, client)
    digest = call_digest("read", {})
    assert store.count_call("f", "read", digest, "c1", 3)[0].count == 1
    assert private_server.command("SCRIPT", "FLUSH") == "OK"
    assert store.count_call("f", "read", digest, "c2", 3)[0].count == 2
    assert store.count_call("f", "read", digest, "c2", 3)[1]  # the id rule survives
    assert store.count_call("f", "read", digest, "c3", 3)[0].count >= 3
    store.close()


def test_kill_9_during_a_storm_then_restart(private_server: RedisServer, tmp_path: Path) -> None:
    """Four processes count identical calls; the server is killed with SIGKILL and
    restarted (empty: no persistence). The workers never crash, every failure is one
    line, and on the new server the streak starts again at 1: the calls made after
    the restart got distinct counts, all within the new server's final count."""
    stop = tmp_path / "stop"
    sync = tmp_path / "sync"
    url = private_server.url + "?socket_timeout=2&socket_connect_timeout=2"  # a loaded CI
    procs = _spawn_workers(sync, [url, "storm", str(stop)], 4)
    try:
        _wait_for_count(private_server, 100)
        private_server.kill()
        _wait_for(lambda: any(sync.glob("failed-*")), "no worker saw the server gone")
        private_server.start()
        Path(str(stop) + ".restarted").touch()
        _wait_for_count(private_server, 100)
    finally:
        stop.touch()
    after: list[int] = []
    before = errors = 0
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and err == b"", err.decode()
        for line in out.splitlines():
            record = json.loads(line)
            if "error" in record:
                errors += 1
                assert record["error"].startswith(
                    f"redis store redis://127.0.0.1:{private_server.port}/0: "
                )
            elif record["restarted"]:
                after.append(record["count"])
            else:
                before += 1
    final = int(private_server.command("HGET", "lb:v1:{s}", "c"))
    assert errors > 0 and before >= 100
    assert after and len(after) == len(set(after))
    assert set(after) <= set(range(1, final + 1)) and final < before + len(after)


def _wait_for(condition, failure: str, within: float = 300) -> None:
    """Until ``condition()`` holds; ``within`` only turns a hang into a failure."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.02)


def _wait_for_count(server: RedisServer, count: int) -> None:
    """Until the storm's streak reaches ``count``."""

    def reached() -> bool:
        try:
            found = server.command("HGET", "lb:v1:{s}", "c")
        except OSError:
            found = ""
        return found.isdigit() and int(found) >= count

    _wait_for(reached, f"the storm did not reach count {count}")


class FakeClock:
    """A monotonic clock the test moves by hand: the breaker's cool-down passes when
    the test says so, not after a sleep that must outlast starting a server."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@CLIENTS
def test_the_circuit_breaker_stops_asking_a_dead_server(client: str) -> None:
    """Three unreachable answers open it: the server, back, is not asked until the
    cool-down ends; a failed try doubles it; an answer resets it, so the next outage
    opens it again after three failures, for the first cool-down (issue 42)."""
    port = free_port()
    clock = FakeClock()
    url = f"redis://127.0.0.1:{port}/0"
    store = _open(url, client, breaker_cooldown=1.0, breaker_max_cooldown=30.0, clock=clock)
    digest = call_digest("read", {})

    def fails(match: str) -> None:
        with pytest.raises(StoreUnavailable, match=match):
            store.count_call("b", "read", digest, None, 3)

    for _ in range(3):
        fails("cannot connect")
    fails("circuit open after 3 failures in a row; next try in 1.0 s")
    clock.now += 1.0
    fails("cannot connect")  # the one try after the cool-down: open twice as long
    clock.now += 1.0
    fails("circuit open after 4 failures in a row; next try in 1.0 s")
    server = RedisServer(port).start()
    try:
        fails("circuit open")  # the server answers now, but the open circuit does not ask
        assert server.command("DBSIZE") == "0"
        clock.now += 1.0  # the cool-down is over: one call may try, and it gets through
        assert store.count_call("b", "read", digest, None, 3)[0].count == 1
        server.stop()
        store.close()
        for _ in range(3):  # an answer reset the count: three failures again
            fails("cannot connect")
        # and the cool-down is the first one again
        fails("circuit open after 3 failures in a row; next try in 1.0 s")
    finally:
        store.close()
        server.stop()


def test_the_cool_down_doubles_up_to_its_cap() -> None:
    from loop_brake_cli.stores.redis_store import _Breaker

    clock = FakeClock()
    breaker = _Breaker(3, 1.0, 30.0, clock=clock)
    waits = []
    for _ in range(9):
        breaker.failed()
        waits.append(round(breaker.open_until - clock.now, 3) if breaker.failures >= 3 else 0)
    assert waits == [0, 0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    breaker.succeeded()
    breaker.check("x")  # closed
    breaker.failed()
    breaker.failed()
    breaker.check("x")  # two failures: still closed
    breaker.failed()
    assert breaker.open_until - clock.now == 1.0
    with pytest.raises(StoreUnavailable, match="next try in 1.0 s"):
        breaker.check("x")
    clock.now += 1.0
    breaker.check("x")  # the cool-down is over: one may try


@CLIENTS
def test_a_unix_socket_url(tmp_path: Path, client: str) -> None:
    """``unix://`` reaches a server on its socket (TCP off: ``--port 0``)."""
    from redis_server import require_redis_server

    sock = tmp_path / "redis.sock"
    proc = subprocess.Popen(
        [require_redis_server(), "--port", "0", "--unixsocket", str(sock)]
        + ["--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for(lambda: _answers_on(sock), "redis-server answers no PING on its socket", 60)
        store = _open(f"unix://{sock}?db=0", client)
        digest = call_digest("read", {})
        assert [store.count_call("u", "read", digest, None, 3)[0].count for _ in range(3)] == [
            1,
            2,
            3,
        ]
        assert store.label == f"unix://{sock}"
        store.close()
    finally:
        proc.terminate()
        proc.wait(10)


def _answers_on(path: Path) -> bool:
    """Whether a server answers PING on a Unix socket: the file exists before the server
    listens on it (bind, then listen), so its existence is not enough."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(path))
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def test_an_end_makes_a_decision_read_before_it_try_again(redis_url: str, tmp_path: Path) -> None:
    """``redis_end.lua`` bumps the hash's version: a policy decision that read the hash
    before the end (its compare-and-set names the old version) writes nothing and is
    made again on the current hash, so it cannot write the ended call's id back."""
    path = tmp_path / "policy.toml"
    path.write_text("[stop]\nafter_denials = 2\n", encoding="utf-8")
    policy = load_policy(str(path))
    store = RedisStore(redis_url)
    key = "lb:v1:{e}"
    try:
        digest = call_digest("read", {})
        store.count_call("e", "read", digest, "c1", 3, policy)
        client = store._connect()
        before = client.hgetall(key)  # what a concurrent decision read
        assert store.end_call("e", "c1")
        stale = [field for pair in before.items() if pair[0] != b"v" for field in pair]
        written, current = store._cas(keys=[key], args=[int(before[b"v"]), "", *stale])
        assert written == 0 and b"i" not in current[0::2]  # the current hash: no id
        assert store.count_call("e", "read", digest, "c1", 3, policy)[0].slot.count == 2
    finally:
        store.close()


@CLIENTS
def test_denials_resume_within_1_s_of_the_servers_return(client: str) -> None:
    """Issue 37 item 3, on a clock the test moves: a looping session's server dies and
    stays dead for 100 (clock) seconds, long enough for any back-off to grow; it comes
    back; the calls made after that are counted again, and the loop denied, within
    1 s of its return, however long the outage was (the breaker's half-open trial).
    The end of the outage is said once: its length and the calls it left uncounted."""
    port, clock, warned = free_port(), FakeClock(), []
    server = RedisServer(port).start()
    store = _open(f"redis://127.0.0.1:{port}/0", client, clock=clock)
    brake = LoopBrake(3, store=store, warn=warned.append)
    try:
        assert [brake.check("read", {"p": 1}, session_id="loop").count for _ in range(3)] == [
            1,
            2,
            3,
        ]
        server.kill()
        uncounted, began = 0, clock.now + 1.0  # the first call that finds it dead
        for _ in range(100):  # each call a trial that finds the server dead
            clock.now += 1.0
            verdict = brake.check("read", {"p": 1}, session_id="loop")
            assert (verdict.rule, verdict.denied, verdict.count) == ("store", False, 0)
            uncounted += 1
        server.start()  # back (it answers PING), on the clock of the last failed trial
        back = clock.now
        counted: list[tuple[float, int, bool]] = []
        while not any(denied for _, _, denied in counted):
            clock.now += 0.01
            assert clock.now - back <= 1.0, f"not denied within 1 s of the return: {counted}"
            verdict = brake.check("read", {"p": 1}, session_id="loop")
            if verdict.rule == "store":
                uncounted += 1
            else:
                counted.append((clock.now, verdict.count, verdict.denied))
        assert [count for _, count, _ in counted] == [1, 2, 3]  # restarted empty
        assert brake.store_failures == uncounted
        assert len(warned) == 2 and "allowed (fail-open)" in warned[0]
        assert warned[1] == (
            f"store redis://127.0.0.1:{port}/0 answers again after "
            f"{counted[0][0] - began:.1f} s: {uncounted} calls were allowed "
            "(fail-open) and not counted meanwhile"
        )
    finally:
        store.close()
        server.stop()


def test_the_breaker_lets_one_trial_ask_at_a_time_and_its_cool_down_stays_short() -> None:
    """Half-open: after the cool-down exactly one caller asks (the trial) while the
    others still fail at once; the cool-down doubles from 0.1 s and stops at 0.5 s, so
    a dead server is asked twice a second at most and a returned one within 0.5 s."""
    from loop_brake_cli.stores.redis_store import _Breaker

    clock = FakeClock()
    breaker = _Breaker(3, 0.1, 0.5, clock=clock)
    waits = []
    for _ in range(8):
        assert breaker.check("x") is (breaker.failures >= 3)
        breaker.failed()
        waits.append(round(breaker.open_until - clock.now, 3) if breaker.failures >= 3 else 0)
        clock.now = max(clock.now, breaker.open_until)
    assert waits == [0, 0, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5]
    assert breaker.check("x") is True  # the trial
    with pytest.raises(StoreUnavailable, match="a trial call is asking it"):
        breaker.check("x")
    breaker.release()  # the trial ended in neither an answer nor a failure
    assert breaker.check("x") is True
    breaker.succeeded()
    assert breaker.check("x") is False  # closed: every call asks
    for _ in range(3):
        breaker.failed()
    with pytest.raises(StoreUnavailable, match="next try in 0.1 s"):
        breaker.check("x")
