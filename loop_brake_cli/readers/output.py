"""Verdict lines to stdout: buffered for throughput, flushed when input pauses."""

from __future__ import annotations

import json
from typing import Any, BinaryIO

encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON text, non-ASCII kept: the one encoder of every line this tool writes."""


def json_line(obj: dict[str, Any]) -> bytes:
    """One compact JSON line. A lone surrogate (only possible in a tool name or an
    id) is written as its JSON escape, so the line stays valid UTF-8 and JSON."""
    return (encode_json(obj) + "\n").encode("utf-8", "backslashreplace")


class LineWriter:
    """Collects lines and writes them in one call when flushed.

    A write per verdict would cost more than judging the call; the reader's
    ``on_wait`` flushes before any read that may block, so a live stream still
    gets each verdict at once."""

    def __init__(self, stream: BinaryIO, limit: int = 1 << 16) -> None:
        self._stream = stream
        self._parts: list[bytes] = []
        self._size = 0
        self._limit = limit

    def write(self, obj: dict[str, Any]) -> None:
        data = json_line(obj)
        self._parts.append(data)
        self._size += len(data)
        if self._size >= self._limit:
            self.flush()

    def pending(self) -> list[bytes]:
        """The list of encoded lines not yet written: a hot loop may append to it
        directly, provided something calls flush() (the reader's on_wait does)."""
        return self._parts

    def flush(self) -> None:
        if self._parts:
            self._stream.write(b"".join(self._parts))
            self._parts.clear()
            self._size = 0
        self._stream.flush()
