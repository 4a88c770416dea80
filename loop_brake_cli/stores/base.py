"""The store interface: a session table (``core.table.SessionTable``) shared between
processes and hosts, and its errors.

A store keeps, per session, what ``streak.step`` (and under a policy
``streak.policy_step``) needs between calls: the 32-byte digest, the count, the
last call id, the tool name and the policy part; never an argument or a result.
It answers everything a session table answers (``count_call`` returning the
session's state and whether the call was a duplicate, ``observe_result``,
``end_call``, ``reset``, ``close``, ``label``) and lists its sessions for ``state
list`` (``sessions``). A decision is atomic: no lost update, no two calls given
the same count, a call whose id equals the slot's is a duplicate and is not
counted, until the call ends (``end_call``, or a paired result). A backend is
correct when the shared store suite (``tests/test_stores.py``) passes against it,
not when its own tests do; it is opened from a URL by its scheme
(``stores.register``).

Failures are ``StoreError`` (one line, never an argument, never a credential);
``StoreUnavailable`` says the store could not be asked at all (unreachable,
too slow, the circuit breaker open): ``LoopBrake.uncounted`` decides (fail
open by default, ``--fail-closed`` denies). No backend falls back to memory on
its own: counts kept in one process would diverge from the fleet's. Both
errors are the core's (``core.table``), which knows no backend.
"""

from __future__ import annotations

from ..core.table import SessionTable, StoreError, StoreUnavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Protocol

    from .rows import SessionRow
else:
    Protocol = object  # a structural type: nothing checks it at run time

__all__ = [
    "DEFAULT_IDLE_TTL",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_MAX_SESSIONS",
    "ENV_STORE",
    "Store",
    "StoreError",
    "StoreUnavailable",
]

ENV_STORE = "LOOP_BRAKE_STORE"
DEFAULT_IDLE_TTL = 24 * 3600.0
# The SQLite store's defaults, here so that the hook reads them without importing
# sqlite3 when its store is Redis.
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_LOCK_TIMEOUT = 10.0


class Store(SessionTable, Protocol):
    """A session table shared between processes. ``label`` is safe to print (no
    credentials)."""

    def sessions(self, session: str | None = None) -> tuple[list[SessionRow], int]:
        """Live sessions (or one), most recently updated first, and how many stored
        entries were skipped as not ours. Read-only."""
        ...
