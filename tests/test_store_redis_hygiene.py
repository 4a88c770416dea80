"""The Redis store's hygiene (issue 37 item 4), against a real redis-server.

A server whose ``maxmemory-policy`` evicts streaks is said once by a long-lived
store (the library, ``filter``), never by the hook; a session key that holds no
streak (another type, a hash with an impossible slot) is counted as a fresh streak
and overwritten, said once, through redis-py and through the hook's own
connection (``stores/resp.py``), with and without a policy: never a session that
fails open on every call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env
from redis_server import RedisServer

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.stores import open_store

CANARY = "canary-hygiene-5d1e-secret"
ARGS = {"path": CANARY}
LOOP_BRAKE = str(Path(sys.executable).with_name("loop-brake"))
CLIENTS = pytest.mark.parametrize("short_lived", [False, True], ids=["redis-py", "resp"])
POLICY = "[[tools]]\nmatch = 'grep'\nmax_repeats = 4\n[cycles]\nmax_period = 2\nmax_repeats = 3\n"


@pytest.fixture
def private_server():
    """A server of the test's own, whose configuration the test changes."""
    server = RedisServer().start()
    yield server
    server.stop()


def _client(url: str):
    import redis

    return redis.Redis.from_url(url)


# -- maxmemory-policy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("volatile-lru", "evicts exactly the streaks (the keys with a TTL)"),
        ("allkeys-lfu", "evicts any key, streaks among them"),
        ("noeviction", None),
    ],
)
def test_a_policy_that_evicts_streaks_is_said_once(
    private_server: RedisServer, policy: str, words: str | None
) -> None:
    assert private_server.command("CONFIG", "SET", "maxmemory-policy", policy) == "OK"
    warned: list[str] = []
    brake = LoopBrake(3, store=private_server.url, warn=warned.append)
    verdicts = [brake.check("read", ARGS, session_id="loop") for _ in range(4)]
    assert [(v.count, v.denied, v.rule) for v in verdicts] == [
        (1, False, None),
        (2, False, None),
        (3, True, None),
        (4, True, None),
    ]
    if words is None:
        assert warned == []
    else:
        assert warned == [
            f"redis store {private_server.url}: maxmemory-policy is {policy}: once memory "
            f"is full Redis {words}, and a session evicted starts over, its repeated call "
            "not denied; set maxmemory-policy noeviction (docs/scaling.md)"
        ]
    brake.store.close()


def test_filter_says_it_once_on_stderr_and_its_verdicts_do_not_change(
    private_server: RedisServer,
) -> None:
    event = json.dumps({"tool": "search", "args": ARGS, "sessionId": "f"}) + "\n"
    outputs = {}
    for policy in ("noeviction", "volatile-lru"):
        private_server.command("FLUSHALL")
        private_server.command("CONFIG", "SET", "maxmemory-policy", policy)
        outputs[policy] = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "filter", "--store", private_server.url],
            input=(event * 4).encode(),
            capture_output=True,
            env=cli_env(),
            cwd=ROOT,
            timeout=120,
        )
    quiet, loud = outputs["noeviction"], outputs["volatile-lru"]
    assert quiet.returncode == loud.returncode == 0
    assert quiet.stdout == loud.stdout and quiet.stderr == b""
    assert b'"verdict":"deny"' in loud.stdout
    lines = loud.stderr.decode().splitlines()
    assert len(lines) == 1 and "maxmemory-policy is volatile-lru" in lines[0], lines
    assert CANARY not in loud.stderr.decode() + loud.stdout.decode()


