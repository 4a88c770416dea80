"""The line reader under every chunking: what `filter` sees must not depend on how
the bytes arrive (a pipe may deliver one byte at a time, a file 64 KiB)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from stream_helpers import ChunkedStream, expected_lines

from loop_brake_cli.readers.reader import BOM, Source

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
    source = Source(ChunkedStream(data, sizes), "test", max_line_bytes=limit)  # type: ignore[arg-type]
    assert list(source.lines()) == expected_lines(data, limit)[0]


def test_on_wait_is_called_before_each_read() -> None:
    events: list[str] = []
    stream = ChunkedStream(b'{"a":1}\n{"b":2}\n', [8])
    source = Source(stream, "test", on_wait=lambda: events.append("wait"))  # type: ignore[arg-type]
    for number, _ in source.lines():
        events.append(f"line {number}")
    assert events == ["wait", "line 1", "wait", "line 2", "wait"]
