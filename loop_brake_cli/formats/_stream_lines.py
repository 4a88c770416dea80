"""The read loop of the formats written one JSON event a line as an agent works.

Codex's rollout and the headless streams of Codex, Gemini CLI and OpenCode read a
line the same way; only which lines matter and what an event means differ. Most
of their lines are text, reasoning or progress that hold nothing counted, and
finding a few needles in the bytes costs far less than parsing them: a line with
none of its adapter's needles that has the outline of a whole object is passed
over unparsed, while anything that may be truncated or garbled is still parsed,
so that it is reported. Written once here so that every such adapter skips,
locates and reports alike, and keeps only its needles and its ``line``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..core.records import BadRecord, Record, line_too_long
from ..readers.reader import TOO_LONG, Source
from ._common import load_json_line

__all__ = ["event_lines"]


def _skippable(raw: bytes, needed: tuple[bytes, ...]) -> bool:
    """Nothing read in it, and the outline of a whole object (else parse and report)."""
    find = raw.find  # never ``in``: it tries the needle as an integer first (a TypeError)
    for needle in needed:
        if find(needle) >= 0:
            return False
    stripped = raw.strip()
    return stripped[:1] == b"{" and stripped[-1:] == b"}"


def event_lines(
    source: Source,
    needed: tuple[bytes, ...],
    line: Callable[[Any, int], Iterator[Record]],
) -> Iterator[Record]:
    """Stream ``line(value, number)``'s records for each line that may hold one of
    ``needed``, as soon as it is read; a line over the limit or not JSON is a
    located ``BadRecord`` and the stream goes on."""
    for number, raw in source.lines():
        if raw is TOO_LONG:
            yield line_too_long(number, source.max_line_bytes)
            continue
        if _skippable(raw, needed):
            continue
        obj, error = load_json_line(raw)
        if error is not None:
            yield BadRecord(error, number)
            continue
        yield from line(obj, number)
