"""The proxy's own standard streams, checked before anything is opened or started.

A caller may start the proxy with a standard descriptor closed (``<&-``,
``>&-``, ``2>&-``). A closed descriptor number is the first one the next
``open`` or ``pipe`` returns, so without care the ``--log`` file or one of the
server's pipes would become "stderr": the proxy's notes would be written
into the log, and the server would inherit a stray pipe as its stderr. So:

* stdout (the client's side of the protocol) must be open for writing, else
  the server is not started (``OutputError``; the command exits 5);
* a closed stdin is end of input: ``/dev/null`` takes its place, the client
  has disconnected before saying anything, and the proxy shuts the server
  down as after any client EOF (the server's exit status);
* a closed stderr stays closed in effect: ``/dev/null`` takes its place, so
  the proxy's notes and the server's stderr go nowhere, as asked.
"""

from __future__ import annotations

import errno
import os

__all__ = ["OutputError", "fill_closed", "output_problem", "quiet_write_error"]


class OutputError(Exception):
    """Standard output cannot take the client's lines; the message says why."""


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def output_problem(fd: int) -> str | None:
    """Why ``fd`` cannot be written to (closed, or open read-only), or None."""
    if not _is_open(fd):
        return "it is closed"
    try:
        import fcntl
    except ImportError:  # Windows: no access-mode check
        return None
    try:
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError:
        return "it is closed"
    if mode == os.O_RDONLY:
        return "it is open for reading only"
    return None


def fill_closed(fds: tuple[int, ...] = (0, 2)) -> None:
    """Put ``/dev/null`` on each of ``fds`` that is closed (read-only for 0)."""
    for fd in fds:
        if _is_open(fd):
            continue
        flags = os.O_RDONLY if fd == 0 else os.O_WRONLY
        opened = os.open(os.devnull, flags)
        if opened != fd:
            os.dup2(opened, fd, inheritable=True)
            os.close(opened)
        else:
            os.set_inheritable(fd, True)


def quiet_write_error(exc: OSError) -> bool:
    """A client that went away (broken pipe, reset): not a failure worth a word."""
    return exc.errno in (errno.EPIPE, errno.ECONNRESET)
