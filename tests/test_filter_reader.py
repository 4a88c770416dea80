"""The line reader under every chunking: what `filter` sees must not depend on how
the bytes arrive (a pipe may deliver one byte at a time, a file 64 KiB)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.reader import BOM, TOO_LONG, Source


class Trickle(io.RawIOBase):
    """A stream that hands out the data in the given chunk sizes, like a slow pipe."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data = data
        self._sizes = sizes or [1]
        self._turn = 0

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        step = self._sizes[self._turn % len(self._sizes)]
        self._turn += 1
        chunk, self._data = self._data[: min(step, size)], self._data[min(step, size) :]
        return chunk

    read = read1


def expected_lines(data: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    """The specification, written plainly: split on LF, drop one CR, skip blanks."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    out: list[tuple[int, bytes | None]] = []
    for number, line in enumerate(pieces, start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > limit:
            out.append((number, TOO_LONG))
        elif line.strip():
            out.append((number, line))
    return out


LINE = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"x")) | st.lists(
    st.sampled_from([b"a", b" ", b"\r", b"\xef", b"\xbb", b"\xbf", b"{}"]), max_size=25
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, max_size=12),
    bom=st.booleans(),
    final_newline=st.booleans(),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    limit=st.integers(1, 24),
)
def test_lines_are_the_same_however_the_bytes_arrive(
    lines: list[bytes], bom: bool, final_newline: bool, sizes: list[int], limit: int
) -> None:
    data = (BOM if bom else b"") + b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    source = Source(Trickle(data, sizes), "test", max_line_bytes=limit)  # type: ignore[arg-type]
    assert list(source.lines()) == expected_lines(data, limit)


def test_on_wait_is_called_before_each_read() -> None:
    events: list[str] = []
    stream = Trickle(b'{"a":1}\n{"b":2}\n', [8])
    source = Source(stream, "test", on_wait=lambda: events.append("wait"))  # type: ignore[arg-type]
    for number, _ in source.lines():
        events.append(f"line {number}")
    assert events == ["wait", "line 1", "wait", "line 2", "wait"]
