"""Bytes in, located lines out: streaming, bounded, and live-friendly.

A ``Source`` wraps one input (a file, ``.gz`` transparently, or a pipe). Its
``lines()`` reads in chunks as they arrive and calls ``on_wait`` before every
read that may block, which is where the CLI flushes its output: a verdict is
written before the tool waits for more input, yet bulk input is not flushed
line by line. A line longer than ``max_line_bytes`` is reported as too long and
skipped without ever holding more than that many bytes of it in memory.
"""

from __future__ import annotations

import errno
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from gzip import GzipFile

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "Line",
    "Source",
    "TOO_LONG",
    "UnreadableInputError",
    "cannot_open",
    "open_source",
]

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
CHUNK_SIZE = 1 << 16
JSON_WHITESPACE = b" \t\r\n"  # a line of only these is blank; \x0b or \x0c is content
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"

TOO_LONG = None
"""The payload of a line that exceeded the limit (its number is still reported)."""

Line = tuple[int, bytes | None]


def _never() -> None:
    return None


class UnreadableInputError(OSError):
    """The input itself failed (I/O error, corrupt gzip); the message names no content."""


def _read_chunk(stream: BinaryIO | GzipFile, size: int) -> bytes:
    reader = getattr(stream, "read1", None)
    try:
        return reader(size) if reader is not None else stream.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise UnreadableInputError(f"{exc.__class__.__name__}: {exc}") from None


class Source:
    """One input stream with a display name (``-`` is stdin)."""

    def __init__(
        self,
        stream: BinaryIO | GzipFile,  # GzipFile: a gzipped file, read through (open_source)
        name: str,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_wait: Callable[[], None] = _never,
        head_bytes: bytes = b"",
        bytes_read: int = 0,
        underlying: BinaryIO | None = None,
    ) -> None:
        self.stream = stream
        self.name = name
        self.max_line_bytes = max_line_bytes
        self.on_wait = on_wait
        self.head_bytes = head_bytes
        self.bytes_read = bytes_read
        self.underlying = underlying
        # Whether the reader wants ToolResult records: an adapter may leave them out
        # (and skip the lines that hold only results) when not. True for a library
        # caller, so ``adapter.parse(source)`` yields every record the format holds;
        # ``formats.parse_records`` sets it to what the run uses (a progress mode).
        self.results = True
        # Whether the reader wants UserTurn records (a policy's reset_on_user_turn, set by
        # ``formats.parse_records``): adapters yield them only then, so a library caller
        # and every run without that key see exactly the records they saw before.
        self.user_turns = False
        # How many model messages (assistant turns) an adapter read, where it counts them:
        # a file that gives no tool call says so with what was read (analysis/replay.py).
        self.model_turns = 0

    def close(self) -> None:
        if self.name != "<stdin>":
            self.stream.close()
            if self.underlying is not None:
                self.underlying.close()

    def _read(self) -> bytes:
        if self.head_bytes:
            data, self.head_bytes = self.head_bytes, b""
            return data
        self.on_wait()
        data = _read_chunk(self.stream, CHUNK_SIZE)
        self.bytes_read += len(data)
        return data

    def head(self, size: int = CHUNK_SIZE) -> bytes:
        """Peek at the start of the input (for format detection) without consuming it."""
        while len(self.head_bytes) < size:
            data = _read_chunk(self.stream, size)
            if not data:
                break
            self.bytes_read += len(data)
            self.head_bytes += data
        return self.head_bytes[:size]

    def read_all(self) -> bytes:
        """The whole input, for formats that are one JSON document."""
        parts = []
        while True:
            data = self._read()
            if not data:
                break
            parts.append(data)
        data = b"".join(parts)
        return data[3:] if data.startswith(BOM) else data

    def _chunks(self) -> Iterator[bytes]:
        """The input's chunks, a byte-order mark dropped from the first (``lines`` and
        ``bodies`` both read them)."""
        chunk = self._read()
        # The first chunk may be shorter than the BOM (the gzip sniff reads 2 bytes).
        while chunk and len(chunk) < len(BOM) and BOM.startswith(chunk):
            more = self._read()
            if not more:
                break
            chunk += more
        if chunk.startswith(BOM):
            chunk = chunk[3:] or self._read()  # a first read of the BOM alone
        while chunk:
            yield chunk
            chunk = self._read()

    def lines(self) -> Iterator[Line]:
        """Yield (line number, bytes without the line ending); blank lines are skipped."""
        limit = self.max_line_bytes
        number = 0
        pending = bytearray()  # a line's start, grown in place (long lines stay linear)
        skipping = False  # inside a line already reported as too long
        for chunk in self._chunks():
            start = 0
            end = chunk.find(b"\n")
            if end >= 0:  # the first line may continue one from earlier chunks
                number += 1
                if skipping:
                    skipping = False
                else:
                    if pending:
                        pending += chunk[start:end]
                        line = bytes(pending)
                        pending.clear()
                    else:
                        line = chunk[start:end]
                    if (payload := _payload(line, limit)) is not _BLANK:
                        yield number, payload
                start = end + 1
                last = chunk.rfind(b"\n")
                if last >= start:  # the chunk's other complete lines, split in one call
                    body = chunk[start:last]
                    parts = body.split(b"\n")
                    # The common case, with no work per line: none can be too long, none
                    # ends in CR, and none is blank (every first byte is above the space,
                    # which every JSON whitespace byte is not).
                    if len(body) <= limit and body.find(b"\r") < 0 and min(parts)[:1] > b" ":
                        yield from enumerate(parts, number + 1)
                        number += len(parts)
                    else:
                        for line in parts:
                            number += 1
                            if (payload := _payload(line, limit)) is not _BLANK:
                                yield number, payload
                    start = last + 1
            if skipping:
                continue
            rest = chunk[start:]
            if len(pending) + len(rest) > limit + 1:
                pending.clear()
                skipping = True
                yield number + 1, TOO_LONG
            elif rest:
                pending += rest
        if pending and not skipping:
            number += 1
            if (payload := _payload(bytes(pending), limit)) is not _BLANK:
                yield number, payload

    def bodies(self) -> Iterator[bytes | None]:
        """``lines`` for a caller that splits and numbers lines itself (replay's C reader
        of Claude Code transcripts, ``_claude_scan.h``): one or more lines joined by
        ``\n``, each as read (a CR before its end kept, a blank line kept: the caller
        drops the one and skips the other, as ``lines`` does), or ``TOO_LONG`` for one
        line over the limit. Every line given is within the limit; line numbers run on
        through the yields, one per ``\n``-separated part (or ``TOO_LONG``). Most of a
        chunk is one yield, so no ``bytes`` object is made per line."""
        limit = self.max_line_bytes
        pending = bytearray()
        skipping = False
        for chunk in self._chunks():
            start = 0
            end = chunk.find(b"\n")
            if end >= 0:  # the first line may continue one from earlier chunks
                if skipping:
                    skipping = False
                else:
                    if pending:
                        pending += chunk[:end]
                        line = bytes(pending)
                        pending.clear()
                    else:
                        line = chunk[:end]
                    yield _within(line, limit)
                start = end + 1
                last = chunk.rfind(b"\n")
                if last >= start:  # the chunk's other complete lines, in one yield
                    body = chunk[start:last]
                    if len(body) <= limit:
                        yield body
                    else:
                        for line in body.split(b"\n"):
                            yield _within(line, limit)
                    start = last + 1
            if skipping:
                continue
            rest = chunk[start:]
            if len(pending) + len(rest) > limit + 1:
                pending.clear()
                skipping = True
                yield TOO_LONG
            elif rest:
                pending += rest
        if pending and not skipping:
            yield _within(bytes(pending), limit)


