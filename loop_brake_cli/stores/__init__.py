"""Where streaks live between processes: one interface, backends registered by scheme.

``base.Store`` is the interface (a ``core.table.SessionTable`` that also lists its
sessions) and its errors. A backend is chosen by a URL (``--store``, else
``$LOOP_BRAKE_STORE``) through ``open_store``, by the URL's scheme, from the
openers ``register``ed here:

* a path, or ``sqlite:///absolute/path``: ``sqlite_store.StateStore``, one
  SQLite file per machine (the default, at ``default_state_path()``);
  ``sqlite_file`` decides which file may be used, ``rows`` and ``policy_rows``
  what a row holds;
* ``redis://``, ``rediss://`` (TLS) or ``unix://`` (a socket path):
  ``redis_store.RedisStore``, one Redis or Valkey server shared by a fleet
  (redis-py, the ``redis`` extra); ``redis+cluster://host:port[,host:port...]``
  (``rediss+cluster://``) a Redis Cluster, through redis-py's cluster client.

A new backend is one module and one ``register("scheme", opener)`` line; it is
correct when the shared store suite passes against it (``tests/test_stores.py``;
``tests/test_store_registry.py`` adds a dict-backed one from a test alone).
Nothing here imports click, rich or redis-py: the hook imports this package
before every tool call, and a backend's module only when its scheme is opened.
"""

from __future__ import annotations

import os

from .base import DEFAULT_IDLE_TTL, ENV_STORE, Store, StoreError, StoreUnavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "DEFAULT_IDLE_TTL",
    "ENV_STORE",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "check_target",
    "is_redis",
    "open_store",
    "register",
    "schemes",
    "store_target",
]

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789+.-")


def _scheme(target: str) -> str | None:
    """``redis`` of ``redis://...`` (lower case); None for a plain path. (No ``re``:
    the hook's start-up does not pay for it.)"""
    head, sep, _ = target.partition("://")
    name = head.lower()
    if sep and name[:1].isalpha() and set(name) <= _SCHEME_CHARS:
        return name
    return None


def store_target(
    store: str | None = None, state: str | None = None, env: dict[str, str] | None = None
) -> str:
    """Which store a command uses: ``--store``, else ``--state`` (a path), else
    ``$LOOP_BRAKE_STORE``, else the default SQLite path (``$LOOP_BRAKE_STATE``, else
    under ``$XDG_STATE_HOME``). Both options at once is a ValueError."""
    if store and state:
        raise ValueError("give --store or --state, not both (--state PATH is --store PATH)")
    environ = os.environ if env is None else env
    chosen = store or state or environ.get(ENV_STORE)
    if chosen:
        return chosen
    from .sqlite_file import default_state_path

    return default_state_path(environ)


def is_redis(target: str) -> bool:
    """Whether a store URL names a Redis (or Valkey) server."""
    return _scheme(target) in ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")


_KNOWN = (
    "sqlite",
    "redis",
    "rediss",
    "unix",
    "valkey",
    "valkeys",
    "redis+cluster",
    "rediss+cluster",
)
_FORMS = "a path, sqlite:///path, redis://, rediss://, unix:// or redis+cluster://"


def _mistyped(target: str) -> str | None:
    """The head of a target that looks like a URL but is not one of ours, else None.

    Scheme-like (issue 36: a typo must not become a SQLite file named like a URL):
    ``NAME:...`` where NAME could be a URL scheme (a letter, then letters, digits,
    ``+``, ``-``, ``.``: ``redis:/host:6379``, ``redis:host:6379``, ``valkey:...``),
    anything with ``://`` and no ``/`` before it, and a store's scheme name followed
    by ``//`` (``redis//host``). A path with a ``/`` before its first ``:`` (``./redis:x``,
    ``/var/lib/x``) never is. Only the head is returned: the rest may hold a password."""
    if _scheme(target) is not None:
        return None  # a well-formed scheme://; open_store says whether it is ours
    head, colon, _ = target.partition(":")
    if colon and head[:1].isalpha() and set(head.lower()) <= _SCHEME_CHARS:
        return head + ":"
    before, sep, _ = target.partition("://")
    if sep and "/" not in before:
        return before + "://"
    lowered = target.lower()
    for name in _KNOWN:
        if lowered.startswith(name + "//"):
            return target[: len(name) + 2]
    return None


