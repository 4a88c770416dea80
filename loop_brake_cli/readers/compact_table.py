"""filter's session table, compact: where a million sessions fit in 0.5x Node's memory.

Without a policy a session's state is a ``streak.Slot``: the 32-byte digest of its
streak, the count, the last call id and the tool. ``core/table.py``'s ``MemoryTable``
keeps it as Python objects in a dict: the key string, the Slot tuple, a bytes digest,
the call id string and the dict's entry, about 320 bytes of RSS a session (issue 41
goal 6: 326 MB for 1,000,000 sessions, as much as Node.js). The C reader's
``SessionSlots`` (``_session_slots.h``) keeps the same state in a 72-byte entry, the
key's and the id's bytes in one arena and an index of entry numbers: the digest
whole, nothing truncated. It answers ``count_call`` as ``MemoryTable`` does
(``streak.step``, the same ``Slot`` and duplicate flag), and ``max_sessions`` evicts
the least recently used as ``BoundedMemoryTable`` does.

``filter`` counts through it when it takes the fast path with the C reader (no
policy, no store, ``LOOP_BRAKE_EXACT`` and ``LOOP_BRAKE_PURE_PYTHON`` unset):
``use_compact_table`` (under a policy the C step covers, ``policy_table.py``'s table
instead). Everywhere else, and for every other policy, the dict stays: it is
the statement, this the copy that ``tests/test_compact_table.py`` holds equal to it
(drawn sequences, slot for slot) and ``tests/test_fastpath*.py`` hold equal through
``filter``'s output (the exact path counts in the dict).
"""

from __future__ import annotations

import os

from ..core.streak import Slot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.brake import LoopBrake
    from ..core.policy.model import Policy

__all__ = ["AVAILABLE", "CompactTable", "use_compact_table"]

try:  # optional: in the C reader, built when a C compiler was there at install
    from ._event_scan import SessionSlots

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised where the extension is not built
    AVAILABLE = False
    SessionSlots = object  # type: ignore[assignment, misc]  # a base only: none is made


class CompactTable(SessionSlots):
    """A ``core.table.SessionTable`` in this process's memory, without a policy: the
    C ``SessionSlots`` (``count_call``, ``end_call``, ``reset``, ``len``, ``evictions``,
    ``get``, ``sessions``) and what the interface adds. Not locked (``LoopBrake``
    holds its lock around the library's calls; a reentered call is refused)."""

    __slots__ = ()
    label = "memory"

    def __new__(cls, max_sessions: int | None = None) -> CompactTable:
        return super().__new__(cls, Slot, max_sessions)

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Policy,
        error: bool = False,
        now: float | None = None,
    ) -> bool:
        """Results matter only under a policy, which this table does not keep."""
        raise ValueError("the compact table keeps no results: a policy needs MemoryTable")

    def close(self) -> None:
        """Nothing to release: the sessions stay until ``reset``."""


def use_compact_table(brake: LoopBrake) -> bool:
    """Count ``brake``'s calls in a ``CompactTable`` when it would count in a memory
    table without a policy (no store), the C reader is built, and neither
    ``LOOP_BRAKE_EXACT`` nor ``LOOP_BRAKE_PURE_PYTHON`` asks for the plain paths; under
    a policy the C step covers, in a ``policy_table.CompactPolicyTable``. Only on a
    brake that holds no session yet; returns whether it did."""
    if (
        not AVAILABLE
        or brake.store is not None
        or len(brake)
        or os.environ.get("LOOP_BRAKE_EXACT")
        or os.environ.get("LOOP_BRAKE_PURE_PYTHON")
    ):
        return False
    if brake.policy is not None:
        from .policy_table import use_policy_table

        return use_policy_table(brake)
    brake.table = CompactTable(brake.max_sessions)
    return True