_BLANK = b""


def _within(line: bytes, limit: int) -> bytes | None:
    """``line`` when within the limit once a CR at its end is dropped (as ``_payload``
    counts it), else ``TOO_LONG``."""
    return TOO_LONG if len(line) - (line[-1:] == b"\r") > limit else line


def _payload(line: bytes, limit: int) -> bytes | None:
    """What ``lines`` yields for one line: the line without its CR, ``TOO_LONG`` past
    the limit, or ``_BLANK`` (not yielded) when only JSON whitespace."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) > limit:
        return TOO_LONG
    return line if line.strip(JSON_WHITESPACE) else _BLANK


def open_source(
    path: str,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_wait: Callable[[], None] = _never,
    stdin: BinaryIO | None = None,
) -> Source:
    """Open a path (``-`` for stdin); gzip is detected by its magic bytes.

    Raises OSError for an unreadable path; the caller reports it with the name.
    """
    if path == "-":
        import sys

        if stdin is None and sys.stdin is None:  # started with fd 0 closed (``<&-``)
            raise OSError(errno.EBADF, "standard input is closed", "<stdin>")
        raw: BinaryIO = stdin if stdin is not None else sys.stdin.buffer
        name = "<stdin>"
    else:
        raw = open(path, "rb")  # closed by Source.close
        name = path
    source = Source(raw, name, max_line_bytes, on_wait)
    if path != "-" and source.head(2) == GZIP_MAGIC:
        import gzip  # only for a gzipped input: start-up is paid on every small run

        raw.seek(0)
        unzipped = gzip.GzipFile(fileobj=raw, mode="rb")
        source = Source(unzipped, name, max_line_bytes, on_wait, underlying=raw)
    return source


def cannot_open(path: str, exc: OSError) -> str:
    """What to say when ``open_source(path)`` raised: ``cannot open NAME: reason``."""
    shown = "<stdin>" if path == "-" else path
    return f"cannot open {shown}: {exc.strerror or exc.__class__.__name__}"
