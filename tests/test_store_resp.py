"""The hook's Redis connection (``stores/resp.py``) reads URLs and logs in as redis-py does.

``RedisStore(short_lived=True)`` (the hook) counts through ``resp.RespConnection``
instead of redis-py wherever that reads every part of the URL as redis-py's
``parse_url`` does; its decisions are the shared store suite's
(tests/test_stores.py, the ``redis-resp`` tables) and its failures the fault
tests' (tests/test_store_redis.py, ``resp``). Here: the URL, checked against
redis-py's own parser; logging in with a password and an ACL user, a wrong one, a
database other than 0, a connection the server closed; and a real hook on a Redis
store that never imports redis-py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env
from redis_server import RedisServer

from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.stores import StoreUnavailable, open_store, resp

pytestmark = pytest.mark.skipif(not resp.available(), reason="hiredis is not installed")

URLS = [
    "redis://localhost",
    "redis://127.0.0.1:6380/2",
    "redis://h:7000/",
    "redis://h/15?socket_timeout=1.5",
    "redis://h/3?db=5",
    "redis://h?db=4&socket_connect_timeout=0.5",
    "redis://user:p%40ss@h:1/0",
    "redis://:only-password@h",
    "redis://u@h",
    "redis://h?password=q&username=v",
    "redis://a:b@h?password=q&username=v",
    "REDIS://H:1/1",
    "redis://[::1]:6379/1",
    "redis://h/not-a-db",
    "redis://h%41x/0",
    "unix:///tmp/redis.sock",
    "unix:///tmp/redis.sock?db=3&password=x",
    "unix://u:p@/tmp/r%20s.sock",
]
DECLINED = [
    "rediss://h:6380/0",  # TLS: redis-py
    "redis://h/0?protocol=3",
    "redis://h/0?client_name=x",
    "redis://h/0?health_check_interval=2",
    "redis://h:notaport/0",
    "redis://h/0?db=x",
    "redis://h/0?socket_timeout=soon",
    "unix://",
    "valkey://h",
]


@pytest.mark.parametrize("url", URLS)
def test_a_url_is_read_as_redis_py_reads_it(url: str) -> None:
    from redis.connection import parse_url

    where = resp.target(url, 0.2)
    assert where is not None
    theirs = parse_url(url)
    if url.lower().startswith("unix"):
        assert where.unix and where.address == theirs["path"]
    else:
        assert (where.unix, where.address) == (
            False,
            (theirs.get("host", "localhost"), theirs.get("port", 6379)),
        )
    assert where.db == theirs.get("db", 0)
    assert where.username == theirs.get("username")
    assert where.password == theirs.get("password")
    assert where.timeout == theirs.get("socket_timeout", 0.2)
    assert where.connect_timeout == theirs.get("socket_connect_timeout", 0.2)


@pytest.mark.parametrize("url", DECLINED)
def test_a_url_with_anything_else_is_left_to_redis_py(url: str) -> None:
    assert resp.target(url, 0.2) is None


@pytest.fixture
def locked_server():
    """A server of the test's own, with a password and an ACL user."""
    server = RedisServer().start()
    assert server.command("ACL", "SETUSER", "fleet", "on", ">fleet-pw", "~*", "+@all") == "OK"
    assert server.command("CONFIG", "SET", "requirepass", "default-pw") == "OK"
    yield server
    server.stop()


def _counts(url: str, n: int = 3) -> list[int]:
    store = open_store(url, short_lived=True)
    try:
        digest = call_digest("read", {})
        counts = [store.count_call("s", "read", digest, None, 3)[0].count for _ in range(n)]
        assert store._client.__class__ is resp.RespConnection
        return counts
    finally:
        store.close()


def test_a_password_and_an_acl_user_log_in(locked_server: RedisServer) -> None:
    port = locked_server.port
    assert _counts(f"redis://:default-pw@127.0.0.1:{port}/0") == [1, 2, 3]
    assert _counts(f"redis://fleet:fleet-pw@127.0.0.1:{port}/0", 1) == [4]
    assert _counts(f"redis://127.0.0.1:{port}/0?username=fleet&password=fleet-pw", 1) == [5]


