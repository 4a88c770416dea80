"""Records in, verdicts out: the one loop every command shares.

The brake decides (brake.py); this module only feeds it and keeps the tallies a
summary needs, so filter, replay and the live paths count the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from .brake import LoopBrake, Verdict
from .canonical import JSONInputError, call_digest
from .output import LineWriter
from .records import BadRecord, Record, ToolCall, error_record, verdict_record

__all__ = ["VERDICT_KINDS", "Tally", "judge", "write_verdicts"]

VERDICT_KINDS = ("pass", "deny", "error")


@dataclass
class Tally:
    """What a summary reports; never anything from the arguments."""

    passed: int = 0
    denied: int = 0
    errors: int = 0
    duplicates: int = 0
    unparsed_args: int = 0

    @property
    def calls(self) -> int:
        return self.passed + self.denied

    def add(self, record: Record, verdict: Verdict | None) -> None:
        if verdict is None:
            self.errors += 1
            return
        if verdict.denied:
            self.denied += 1
        else:
            self.passed += 1
        if verdict.duplicate:
            self.duplicates += 1
        if record.args_unparsed:  # type: ignore[union-attr]
            self.unparsed_args += 1


def judge(
    records: Iterable[Record], brake: LoopBrake, tally: Tally | None = None
) -> Iterator[tuple[Record, Verdict | None]]:
    """Yield each record with its verdict (None for a BadRecord), in input order."""
    for record in records:
        verdict: Verdict | None = None
        if record.__class__ is ToolCall:
            try:
                digest = call_digest(record.tool, record.args)  # type: ignore[union-attr]
            except (JSONInputError, TypeError) as exc:
                record = BadRecord(str(exc), record.line, record.path)
            else:
                verdict = brake.observe(
                    record.session,  # type: ignore[union-attr]
                    record.tool,  # type: ignore[union-attr]
                    digest,
                    record.call_id,  # type: ignore[union-attr]
                )
        if tally is not None:
            tally.add(record, verdict)
        yield record, verdict


def write_verdicts(
    records: Iterable[Record],
    brake: LoopBrake,
    tally: Tally,
    out: LineWriter,
    wanted: Collection[str] = VERDICT_KINDS,
    file: str | None = None,
) -> None:
    """Judge the records and write the verdict lines of the ``wanted`` kinds, in order.

    The exact path of ``filter`` and of ``replay --verdicts`` (and the fast
    path's fallback for the lines it does not take), so they cannot drift apart.
    """
    write = out.write
    for record, verdict in judge(records, brake, tally):
        if verdict is None:
            if "error" in wanted:
                write(error_record(record, file))
        elif ("deny" if verdict.denied else "pass") in wanted:
            write(verdict_record(record, verdict, file))  # type: ignore[arg-type]
