"""Stable session sharding for ``filter --shard K/N``.

Streaks never cross sessions, so a stream split by session key gives exactly the
verdicts of one process. The shard of a session key, a documented contract:

    shard = int.from_bytes(sha256(utf8(session_key))[:8], "big") % N

with shards numbered 0..N-1 and ``utf8`` encoding a lone surrogate as U+FFFD (as
the call hash does). Lines that are not readable calls (error verdicts) have no
session; shard 0 reports them, so the union of N shards is the single run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

from ..core.canonical import utf8
from ..core.records import BadRecord, Record

__all__ = ["parse_shard", "select_shard", "shard_of"]


def shard_of(session_key: str, shards: int) -> int:
    """The shard (0..shards-1) that owns a session key."""
    return int.from_bytes(hashlib.sha256(utf8(session_key)).digest()[:8], "big") % shards


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` with 0 <= K < N; raises ValueError with a readable reason."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"expected K/N such as 0/4, got {text!r}")
    index, count = int(k), int(n)
    if count < 1 or index >= count:
        raise ValueError(f"shard K/N needs N >= 1 and 0 <= K < N, got {text!r}")
    return index, count


def select_shard(records: Iterable[Record], index: int, shards: int) -> Iterator[Record]:
    """The records shard ``index`` of ``shards`` judges (error records: shard 0)."""
    owned: dict[str, bool] = {}
    for record in records:
        if record.__class__ is BadRecord:
            if index == 0:
                yield record
            continue  # results and usage follow their session, below
        session = record.session  # type: ignore[union-attr]  # not a BadRecord: has one
        keep = owned.get(session)
        if keep is None:
            if len(owned) >= 1 << 16:
                owned.clear()
            keep = owned[session] = shard_of(session, shards) == index
        if keep:
            yield record