def check_target(target: str) -> None:
    """A ValueError for a target that looks like a URL but is not a store URL we read
    (``_mistyped``): never a SQLite file of that name. Names only the head."""
    head = _mistyped(target)
    if head is not None:
        raise ValueError(
            f"{head!r}... is not a store URL ({_FORMS}); "
            "to use a file of that name, start the path with ./"
        )


def sqlite_path(target: str) -> str:
    """The file a SQLite target names: a path, or ``sqlite:///path``. Any other
    ``scheme://``, or a target that looks like a URL (``check_target``), is a
    ValueError naming the forms understood."""
    scheme = _scheme(target)
    if scheme is None:
        check_target(target)
        return target
    if scheme == "sqlite":
        path = target.partition("://")[2]
        if path.startswith("/") and len(path) > 1:
            return path
        raise ValueError(f"a sqlite store URL is sqlite:///absolute/path, not {target!r}")
    raise ValueError(f"unknown store {scheme}://... (use {_FORMS}; Valkey is redis://)")


_OPENERS: dict[str | None, Callable[..., Store]] = {}


def register(scheme: str | None, opener: Callable[..., Store]) -> None:
    """Open ``scheme://...`` targets with ``opener(target, *, idle_ttl, warn, **options)``
    (None: a plain path). ``options`` are what a command passes for every store
    (``max_sessions``, ``lock_timeout``, ``short_lived``: the process makes a decision or
    two and exits): a backend takes those it understands and ignores the rest. A later
    registration of a scheme replaces the earlier one."""
    _OPENERS[None if scheme is None else scheme.lower()] = opener


def schemes() -> list[str]:
    """The URL schemes a store can be opened with, as messages list them."""
    return sorted(scheme for scheme in _OPENERS if scheme is not None)


def open_store(
    target: str,
    *,
    idle_ttl: float = DEFAULT_IDLE_TTL,
    warn: Any = None,
    **options: Any,
) -> Store:
    """The store a target names (see ``store_target``), by its scheme (``register``).
    ``idle_ttl``: seconds a session may stay idle before its streak is forgotten.
    ``options``: ``max_sessions`` and ``lock_timeout`` of the SQLite store (Redis has
    no session cap: keys expire), ``short_lived`` of the Redis store (``RedisStore``).
    Raises ValueError for a target no backend reads (a URL we do not read, or one
    mistyped: ``check_target``), StoreError when a backend's library is missing.
    Connects on first use."""
    scheme = _scheme(target)
    if scheme is None:
        check_target(target)
    opener = _OPENERS.get(scheme)
    if opener is None:
        raise ValueError(f"unknown store {scheme}://... (use {_FORMS}; Valkey is redis://)")
    return opener(target, idle_ttl=idle_ttl, warn=warn, **options)


def _sqlite(target: str, *, idle_ttl: float, warn: Any = None, **options: Any) -> Store:
    from .sqlite_store import StateStore

    known = {name: options[name] for name in ("max_sessions", "lock_timeout") if name in options}
    return StateStore(sqlite_path(target), ttl=idle_ttl, warn=warn, **known)


def _redis(target: str, *, idle_ttl: float, warn: Any = None, **options: Any) -> Store:
    from .redis_store import RedisStore

    short_lived = options.get("short_lived", False)
    return RedisStore(target, idle_ttl=idle_ttl, short_lived=short_lived, warn=warn)


register(None, _sqlite)
register("sqlite", _sqlite)
for _name in ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster"):
    register(_name, _redis)
