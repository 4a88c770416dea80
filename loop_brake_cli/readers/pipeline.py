"""Records in, verdicts out: the one loop every command shares.

The brake decides (brake.py); this module only feeds it and keeps the tallies a
summary needs, so filter, replay and the live paths count the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError
from ..core.records import (
    BadRecord,
    Record,
    ToolCall,
    ToolResult,
    Usage,
    UserTurn,
    error_record,
    verdict_record,
)
from ..core.slotted import Fields
from ..core.verdicts import Verdict
from .fast_observe import digest_for, observe_for, plain_records
from .output import LineWriter

__all__ = [
    "VERDICT_KINDS",
    "Tally",
    "call_digester",
    "judge",
    "plain_records",
    "write_verdicts",
    "write_verdict",
]

VERDICT_KINDS = ("pass", "deny", "stop", "error", "warn")
"""The ``verdict`` values of a verdict line (``filter --only``). ``stop`` (under a
policy's ``[stop]``) is a denial too, so wanting ``deny`` also keeps stops."""


class Tally(Fields):
    """What a summary reports; never anything from the arguments."""

    __slots__ = (
        "passed",
        "denied",
        "errors",
        "duplicates",
        "unparsed_args",
        "results",
        "results_ignored",
        "user_turns",
        "warned",
    )

    def __init__(
        self,
        passed: int = 0,
        denied: int = 0,
        errors: int = 0,
        duplicates: int = 0,
        unparsed_args: int = 0,
        results: int = 0,
        results_ignored: int = 0,
        user_turns: int = 0,
        warned: int = 0,
    ) -> None:
        self.passed = passed
        self.denied = denied
        self.errors = errors
        self.duplicates = duplicates
        self.unparsed_args = unparsed_args
        self.results = results  # results read (progress mode only)
        self.results_ignored = results_ignored  # of those, results that paired with no latest call
        self.user_turns = user_turns  # user turns read (reset_on_user_turn only)
        self.warned = warned  # calls that ran with a warning (a policy's warn_at)

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
            if verdict.warn_at is not None:
                self.warned += 1
        if verdict.duplicate:
            self.duplicates += 1
        if record.args_unparsed:  # type: ignore[union-attr]  # a verdict: a ToolCall
            self.unparsed_args += 1


def judge(
    records: Iterable[Record], brake: LoopBrake, tally: Tally | None = None
) -> Iterator[tuple[Record, Verdict | None]]:
    """Yield each record with its verdict (None for a BadRecord), in input order.

    Results, usage records and user turns are not calls: they pass through with no
    verdict, for the consumers that read them; a user turn is first given to the
    brake (``LoopBrake.user_turn``) and tallied. Under a policy's progress mode each result is
    first given to the brake (``LoopBrake.observe_result``) and tallied; one that
    is not JSON becomes a BadRecord, as a call would. Calls are hashed with
    ``call_digest``, or, from a generator marked by ``plain_records``, its faster
    equal (``fast_observe.digest_for``); a tool whose policy rule has ``args_ignore``
    without those paths (``LoopBrake.digest``). Each call is ``LoopBrake.observe``d,
    or by its faster equal (``fast_observe.observe_for``)."""
    observe = observe_for(brake)  # brake.observe, or its equal built faster
    progress = brake.progress
    digest_of = call_digester(records, brake)
    for record in records:
        # one class look-up per record, compared below; mypy does not narrow ``record``
        # through ``cls``, hence the union-attr ignores
        cls = record.__class__
        if cls is ToolCall:  # the common case first
            try:
                digest = digest_of(record.tool, record.args)  # type: ignore[union-attr]  # cls is ToolCall
            except (JSONInputError, TypeError) as exc:
                record = BadRecord(str(exc), record.line, record.path)
                verdict = None
            else:
                verdict = observe(
                    record.session,  # type: ignore[union-attr]  # cls is ToolCall
                    record.tool,  # type: ignore[union-attr]  # cls is ToolCall
                    digest,
                    record.call_id,  # type: ignore[union-attr]  # cls is ToolCall
                )
            if tally is not None:
                tally.add(record, verdict)
            yield record, verdict
            continue
        if cls is Usage or (cls is ToolResult and not progress):
            yield record, None
            continue
        if cls is UserTurn:
            # cls is UserTurn
            if brake.user_turn(record.session) and tally is not None:  # type: ignore[union-attr]
                tally.user_turns += 1
            yield record, None
            continue
        if cls is ToolResult:
            try:
                paired = brake.observe_result(
                    record.session,  # type: ignore[union-attr]  # cls is ToolResult
                    record.call_id,  # type: ignore[union-attr]  # cls is ToolResult
                    record.result,  # type: ignore[union-attr]  # cls is ToolResult
                    record.digest,  # type: ignore[union-attr]  # cls is ToolResult
                    record.error,  # type: ignore[union-attr]  # cls is ToolResult
                )
            except (JSONInputError, TypeError) as exc:
                record = BadRecord(f"result: {exc}", record.line, record.path)
            else:
                if tally is not None:
                    tally.results += 1
                    tally.results_ignored += not paired
                yield record, None
                continue
        if tally is not None:  # a BadRecord
            tally.add(record, None)
        yield record, None


def call_digester(records: Iterable[Record], brake: LoopBrake) -> Callable[[str, object], bytes]:
    """How ``judge`` hashes the calls of ``records``: ``call_digest``, or ``fast_digest``
    for a stream marked by ``plain_records``; a tool whose policy rule has
    ``args_ignore``, without those paths."""
    digest_of = digest_for(records)
    if brake.ignores_args:  # some tool's calls are counted on a policy hash (args_ignore)
        digest_of = _args_digest(brake.policy, digest_of)
    return digest_of


def _args_digest(policy: Any, digest_of: Callable[[str, object], bytes]) -> Callable[..., bytes]:
    """``digest_of`` under a policy with ``args_ignore``: the paths of the tool's rule are
    removed first (``Policy.args_digest``); other tools' calls hash as before."""

    def digest(tool: str, args: object) -> bytes:
        return policy.args_digest(tool, args, digest_of)

    return digest


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
    for record, verdict in judge(records, brake, tally):
        write_verdict(record, verdict, out, wanted, file)


def write_verdict(
    record: Record,
    verdict: Verdict | None,
    out: LineWriter,
    wanted: Collection[str] = VERDICT_KINDS,
    file: str | None = None,
) -> None:
    """One judged record's line, if it has one of the ``wanted`` kinds: a call's
    verdict, a bad record's error."""
    if verdict is None:
        if "error" in wanted and record.__class__ is BadRecord:
            out.write(error_record(record, file))
    elif (
        ("deny" if verdict.denied else "pass") in wanted
        or (verdict.stop and "stop" in wanted)
        or (verdict.warned and "warn" in wanted)
    ):
        # a verdict: the record is a ToolCall (judge)
        out.write(verdict_record(record, verdict, file))  # type: ignore[arg-type]
