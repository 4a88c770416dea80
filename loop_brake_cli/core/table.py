"""The session table: where a brake keeps each session's state, one interface for all.

``LoopBrake`` counts every call through exactly one table: ``MemoryTable`` (this
module; one process, the default) or a store shared between processes and hosts
(``stores/``: SQLite, Redis/Valkey, or any backend registered there by URL scheme).
The hook, ``filter --store``, the MCP proxy and gateway and every integration count
through a ``LoopBrake``, so this is the one road from a call to its state.

A table holds per session what the rule (``streak``) needs between calls, never an
argument or a result, and applies the rule itself, atomically where it is shared:

* ``count_call(session, tool, digest, call_id, max_repeats, policy=None, now=None)``
  counts one call with ``streak.step`` (``streak.policy_step`` under ``policy``) and
  returns ``(state, duplicate)``: the session's state after the call (a
  ``streak.Slot``, or a ``streak.PolicySlot`` under a policy; a duplicate's is the
  counted call's) and whether the call was a duplicate. The brake words the verdict
  (``verdicts.verdict_of``), once, whatever the table;
* ``observe_result(session, call_id, digest, policy, error=False, now=None) -> bool``
  pairs a result's digest with the latest call (``streak.result_step``); creates
  nothing for a session the table lacks;
* ``end_call(session, call_id, now=None) -> bool``: the call ended, its id may count
  again (``streak.call_ended``);
* ``reset(session=None) -> int``: forget one session or all; how many were removed;
* ``close()``; ``label``, safe to print (no credentials).

A table that cannot be asked raises ``StoreError`` (``StoreUnavailable`` when the
decision was not made at all); ``LoopBrake`` holds the one rule for that (the call is
decided uncounted: allowed, or denied fail-closed). A shared store also lists its
sessions (``stores.Store.sessions``, for ``state list``); memory has no clock to
list them by. A backend is correct when the shared suite (``tests/test_stores.py``)
passes against it.
"""

from __future__ import annotations

from collections import OrderedDict

from .streak import call_ended, policy_step, result_step, step

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from .policy.model import Policy
    from .streak import PolicySlot, Slot
else:
    Protocol = object  # a structural type: nothing checks it at run time

__all__ = [
    "BoundedMemoryTable",
    "MemoryTable",
    "SessionTable",
    "StoreError",
    "StoreUnavailable",
    "memory_table",
    "open_table",
    "set_url_opener",
]


class StoreError(Exception):
    """The brake itself failed (locked, disk full, read-only, unreachable...); never
    quotes arguments or credentials."""


class StoreUnavailable(StoreError):
    """The store could not be asked (unreachable, timed out, circuit open): the
    decision was not made, nothing was counted."""


class SessionTable(Protocol):
    """What a brake asks of the table it counts through (module docstring)."""

    label: str

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Policy | None = None,
        now: float | None = None,
    ) -> tuple[Slot | PolicySlot, bool]: ...

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Policy,
        error: bool = False,
        now: float | None = None,
    ) -> bool: ...

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool: ...

    def reset(self, session: str | None = None) -> int: ...

    def close(self) -> None: ...


_ABSENT = object()


class MemoryTable:
    """Every session's state in one dict of this process: a ``streak.Slot`` each (a
    32-byte digest, the count, the last call id, the tool name), or a ``PolicySlot``
    under a policy. Unbounded (``BoundedMemoryTable`` keeps the least recently used).
    Not locked: ``LoopBrake`` holds its lock around the library's calls. (``filter``
    without a policy counts in a compact copy of it where the C reader is built:
    ``readers/compact_table.py``, about a third of the memory a session.)"""

    label = "memory"
    evictions = 0

    def __init__(self) -> None:
        self._slots: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Policy | None = None,
        now: float | None = None,
    ) -> tuple[Any, bool]:
        """Count one call (``streak.step``, or ``streak.policy_step`` under ``policy``)
        and keep the session's new state; a duplicate keeps the old one."""
        slots = self._slots
        if policy is None:  # the seed's rule: filter's hot path with a million sessions
            slot, duplicate = step(slots.get(session), tool, digest, call_id)
            if not duplicate:
                slots[session] = slot
            return slot, duplicate
        state, duplicate = policy_step(
            slots.get(session), tool, digest, call_id, max_repeats, policy
        )
        if not duplicate:
            slots[session] = state
        return state, duplicate

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Policy,
        error: bool = False,
        now: float | None = None,
    ) -> bool:
        prev = self._slots.get(session)
        if prev is None:
            return False
        state, paired = result_step(prev, call_id, digest, error)
        if state is not prev:
            self._slots[session] = state
        return paired

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool:
        prev = self._slots.get(session)
        state = call_ended(prev, call_id)
        if state is prev:
            return False
        self._slots[session] = state  # an end is not a use: a bound's order stays
        return True

    def reset(self, session: str | None = None) -> int:
        slots = self._slots
        if session is None:
            removed = len(slots)
            slots.clear()
            return removed
        return 0 if slots.pop(session, _ABSENT) is _ABSENT else 1

    def close(self) -> None:
        """Nothing to release: the sessions stay until ``reset``."""


