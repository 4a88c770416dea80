"""``filter --store``: the calls already read decided together, one round trip for many.

Each call counted one at a time waits for its own round trip to the store: about
2,600 events/s through a Redis server on loopback, where the same filter reads
49,000 without a store. But a verdict depends only on the previous decision of its
own session, so the calls of a batch can be sent together: the store gets them
in one write (``RedisStore.count_calls``: each session's calls, in their order, in
one script run; the sessions' runs pipelined), and its answers are the ones the
calls sent one by one would get.

What is batched is only what has been read: the batch is decided when the reader
is about to wait for more input (its ``on_wait``, where the output is flushed
anyway), when it holds ``batch`` calls, and at the end. So ``tail -f log |
loop-brake filter --store ...`` still answers each call as soon as it is read,
and a file is decided a reader's chunk (64 KiB) at a time.

Records that are not calls keep their place: a bad line's error waits in the batch
for its turn to be written; a user turn and a result under a policy change what
the next decisions read, so the batch before them is decided first, then they go
through ``judge`` as they always do. The verdicts, their order, the tallies and a
failing store's fail-open (each call not decided is ``LoopBrake.uncounted``,
said once) are those of ``write_verdicts``; ``LOOP_BRAKE_STORE_BATCH=1`` decides
one call at a time (the benchmark's unbatched side; tests compare the two).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError
from ..core.records import BadRecord, Record, ToolCall, ToolResult, Usage
from .output import LineWriter
from .pipeline import VERDICT_KINDS, Tally, call_digester, judge, write_verdict
from .reader import Source

__all__ = ["DEFAULT_BATCH", "ENV_BATCH", "batch_size", "write_verdicts_batched"]

ENV_BATCH = "LOOP_BRAKE_STORE_BATCH"
DEFAULT_BATCH = 1000
"""The most calls decided in one round trip (a chunk of ~150-byte events is ~430)."""


def batch_size(environ: Any = None) -> int:
    """``$LOOP_BRAKE_STORE_BATCH`` (a whole number of at least 1; 1: one call at a time),
    else ``DEFAULT_BATCH``; anything else is ``DEFAULT_BATCH`` too."""
    text = (os.environ if environ is None else environ).get(ENV_BATCH, "")
    return int(text) if text.isdigit() and int(text) >= 1 else DEFAULT_BATCH


def write_verdicts_batched(
    records: Iterable[Record],
    brake: LoopBrake,
    tally: Tally,
    out: LineWriter,
    source: Source,
    wanted: Collection[str] = VERDICT_KINDS,
    file: str | None = None,
    batch: int = DEFAULT_BATCH,
) -> None:
    """``write_verdicts`` with the calls already read decided together
    (``LoopBrake.observe_many``), in batches of at most ``batch``; ``source`` is the
    input ``records`` are read from: its ``on_wait`` decides the batch first."""
    pending: list[tuple[Any, Any]] = []  # (a call and its digest, or a bad record and None)
    digest_of = call_digester(records, brake)

    def decide() -> None:
        if not pending:
            return
        calls = [
            (record.session, record.tool, digest, record.call_id)
            for record, digest in pending
            if digest is not None
        ]
        verdicts = iter(brake.observe_many(calls))
        for record, digest in pending:
            verdict = None if digest is None else next(verdicts)
            tally.add(record, verdict)
            write_verdict(record, verdict, out, wanted, file)
        pending.clear()

    waited = source.on_wait

    def on_wait() -> None:
        decide()
        waited()

    source.on_wait = on_wait
    try:
        for record in records:
            cls = record.__class__
            if cls is ToolCall:
                try:
                    digest = digest_of(record.tool, record.args)  # type: ignore[union-attr]  # a ToolCall
                except (JSONInputError, TypeError) as exc:
                    pending.append((BadRecord(str(exc), record.line, record.path), None))
                else:
                    pending.append((record, digest))
                    if len(pending) >= batch:
                        decide()
            elif cls is BadRecord:
                pending.append((record, None))
            elif cls is Usage or (cls is ToolResult and not brake.progress):
                continue  # no verdict, no tally (as ``judge`` passes them through)
            else:  # a user turn, a result under a policy: after the calls before it
                decide()
                for judged, verdict in judge((record,), brake, tally):
                    write_verdict(judged, verdict, out, wanted, file)
    except Exception:  # an unreadable input: the calls read before it get their verdicts
        decide()
        raise
    else:
        decide()
    finally:
        source.on_wait = waited
