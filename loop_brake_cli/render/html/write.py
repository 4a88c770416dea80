"""Writing the page: to standard output for ``-``, else atomically to its file.

A reader of FILE (a browser reloading it, a CI artifact step) sees the old page or
the new one, never half of one: the page goes to a temporary file in the same
directory, is flushed to disk, and renamed over FILE. A failure removes the
temporary file and leaves FILE as it was.
"""

from __future__ import annotations

import os
import sys
import tempfile


class HtmlWriteError(Exception):
    """FILE could not be written; the message names it and why, nothing else."""


def write_html(text: str, target: str) -> None:
    """Write ``text`` to ``target`` (``-``: standard output)."""
    data = text.encode("utf-8")
    if target == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    folder = os.path.dirname(target) or "."
    try:
        fd, temp = tempfile.mkstemp(
            dir=folder, prefix="." + os.path.basename(target) + ".", suffix=".tmp"
        )
    except OSError as exc:
        raise HtmlWriteError(f"cannot write {target}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o666 & ~_umask())  # what open() would have given a new file
        os.replace(temp, target)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise HtmlWriteError(f"cannot write {target}: {_reason(exc)}") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__
