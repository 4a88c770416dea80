"""The stores the brake counts in: there, answering, and keeping every streak.

Which stores: ``--store`` (else ``$LOOP_BRAKE_STORE``, else the default file),
and every other store a hook entry names with ``--store``/``--state``. Each gets:

* a SQLite file: ``stores.sqlite_file.inspect`` without creating or writing it
  (a link, a file that is not SQLite, another application's database are what
  the hook refuses); a missing file is fine where its folder can be made; a
  file others may read or write is a warning (it holds session ids and tool
  names, never arguments; whoever can write it can reset a streak);
* a Redis or Valkey server: the ``redis`` extra, an answer, and its
  ``maxmemory-policy`` (``INFO memory``, else ``CONFIG GET``). Only
  ``noeviction`` is safe: every streak key has a TTL, so once ``maxmemory`` is
  reached the ``volatile-*`` policies evict exactly the streaks (and
  ``allkeys-*`` any of them); a session whose key is evicted starts over and its
  repeated call is never denied. Under ``noeviction`` a full server refuses the
  write: the hook fails open, and says so.
* one canary count through the store's own interface, in a session of its own,
  then reset: the store answers the hook's question, not only a ping.

A URL is shown redacted (``redis_store.redact``): no user name, password or query.
"""

from __future__ import annotations

import os
import stat
import uuid
from typing import Any

from . import FAIL, OK, WARN, Check, Options

__all__ = ["label", "store_checks", "targets"]

TIMEOUT = 2.0
"""Seconds a Redis server may take to answer the doctor (the hook allows 0.2)."""


def targets(options: Options, found: Any) -> list[str]:
    """The doctor's store, then every other store a hook entry names."""
    from ..hook.check import command_store
    from ..stores import store_target

    chosen = [store_target(options.store, None, options.env)]
    for entry in found.entries:
        named = command_store(entry.command, options.env)
        if named is not None and named not in chosen:
            chosen.append(named)
    return chosen


def label(target: str) -> str:
    """How a store is named to people: a redacted URL, or the file's path."""
    from ..stores import is_redis

    if is_redis(target):
        from ..stores.redis_store import redact

        return redact(target)
    return target


def store_checks(target: str, env: dict[str, str]) -> list[Check]:
    """The checks of one store (see the module docstring)."""
    from ..stores import is_redis

    if is_redis(target):
        checks = _redis_checks(target)
        canary = not any(check.status == FAIL for check in checks)
    else:
        checks, canary = _sqlite_checks(target)
    return checks + [_canary(target)] if canary else checks


def _check(status: str, target: str, detail: str, fix: str = "") -> Check:
    return Check(status, "store", f"{label(target)}: {detail}", fix, {"store": label(target)})


def _sqlite_checks(target: str) -> tuple[list[Check], bool]:
    """The file's checks, and whether a canary count may run (never creating it)."""
    from ..stores import sqlite_path
    from ..stores.sqlite_file import NotAStoreError, inspect

    try:
        path = sqlite_path(target)
    except ValueError as exc:
        return [_check(FAIL, target, str(exc), "name a path, sqlite:///path or redis://...")], False
    other = "name another with --store or $LOOP_BRAKE_STORE"
    try:
        found = inspect(path, create=False, write=False)
    except NotAStoreError as exc:
        return [_check(FAIL, target, str(exc).removeprefix(f"state store {path} "), other)], False
    except OSError as exc:
        return [_check(FAIL, target, f"cannot be opened ({exc.strerror or exc})", other)], False
    if found.kind == "missing":
        folder = _existing_parent(path)
        if not os.access(folder, os.W_OK | os.X_OK):
            why = f"not created yet, and {folder} is not writable: the hook fails open"
            return [_check(FAIL, target, why, f"make {folder} writable, or {other}")], False
        created = f"not created yet: the first call creates it ({folder} is writable)"
        return [_check(OK, target, created)], False
    checks = []
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.getuid():
        checks.append(_check(WARN, target, f"owned by uid {info.st_uid}, not you", "chown it"))
    if mode & 0o022:
        checks.append(
            _check(
                WARN,
                target,
                f"mode {mode:04o}: others may write it, and so reset a streak",
                f"chmod 600 {path}",
            )
        )
    elif mode & 0o044:
        checks.append(
            _check(
                WARN,
                target,
                f"mode {mode:04o}: others may read its session ids and tool names "
                "(never arguments)",
                f"chmod 600 {path}",
            )
        )
    return checks, True