class BoundedMemoryTable(MemoryTable):
    """``MemoryTable`` holding at most ``max_sessions`` sessions: the least recently
    used is evicted (``evictions`` counts them) and starts afresh if it returns.

    With ``idle`` (seconds), ``expire`` also forgets every session unused that long
    (``expired`` counts them; ``clock`` is ``time.monotonic`` unless a test moves its
    own): a long-running server (the MCP gateway) calls it now and then, so a flood
    of sessions that never return leaves no memory behind. Sessions are kept in order
    of last use, so expiry only looks at the oldest ones. When most sessions have gone,
    the table is rebuilt smaller (a dict never shrinks by itself)."""

    def __init__(
        self,
        max_sessions: int,
        idle: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if idle is not None and not idle > 0:
            raise ValueError("idle must be a positive number of seconds")
        self.max_sessions = max_sessions
        self.evictions = 0
        self.idle = idle
        self.expired = 0
        self._slots: OrderedDict[str, Any] = OrderedDict()
        self._used: dict[str, float] | None = None if idle is None else {}
        if clock is None and idle is not None:
            from time import monotonic as clock
        self._clock = clock
        self._peak = 0

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Policy | None = None,
        now: float | None = None,
    ) -> tuple[Any, bool]:
        slots = self._slots
        prev = slots.get(session)
        state: Slot | PolicySlot
        if policy is None:
            state, duplicate = step(prev, tool, digest, call_id)
        else:
            state, duplicate = policy_step(prev, tool, digest, call_id, max_repeats, policy)
        if prev is None:
            slots[session] = state
            if len(slots) > self.max_sessions:
                evicted, _ = slots.popitem(last=False)
                self.evictions += 1
                if self._used is not None:
                    del self._used[evicted]
            elif len(slots) > self._peak:
                self._peak = len(slots)
        else:
            slots.move_to_end(session)
            if not duplicate:
                slots[session] = state
        if self._used is not None:
            self._used[session] = self._clock()  # type: ignore[misc]  # idle, so a clock
        return state, duplicate

    def reset(self, session: str | None = None) -> int:
        if self._used is not None:
            if session is None:
                self._used.clear()
            else:
                self._used.pop(session, None)
        return super().reset(session)

    def expire(self) -> int:
        """Forget every session unused for ``idle`` seconds; how many (0 without ``idle``)."""
        used = self._used
        if used is None:
            return 0
        # used is not None: idle and a clock were given
        cutoff = self._clock() - self.idle  # type: ignore[misc, operator]
        slots = self._slots
        removed = 0
        while slots:
            oldest = next(iter(slots))
            if used[oldest] > cutoff:
                break
            del slots[oldest]
            del used[oldest]
            removed += 1
        self.expired += removed
        if removed and len(slots) * 4 < self._peak:  # mostly gone: give the memory back
            self._slots = OrderedDict(slots)
            self._used = dict(used)
            self._peak = len(slots)
        return removed


def memory_table(
    max_sessions: int | None = None,
    idle: float | None = None,
    clock: Callable[[], float] | None = None,
) -> MemoryTable:
    """A table in this process's memory: unbounded, or the LRU of ``max_sessions``
    (forgetting sessions unused for ``idle`` seconds when asked to ``expire``)."""
    if max_sessions is None:
        if idle is not None:
            raise ValueError("an idle expiry needs max_sessions")
        return MemoryTable()
    return BoundedMemoryTable(max_sessions, idle, clock)


_url_opener: Callable[..., SessionTable] | None = None


def set_url_opener(opener: Callable[..., SessionTable]) -> None:
    """Who opens a store from a URL: ``stores.open_store``, installed by the package's
    root (``loop_brake_cli/__init__``) so that the core, which imports no backend,
    still takes ``LoopBrake(store="redis://...")``."""
    global _url_opener
    _url_opener = opener


def open_table(url: str, warn: Callable[[str], None] | None = None) -> SessionTable:
    """The store a URL names (``set_url_opener``), its one-line notices to ``warn``;
    ValueError for a URL no backend reads."""
    if _url_opener is None:
        raise ValueError("no store backends are loaded (import loop_brake_cli.stores)")
    return _url_opener(url, warn=warn)
