"""The small files a user names (a policy, prices, a harness patch): read bounded and
never blocking, because a path may name ``/dev/zero``, a FIFO no one writes to, or a
file far larger than any real one, and each must be a prompt, named error."""

from __future__ import annotations

import os
import stat

__all__ = ["NONBLOCKING_READ", "SmallFileError", "file_kind", "read_small_file"]

NONBLOCKING_READ = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
)
"""``os.open`` flags that never wait: a FIFO opens at once (a plain open waits for a
writer), a terminal is not made the controlling one."""


class SmallFileError(Exception):
    """Why the file was not read; the message names the file by ``what`` (the caller
    adds the path). ``unreadable``: it could not be opened or read, as against a file
    that is there but is not one this reader takes (a directory, a device, too large)."""

    def __init__(self, message: str, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_small_file(path: str, what: str, limit: int) -> bytes:
    """The bytes of the regular file (or a link to one) at ``path``, at most ``limit``
    of them; else ``SmallFileError``. Opened non-blocking, so a FIFO (whose plain open
    waits for a writer) or a device is refused at once."""
    try:
        fd = os.open(path, NONBLOCKING_READ)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise SmallFileError(f"cannot open the {what}: {reason}", unreadable=True) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise SmallFileError(f"the {what} is {file_kind(status.st_mode)}, not a regular file")
        if status.st_size > limit:
            raise SmallFileError(f"the {what} is larger than {limit} bytes ({status.st_size})")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise SmallFileError(f"cannot read the {what}: {reason}", unreadable=True) from None
    finally:
        os.close(fd)
    if size > limit:  # grew while it was read
        raise SmallFileError(f"the {what} is larger than {limit} bytes")
    return b"".join(chunks)