def _existing_parent(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def _redis_checks(target: str) -> list[Check]:
    try:
        import redis
    except ImportError:
        return [
            _check(
                FAIL,
                target,
                "the redis extra is not installed: the hook cannot reach it",
                "pip install 'loop-brake-cli[redis]'",
            )
        ]
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisClusterException
    from redis.retry import Retry

    from ..stores.redis_store import CLUSTER_SCHEMES, cluster_client

    options = {
        "socket_timeout": TIMEOUT,
        "socket_connect_timeout": TIMEOUT,
        "retry": Retry(NoBackoff(), 0),
    }
    client = None
    try:
        if target.partition("://")[0].lower() in CLUSTER_SCHEMES:  # every master is asked
            client = cluster_client(target, options)
            servers = [node.redis_connection for node in client.get_primaries()]
        else:
            client = redis.Redis.from_url(target, **options)
            servers = [client]
        found = [_eviction(server, redis) for server in servers]
        policy, limit = next((one for one in found if one[0] != "noeviction"), found[0])
    except ValueError as exc:
        return [_check(FAIL, target, f"not a usable URL ({_scrub(target, str(exc))})", "fix it")]
    except (redis.RedisError, RedisClusterException) as exc:
        reason = _scrub(target, f"{exc.__class__.__name__}: {exc}")
        return [_check(FAIL, target, f"does not answer ({reason})", "start it, or fix the URL")]
    finally:
        if client is not None:
            client.close()
    if policy is None:
        return [
            _check(
                WARN,
                target,
                "its maxmemory-policy cannot be read (INFO and CONFIG refused): only "
                "noeviction keeps every streak",
                "make sure the server's maxmemory-policy is noeviction",
            )
        ]
    if policy == "noeviction":
        return [_check(OK, target, "maxmemory-policy noeviction: no streak is ever evicted")]
    which = "keys with a TTL" if policy.startswith("volatile") else "any key"
    now = (
        "; maxmemory is 0 now (no limit): nothing is evicted until a limit is set, by you "
        "or a provider"
        if limit == 0
        else f" (maxmemory {limit} bytes)"
    )
    return [
        _check(
            FAIL,
            target,
            f"maxmemory-policy is {policy}: when memory runs out Redis evicts {which}, "
            "and every streak has a TTL; a session evicted starts over and its repeated "
            f"call is not denied{now}",
            "redis-cli CONFIG SET maxmemory-policy noeviction, and the same in redis.conf "
            "(a managed Redis: its parameter group)",
        )
    ]


def _eviction(client: Any, redis: Any) -> tuple[str | None, int]:
    """The server's maxmemory-policy and maxmemory, or (None, 0) if it will not say."""
    try:
        memory = client.info("memory")
        if "maxmemory_policy" in memory:
            return str(memory["maxmemory_policy"]), int(memory.get("maxmemory", 0))
    except redis.ResponseError:
        pass
    try:
        config = client.config_get("maxmemory*")
    except redis.ResponseError:
        return None, 0
    policy = config.get("maxmemory-policy")
    return (None if policy is None else str(policy)), int(config.get("maxmemory", 0) or 0)


def _scrub(target: str, text: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(target)
    for secret in (parts.password, parts.username, parts.query):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _canary(target: str) -> Check:
    """One count through the store's interface in a session of its own, then reset."""
    from ..core.canonical import call_digest
    from ..hook.check import CANARY_TOOL
    from ..stores import StoreError, open_store

    session = f"loop-brake-doctor-{uuid.uuid4().hex[:12]}"
    try:
        store = open_store(target)
        try:
            store.count_call(session, CANARY_TOOL, call_digest(CANARY_TOOL, {}), "doctor", 3)
            store.reset(session)
        finally:
            store.close()
    except (StoreError, ValueError, OSError) as exc:
        reason = _scrub(target, str(exc) or exc.__class__.__name__)
        return _check(FAIL, target, f"a canary count failed: {reason}", "see the reason")
    return _check(OK, target, "answers: one canary count, then forgotten")
