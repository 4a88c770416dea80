"""Sniffing helpers shared by the line-based adapters: look at whole lines only.

The head is the first 64 KiB of a file and may end mid-line, so the last piece
is ignored unless the file is shorter than the head. Nothing here raises.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Any

from ..canonical import JSONInputError, parse_json

__all__ = ["RecentIds", "head_lines", "head_objects"]

BOM = b"\xef\xbb\xbf"


def head_lines(head: bytes, limit: int = 200) -> Iterator[bytes]:
    """The complete, non-blank lines of a file's head (at most ``limit``)."""
    if head.startswith(BOM):
        head = head[3:]
    lines = head.split(b"\n")
    if len(head) >= 1 << 16 and not head.endswith(b"\n"):
        lines = lines[:-1]  # cut mid-line by the sniff window
    count = 0
    for line in lines:
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        yield line
        count += 1
        if count >= limit:
            return


def head_objects(head: bytes, limit: int = 200) -> Iterator[dict[str, Any]]:
    """The JSON objects among the head's complete lines; other lines are skipped."""
    for line in head_lines(head, limit):
        if not line.lstrip().startswith(b"{"):
            continue
        try:
            obj = parse_json(line)
        except JSONInputError:
            continue
        if isinstance(obj, dict):
            yield obj


class RecentIds:
    """A bounded set of recently seen ids: de-duplication in constant memory.

    Formats that record one call more than once do so close together (the same
    response split over lines, a log written twice), so remembering the last
    few thousand ids is enough and a long live session never grows memory.
    """

    def __init__(self, size: int = 8192) -> None:
        self._ids: OrderedDict[Hashable, None] = OrderedDict()
        self._size = size

    def seen(self, key: Hashable) -> bool:
        """True if ``key`` was seen before; otherwise remember it and return False."""
        if key in self._ids:
            self._ids.move_to_end(key)
            return True
        self._ids[key] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return False
