"""The streak rule of dsh-loop-brake, stated once.

Every front-end (``LoopBrake`` in memory, the hook's SQLite store, and through
them ``filter``, ``replay``, the hook and the MCP proxy) counts a call by
calling ``step`` and denies by ``is_denied``; nothing else restates the rule.

Per session there is one slot: the digest of the current streak, its count,
and the id and tool name of the last call counted into it.

* the first call of a session starts a streak at 1;
* a call whose call id equals the slot's (not None) is the same call seen twice
  by the host: it is not counted, the slot is unchanged, and it is a duplicate
  whatever its digest;
* otherwise the same digest extends the streak by 1, and any other digest
  starts a new streak at 1;
* a call is denied when its count reaches ``max_repeats`` (denied calls count).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Slot", "is_denied", "step"]


class Slot(NamedTuple):
    """A session's streak after a call; immutable, so a store can keep or drop it."""

    digest: bytes
    count: int
    call_id: Any
    tool: str


def step(prev: Slot | None, tool: str, digest: bytes, call_id: Any = None) -> tuple[Slot, bool]:
    """The session's slot after one call, and whether the call was a duplicate.

    Pure: the caller stores the returned slot (a duplicate returns ``prev`` itself).
    """
    if prev is not None:
        if call_id is not None and call_id == prev.call_id:
            return prev, True
        if prev.digest == digest:
            return Slot(digest, prev.count + 1, call_id, tool), False
    return Slot(digest, 1, call_id, tool), False


def is_denied(count: int, max_repeats: int) -> bool:
    """The call that brings a streak to ``max_repeats`` is denied, and every later one."""
    return count >= max_repeats
