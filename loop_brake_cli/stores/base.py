"""The store interface: what every backend of ``stores/`` answers, and its errors.

A store keeps, per session, what ``streak.step`` (and under a policy
``streak.policy_step``) needs between calls: the 32-byte digest, the count, the
last call id, the tool name and the policy part; never an argument or a result.
A decision is atomic: no lost update, no two calls given the same count, a
call whose id equals the slot's is a duplicate and is not counted, until the
call ends (``end_call``, or a paired result). A backend is
correct when the shared store suite (``tests/test_stores.py``) passes against
it, not when its own tests do.

Failures are ``StoreError`` (one line, never an argument, never a credential);
``StoreUnavailable`` says the store could not be asked at all (unreachable,
too slow, the circuit breaker open): the caller's failure policy decides
(fail open by default, ``--fail-closed`` denies). No backend falls back to
memory on its own: counts kept in one process would diverge from the fleet's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # a structural type: nothing checks it at run time


if TYPE_CHECKING:
    from ..core.verdicts import Verdict
    from .rows import SessionRow

__all__ = ["DEFAULT_IDLE_TTL", "ENV_STORE", "Store", "StoreError", "StoreUnavailable"]

ENV_STORE = "LOOP_BRAKE_STORE"
DEFAULT_IDLE_TTL = 24 * 3600.0


class StoreError(Exception):
    """The brake itself failed (locked, disk full, read-only, unreachable...); never
    quotes arguments or credentials."""


class StoreUnavailable(StoreError):
    """The store could not be asked (unreachable, timed out, circuit open): the
    decision was not made, nothing was counted."""


class Store(Protocol):
    """What a front-end asks of a store. ``label`` is safe to print (no credentials)."""

    label: str

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any,
        max_repeats: int,
        now: float | None = None,
        policy: Any = None,
    ) -> Verdict:
        """Count one call atomically and return its verdict (``streak.step``, or
        ``streak.policy_step`` under ``policy``)."""
        ...

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Any,
        now: float | None = None,
        error: bool = False,
    ) -> bool:
        """Pair a result's digest (and ``error``: whether the call failed) with the
        session's latest call (``streak.result_step``); returns whether it paired.
        Creates nothing for a session the store lacks."""
        ...

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool:
        """The call ``call_id`` of ``session`` ended (its result or answer was seen):
        atomically, forget the session's call id when it equals ``call_id`` (as
        ``streak.call_ended``), so a later call with that id is counted; returns
        whether it did. Nothing else changes (count, stamp, expiry)."""
        ...

    def sessions(self, session: str | None = None) -> tuple[list[SessionRow], int]:
        """Live sessions (or one), most recently updated first, and how many stored
        entries were skipped as not ours. Read-only."""
        ...

    def reset(self, session: str | None = None) -> int:
        """Forget one session's streak, or every one; how many were removed."""
        ...

    def close(self) -> None:
        """Release connections; the store may be used again afterwards."""
        ...
