"""Lines in and whole lines out over raw file descriptors, for the proxy's pipes."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator

__all__ = ["READ_SIZE", "iter_lines", "write_all"]

READ_SIZE = 1 << 16


def iter_lines(fd: int, read_size: int = READ_SIZE) -> Iterator[bytes]:
    """Lines from a file descriptor, each with its ``\\n``; a last partial line as is.

    ``os.read`` rather than a buffered file: a line of any length is collected
    piecewise (no cap, no quadratic copying), each line is yielded as soon as
    its newline arrives, and a thread blocked here holds no interpreter-level
    lock that would stop the process from exiting. A descriptor the parent left
    non-blocking is waited on rather than taken for end of input.
    """
    pending: list[bytes] = []
    while True:
        try:
            data = os.read(fd, read_size)
        except BlockingIOError:  # a non-blocking descriptor from the parent: wait for data
            select.select([fd], [], [])
            continue
        if not data:
            if pending:
                yield b"".join(pending)
            return
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                if start < len(data):
                    pending.append(data[start:] if start else data)
                break
            piece = data[start : end + 1]
            if pending:
                pending.append(piece)
                yield b"".join(pending)
                pending = []
            else:
                yield piece
            start = end + 1


def write_all(fd: int, data: bytes) -> None:
    """All of ``data``, waiting out a full pipe even on a non-blocking descriptor."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]