@pytest.mark.parametrize(
    "login", ["", ":wrong-pw@", "fleet:wrong-pw@", "nobody:default-pw@"], ids=repr
)
def test_a_wrong_login_is_unavailable_and_names_no_password(
    locked_server: RedisServer, login: str
) -> None:
    url = f"redis://{login}127.0.0.1:{locked_server.port}/0"
    for short_lived in (True, False):  # the same words from both clients
        store = open_store(url, short_lived=short_lived)
        with pytest.raises(StoreUnavailable) as caught:
            store.count_call("s", "read", call_digest("read", {}), None, 3)
        store.close()
        message = str(caught.value)
        assert message == f"redis store redis://127.0.0.1:{locked_server.port}/0: " + (
            "authentication failed"
        )


def test_the_database_in_the_url_is_the_one_written(redis_server: RedisServer) -> None:
    redis_server.command("FLUSHALL")
    assert _counts(redis_server.url.rsplit("/", 1)[0] + "/3", 2) == [1, 2]
    assert redis_server.command("HGET", "lb:v1:{s}", "c") == ""  # not in db 0
    import redis

    client = redis.Redis.from_url(redis_server.url.rsplit("/", 1)[0] + "/3")
    assert client.hget(b"lb:v1:{s}", b"c") == b"2"
    client.close()


@pytest.mark.parametrize("short_lived", [False, True], ids=["redis-py", "resp"])
def test_a_connection_the_server_closed_is_opened_again(
    redis_server: RedisServer, short_lived: bool
) -> None:
    """The server drops every client: at most the next call fails (unavailable, said
    as redis-py's failure is), and the one after counts on a new connection."""
    redis_server.command("FLUSHALL")
    store = open_store(redis_server.url, short_lived=short_lived)
    digest = call_digest("read", {})
    assert store.count_call("k", "read", digest, None, 3)[0].count == 1
    redis_server.command("CLIENT", "KILL", "TYPE", "normal")
    try:
        after = store.count_call("k", "read", digest, None, 3)[0].count
    except StoreUnavailable as exc:
        assert str(exc).startswith(f"redis store {redis_server.url}: cannot connect (")
        after = store.count_call("k", "read", digest, None, 3)[0].count
    assert after == 2
    store.close()


def test_a_hook_on_a_redis_store_never_imports_redis_py(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The hook (one decision, then exit) counts through resp.py: redis-py, a quarter of
    a CPU second to import, is not loaded, and the third identical call is denied."""
    redis_server.command("FLUSHALL")
    out = tmp_path / "modules.txt"
    probe = (
        "import os, sys\n"
        f"out = {str(out)!r}\n"
        "exit_now = os._exit\n"
        "def recorded(status):\n"
        "    open(out, 'a').write(' '.join(sorted(sys.modules)) + '\\n')\n"
        "    exit_now(status)\n"
        "os._exit = recorded\n"
        "sys.argv = ['loop-brake', *sys.argv[1:]]\n"
        "from loop_brake_cli.entry import main\n"
        "main()\n"
    )
    answers = []
    for i in range(3):
        call = {
            "session_id": "s",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": f"t{i}",
        }
        done = subprocess.run(
            [sys.executable, "-c", probe, "hook", "--agent", "claude-code"]
            + ["--store", redis_server.url],
            input=json.dumps(call).encode(),
            capture_output=True,
            env=cli_env(HOME=str(tmp_path)),
            cwd=ROOT,
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        answers.append(done.stdout)
    assert answers[:2] == [b"", b""] and b'"permissionDecision":"deny"' in answers[2]
    for line in out.read_text().splitlines():
        modules = set(line.split())
        assert "loop_brake_cli.stores.resp" in modules
        assert not {name for name in modules if name == "redis" or name.startswith("redis.")}
