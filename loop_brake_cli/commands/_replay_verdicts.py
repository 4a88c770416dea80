"""``replay --verdicts``: the filter's verdict lines for saved transcripts (as
``filter --format X`` prints them), each file's format detected as replay detects it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.brake import LoopBrake

if TYPE_CHECKING:
    from ._replay_options import Found, ReplayOptions, Settings


def print_verdicts(
    opts: ReplayOptions, found: Found, settings: Settings, fail: Callable[[str], None]
) -> tuple[bool, int, bool] | None:
    """Verdict lines exactly as ``filter --format X`` prints them.

    (unreadable, calls, denied), or None when every file was skipped."""
    from ..analysis import internal_error
    from ..formats import parse_records
    from ..formats._detect import choose, rereadable, zero_calls
    from ..formats._sniff import head_text
    from ..readers.output import LineWriter
    from ..readers.pipeline import Tally, write_verdicts
    from ..readers.reader import UnreadableInputError, cannot_open, open_source

    files, in_directory = found.files, found.in_directory
    format_name, strict = opts.format_name, opts.strict
    brake = LoopBrake(settings.value, source=settings.source, policy=settings.policy)
    out = LineWriter(sys.stdout.buffer)
    tally = Tally()
    label = len(files) > 1
    unreadable = False
    read = 0
    for index, path in enumerate(files):
        if index and not opts.continue_sessions:
            brake.reset()
        try:
            src = open_source(path, opts.max_line_bytes, on_wait=out.flush)
        except OSError as exc:
            out.flush()
            fail(cannot_open(path, exc))
            unreadable = True
            continue
        file_label = src.name if label else None
        name = format_name
        before, errors = tally.calls, tally.errors
        try:
            choice = choose(src.head(), src.name, format_name, path in in_directory, strict)
            if choice.skip is not None:
                if not choice.quiet:
                    fail(f"{src.name}: skipped: {choice.skip}")
                continue
            read += 1
            if choice.adapter is None:
                out.flush()
                fail(f"{src.name}: {choice.error}")
                unreadable = True
                continue
            name = choice.adapter.INFO.name
            check = choice.check
            mismatch = check.mismatch() if check is not None else None
            if mismatch is not None:  # forced: read all the same, as replay's summary does
                fail(f"{src.name}: {mismatch}")
                unreadable = unreadable or strict
            content = bool(head_text(src.head()))
            records = parse_records(choice.adapter, src, brake.progress, brake.user_turns)
            write_verdicts(records, brake, tally, out, file=file_label)
            said = False
            if check is not None and tally.calls == before:
                if mismatch is not None:
                    unreadable = said = True
                elif (nothing := check.nothing_read()) is not None:
                    out.flush()
                    fail(f"{src.name}: {nothing}")
                    unreadable = said = True
            if tally.calls == before and tally.errors == errors and content and not said:
                out.flush()  # issue 39: a file that gave no tool call is never silent
                zero = zero_calls(name, rereadable(path), src.model_turns)
                fail(f"{src.name}: {zero}" if strict else f"{src.name}: warning: {zero}")
                unreadable = unreadable or strict
        except UnreadableInputError as exc:
            out.flush()
            fail(f"{src.name}: {exc}")
            unreadable = True
        except Exception as exc:  # an adapter's bug: report it, go on with the next file
            out.flush()
            fail(f"{src.name}: {internal_error(name, tally.calls - before, exc)}")
            unreadable = True
        finally:
            src.close()
    out.flush()
    if not read and not unreadable:
        return None
    return unreadable or tally.errors > 0, tally.calls, tally.denied > 0
