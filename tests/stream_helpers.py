"""What the line-reader tests (test_filter_reader.py, test_fuzz.py) share: a stream that
hands out bytes in chunks of given sizes, like a pipe, and the reader's specification."""

from __future__ import annotations

import io

from loop_brake_cli.readers.reader import BOM, TOO_LONG


class ChunkedStream(io.RawIOBase):
    """A stream whose reads return the given chunk sizes in turn, like a pipe does."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data = data
        self._pos = 0
        self._sizes = sizes or [1 << 16]
        self._turn = 0

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        step = self._sizes[self._turn % len(self._sizes)]
        self._turn += 1
        step = min(step, size) if size and size > 0 else step
        chunk = self._data[self._pos : self._pos + step]
        self._pos += len(chunk)
        return chunk

    read = read1


def expected_lines(data: bytes, limit: int) -> tuple[list[tuple[int, bytes | None]], int]:
    """The specification, written plainly: what ``Source.lines()`` must yield (split on LF,
    drop one CR, skip blanks, TOO_LONG past ``limit``), and how many lines there are."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()  # a final newline ends the last line; it starts no new one
    out: list[tuple[int, bytes | None]] = []
    for number, piece in enumerate(pieces, 1):
        line = piece[:-1] if piece.endswith(b"\r") else piece
        if len(line) > limit:
            out.append((number, TOO_LONG))
        elif line.strip(b" \t\r\n"):  # only JSON whitespace is blank
            out.append((number, line))
    return out, len(pieces)
