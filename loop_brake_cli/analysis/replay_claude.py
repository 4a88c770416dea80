"""``replay`` of a Claude Code transcript with the C line reader: the same report, less work.

Used by ``replay.replay_file`` where the C reader is built and the run reads only
what it reads of every transcript (``takes``): no results (a policy's progress
mode, ``--suggest``), no user turns, no ``args_ignore``, no forced format that the
file does not look like. Each line goes to ``_event_scan.scan_claude``
(``readers/_claude_scan.h``), which answers for the common assistant line with
its session, message id, model, usage figures and each ``tool_use`` block's name,
id and canonical digest, says None for a line that gives no record (a tool
result, a prompt: most of a transcript's bytes), and hands every other line to
``claude_code.line_records``, the adapter's own reading of it. The records then
go where ``replay_file``'s loop sends them (``pipeline.judge`` and
``Analyzer.add``), in the same order and with the same fields, except that a
call's arguments are never turned into Python objects: its digest comes from C,
equal to ``canonical.call_digest`` (the event reader's proof), and the
``ToolCall`` the analyzer gets has ``args`` None (the analyzer reads its tool,
session, id and place only). ``tests/test_replay_claude_scan.py`` holds both
readings to the same records, and ``bench/replay_outputs.py`` every output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError
from ..core.records import BadRecord, Record, ToolCall, Usage, line_too_long
from ..formats import claude_code
from ..formats._common import RecentIds, TurnUsage
from ..readers.fast_observe import observe_for
from ..readers.reader import TOO_LONG, Source
from .analyzer import Analyzer

try:  # optional: built from _event_scan.c when a C compiler was there at install
    from ..readers._event_scan import scan_claude_lines as _scan_claude
except ImportError:  # pragma: no cover - exercised where the extension is not built
    _scan_claude = None

__all__ = ["replay_lines", "takes"]

USAGE = "$.message.usage"  # where a turn's figures are


def takes(adapter: Any, brake: LoopBrake, results: bool, mismatch: str | None) -> bool:
    """Whether ``replay_lines`` reads this file for this run (module docstring); not
    with ``LOOP_BRAKE_PURE_PYTHON`` set (to compare the paths, and to measure)."""
    from ..readers.fast_canonical import AVAILABLE  # orjson: line_records reads with it

    return (
        _scan_claude is not None
        and AVAILABLE
        and adapter is claude_code
        and not results
        and mismatch is None
        and brake.store is None
        and not brake.user_turns
        and not brake.ignores_args
        and not os.environ.get("LOOP_BRAKE_PURE_PYTHON")
    )


def replay_lines(
    source: Source,
    brake: LoopBrake,
    analyzer: Analyzer,
    on_progress: Callable[[], None] | None = None,
) -> None:
    """Replay the lines of a Claude Code transcript into ``analyzer`` (``takes`` said yes):
    each line's records judged and added as ``replay_file``'s loop does."""
    from ..readers.fast_canonical import fast_digest

    scan = _scan_claude
    assert scan is not None, "takes() first"
    add = analyzer.add
    observe = observe_for(brake)
    seen, turns = RecentIds(), TurnUsage()
    seen_call = seen.seen
    turns_get, remember, merge_usage = turns.get, turns.remember, claude_code.merge_usage
    if on_progress is not None:
        add = _counted(add, on_progress)
    number = 1  # the next line's
    for data in source.bodies():
        if data is TOO_LONG:
            add(line_too_long(number, source.max_line_bytes), None)
            number += 1
            continue
        found, number = scan(data, number)
        for item in found:
            if len(item) == 2:  # (number, line): the adapter reads it
                # mypy does not narrow the union of tuples by len(): item[1] is the line
                _declined(item[1], item[0], seen, turns, add, observe, fast_digest)  # type: ignore[arg-type]
                continue
            # a line read in C (six items): mypy does not narrow the union by len()
            line, session, turn, model, figures, calls = item  # type: ignore[misc]
            if figures is not None:  # claude_code._usage, for figures read in C
                key = (session, turn)
                if turn is None or (earlier := turns_get(key)) is None:
                    given, output, read, written = figures
                    usage = Usage(
                        session, turn, model, given, output, read, written, None, line, USAGE
                    )
                    if turn is not None:
                        remember(key, usage)
                    add(usage, None)
                else:  # a later line of a split response: no new record
                    merge_usage(earlier, figures)
            for path, tool, call_id, digest in calls:
                if call_id is not None and seen_call(call_id):
                    continue  # a split response's block written again
                add(
                    ToolCall(tool, None, session, call_id, line, path),
                    observe(session, tool, digest, call_id),
                )


def _counted(
    add: Callable[[Record, Any], None], on_progress: Callable[[], None]
) -> Callable[[Record, Any], None]:
    """``add`` that calls ``on_progress`` after every 1,024th record, as ``replay_file``'s
    loop over judged records does."""
    added = 0

    def counted(record: Record, verdict: Any) -> None:
        nonlocal added
        add(record, verdict)
        added += 1
        if not added & 1023:
            on_progress()

    return counted


def _declined(
    raw: bytes,
    number: int,
    seen: RecentIds,
    turns: TurnUsage,
    add: Callable[[Record, Any], None],
    observe: Callable[..., Any],
    digest_of: Callable[[str, object], bytes],
) -> None:
    """A line the C reader declined: the adapter's records of it, judged as
    ``pipeline.judge`` judges them (a call whose arguments cannot be hashed becomes
    the BadRecord judge makes of it)."""
    for record in claude_code.line_records(raw, number, seen, turns):
        if record.__class__ is ToolCall:
            call: Any = record
            try:
                digest = digest_of(call.tool, call.args)
            except (JSONInputError, TypeError) as exc:
                add(BadRecord(str(exc), call.line, call.path), None)
                continue
            add(call, observe(call.session, call.tool, digest, call.call_id))
        else:  # a Usage or a BadRecord (no results, no user turns here): no verdict
            add(record, None)