@pytest.mark.parametrize("policy", ["volatile-lru", "noeviction"])
def test_the_gateway_says_it_at_start_once(
    private_server: RedisServer, policy: str, tmp_path: Path
) -> None:
    """``mcp-gateway --store`` reads the policy before it listens, not at the first
    call (issue 37 item 4); a call after it says nothing more."""
    import httpx2
    from remote_helpers import free_port, gateway

    private_server.command("CONFIG", "SET", "maxmemory-policy", policy)
    nowhere = f"http://127.0.0.1:{free_port()}/mcp"  # no upstream: the call's answer is 502
    meta = {"loop-brake/session": "at-start"}
    params = {"name": "read", "arguments": ARGS, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    head = {"content-type": "application/json", "accept": "application/json"}
    with gateway(tmp_path, nowhere, "--store", private_server.url) as (url, log, stderr):
        refused = httpx2.post(url, content=b"not json", headers=head, timeout=60)
        assert refused.status_code == 400  # served: the start is over, no call decided
        assert json.loads(log.read_text())["verdict"] == "error"
        assert httpx2.post(url, content=body, headers=head, timeout=60).status_code == 502
    lines = stderr.read_text().splitlines()
    warned = [n for n, line in enumerate(lines) if "maxmemory-policy" in line]
    listening = [n for n, line in enumerate(lines) if "listening on" in line]
    if policy == "noeviction":
        assert warned == []
    else:
        assert len(warned) == 1 and warned[0] < listening[0], lines
        assert lines[warned[0]] == (
            f"loop-brake mcp-gateway: redis store {private_server.url}: maxmemory-policy is "
            "volatile-lru: once memory is full Redis evicts exactly the streaks (the keys "
            "with a TTL), and a session evicted starts over, its repeated call not denied; "
            "set maxmemory-policy noeviction (docs/scaling.md)"
        )
    assert [json.loads(line)["verdict"] for line in log.read_text().splitlines()[1:]] == ["pass"]
    assert CANARY not in stderr.read_text() + log.read_text()


def test_the_hook_leaves_the_policy_to_doctor(private_server: RedisServer) -> None:
    """One decision a process: no extra round trip, no line on every tool call."""
    private_server.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
    done = _hook(private_server.url, "s")
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""


def test_a_server_that_will_not_say_is_not_asked_again(private_server: RedisServer) -> None:
    """A user refused INFO and CONFIG (as a managed service may be): nothing said,
    every call counted."""
    assert (
        private_server.command(
            "ACL", "SETUSER", "brake", "on", ">brake-pass-1", "~*", "+@all", "-info", "-config"
        )
        == "OK"
    )
    private_server.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
    url = private_server.url.replace("redis://", "redis://brake:brake-pass-1@")
    warned: list[str] = []
    brake = LoopBrake(3, store=url, warn=warned.append)
    assert [brake.check("read", ARGS, session_id="s").count for _ in range(3)] == [1, 2, 3]
    assert warned == [] and brake.store_failures == 0
    brake.store.close()


# -- keys that hold no streak -------------------------------------------------------


def _garbage(url: str, kind: str, digest: bytes) -> None:
    key = b"lb:v1:{g}"
    client = _client(url)
    if kind == "string":
        client.set(key, b"not a streak")
    elif kind == "list":
        client.rpush(key, b"a", b"b")
    elif kind == "foreign-hash":
        client.hset(key, mapping={b"x": b"y"})
    elif kind == "count-below-1":  # the call's own digest: only the count is impossible
        client.hset(key, mapping={b"d": digest, b"c": b"-5", b"t": b"read", b"u": b"1.0"})
    elif kind == "garbage-fields":
        client.hset(key, mapping={b"d": b"short", b"c": b"abc", b"t": b"\xff", b"v": b"1.5"})
    client.close()


WHAT = {
    "string": "a string, not a hash",
    "list": "a list, not a hash",
    "foreign-hash": "a hash that is not a streak",
    "count-below-1": "a hash that is not a streak",
    "garbage-fields": "a hash that is not a streak",
}


@CLIENTS
@pytest.mark.parametrize("with_policy", [False, True], ids=["seed-script", "policy-cas"])
@pytest.mark.parametrize("kind", list(WHAT))
def test_a_key_that_holds_no_streak_heals_on_the_next_call(
    redis_url: str, tmp_path: Path, kind: str, with_policy: bool, short_lived: bool
) -> None:
    """The acceptance's "a garbage value at a key heals on the next call": counted
    from 1, overwritten with the brake's hash, denied at the limit, said once."""
    digest = call_digest("read", ARGS)
    _garbage(redis_url, kind, digest)
    policy = None
    if with_policy:
        policy = tmp_path / "policy.toml"
        policy.write_text(POLICY, encoding="utf-8")
    warned: list[str] = []
    store = open_store(redis_url, warn=warned.append, short_lived=short_lived)
    brake = LoopBrake(3, store=store, policy=policy, warn=warned.append)
    verdicts = [brake.check("read", ARGS, session_id="g") for _ in range(3)]
    rule = "streak" if with_policy else None  # a policy's verdicts name their rule
    assert [(v.count, v.denied, v.rule) for v in verdicts] == [
        (1, False, rule),
        (2, False, rule),
        (3, True, rule),
    ]
    assert brake.store_failures == 0 and store.healed == 1
    assert warned == [
        f"redis store {redis_url}: a session's key held {WHAT[kind]}; it was counted as a "
        "fresh streak and overwritten (said once; later ones are healed the same way)"
    ]
    client = _client(redis_url)
    assert client.type(b"lb:v1:{g}") == b"hash"
    assert client.hget(b"lb:v1:{g}", b"c") == b"3" and client.pttl(b"lb:v1:{g}") > 0
    # a second key gone bad heals the same way, counted, not said again
    client.set(b"lb:v1:{h}", b"garbage")
    client.close()
    assert brake.check("read", ARGS, session_id="h").count == 1
    assert store.healed == 2 and len(warned) == 1
    assert CANARY not in "".join(warned)
    store.close()


@CLIENTS
def test_a_result_and_a_calls_end_on_a_key_of_another_type_are_no_failure(
    redis_url: str, tmp_path: Path, short_lived: bool
) -> None:
    """Neither pairs nor fails (the next counted call heals the key)."""
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n", encoding="utf-8")
    client = _client(redis_url)
    client.set(b"lb:v1:{r}", b"garbage")
    warned: list[str] = []
    store = open_store(redis_url, warn=warned.append, short_lived=short_lived)
    brake = LoopBrake(3, store=store, policy=policy, warn=warned.append)
    assert brake.observe_result("r", "c1", {"page": CANARY}) is False
    assert brake.end_call("r", "c1") is False
    assert brake.store_failures == 0 and warned == [] and brake.failure is None
    assert brake.check("read", ARGS, session_id="r", call_id="c2").count == 1
    assert store.healed == 1 and client.type(b"lb:v1:{r}") == b"hash"
    client.close()
    store.close()


def test_a_garbage_version_keeps_the_streak(redis_url: str, tmp_path: Path) -> None:
    """A readable slot with an unreadable version: the streak goes on (the version is
    compared as the bytes read, so the compare-and-set is no endless conflict)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    digest = call_digest("read", ARGS)
    for with_policy, session in ((False, "a"), (True, "b")):
        brake = LoopBrake(3, store=redis_url, policy=policy if with_policy else None)
        assert brake.check("read", ARGS, session_id=session).count == 1
        client = _client(redis_url)
        client.hset(f"lb:v1:{{{session}}}".encode(), b"v", b"1.5")
        client.close()
        again = brake.check("read", ARGS, session_id=session)
        assert (again.count, again.rule) == (2, "streak" if with_policy else None)
        assert brake.store.healed == 0 and brake.store_failures == 0
        assert brake.store.count_call(session, "read", digest, None, 3)[0].count == 3
        brake.store.close()


def _hook(url: str, session: str) -> subprocess.CompletedProcess:
    payload = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {CANARY}"},
    }
    return subprocess.run(
        [LOOP_BRAKE, "hook", "--store", url],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=120,
    )


def test_the_hook_heals_a_key_and_says_so_on_stderr(redis_url: str) -> None:
    client = _client(redis_url)
    client.rpush(b"lb:v1:{hk}", b"x")
    done = _hook(redis_url, "hk")
    assert done.returncode == 0 and done.stdout == b""  # allowed: count 1, not fail-open
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "a session's key held a list, not a hash" in lines[0], lines
    assert client.type(b"lb:v1:{hk}") == b"hash" and client.hget(b"lb:v1:{hk}", b"c") == b"1"
    again = _hook(redis_url, "hk")
    assert again.stderr == b"" and client.hget(b"lb:v1:{hk}", b"c") == b"2"
    assert CANARY.encode() not in done.stderr + again.stderr
    client.close()
