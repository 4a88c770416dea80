"""The hook's standard streams: closed, full or size-limited ones never raise past here.

An agent runs the hook with pipes, but a hook command can also be run with a
stream closed (``<&-``, ``>&-``), pointed at ``/dev/full``, or under
``ulimit -f``. So the hook reads and writes the raw descriptors, never
Python's buffered ``sys.stdout`` (whose flush at exit would fail with a
traceback and status 120), and a descriptor that was closed at start-up is
filled with ``/dev/null`` first: no file the hook opens (the store, the log)
can take its number and receive the deny JSON meant for stdout. Writing to a
stdout that was closed fails like any other write; stderr never fails (a line
that cannot be written is dropped). Input is read up to a limit plus one byte
and never held beyond that; of an input over the limit only the first chunk
is kept (``head``), to tell a post-tool event, which is never denied.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

__all__ = ["Streams"]

_CHUNK = 1 << 16


def _fill_closed_descriptors() -> tuple[bool, bool, bool]:
    """Which of 0, 1, 2 were closed; each closed one now holds ``/dev/null``."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(True)
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        else:
            closed.append(False)
    return closed[0], closed[1], closed[2]


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Streams:
    """stdin, stdout and stderr: the process's descriptors, or the files given (tests)."""

    def __init__(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self._files = (stdin, stdout, stderr)
        if stdin is None or stdout is None or stderr is None:
            self.closed = _fill_closed_descriptors()
        else:
            self.closed = (False, False, False)
        self.stdin_closed = stdin is None and self.closed[0]
        self.head = b""  # the first chunk read of the input

    def stdin_is_tty(self) -> bool:
        stdin = self._files[0]
        try:
            return stdin.isatty() if stdin is not None else os.isatty(0)
        except (OSError, ValueError):
            return False

    def _read(self, size: int) -> bytes:
        stdin = self._files[0]
        return stdin.read(size) if stdin is not None else os.read(0, size)

    def read_input(self, limit: int) -> bytes | None:
        """All of stdin, or None once it is longer than ``limit`` bytes (at most
        ``limit + 1`` bytes are read). Raises OSError if stdin cannot be read."""
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = self._read(min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                self.head = chunks[0]
                return None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def out(self, data: bytes) -> None:
        """Write all of ``data`` to stdout; OSError (with a readable ``strerror``) if not."""
        stdout = self._files[1]
        if stdout is None and self.closed[1]:
            raise OSError(errno.EBADF, "stdout is closed")
        try:
            if stdout is None:
                _write_fd(1, data)
            else:
                stdout.write(data)
                stdout.flush()
        except ValueError:  # a closed file object
            raise OSError(errno.EBADF, "stdout is closed") from None

    def err(self, text: str) -> None:
        """Write ``text`` to stderr if it can be written; never raises."""
        stderr = self._files[2]
        try:
            if stderr is None:
                _write_fd(2, text.encode("utf-8", "backslashreplace"))
            else:
                stderr.write(text)
                stderr.flush()
        except (OSError, ValueError):
            pass
