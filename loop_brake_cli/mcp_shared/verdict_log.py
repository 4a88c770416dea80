"""The ``--log`` file: verdict lines appended, created private, never through a symlink."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from typing import Any

from ..readers.output import json_line
from .pipes import write_all

__all__ = ["LogOpenError", "VerdictLog"]

_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
LOG_MODE = 0o600  # verdicts name tools and sessions: not for other users to read


class LogOpenError(Exception):
    """The ``--log`` file cannot be opened; raised before the server starts."""


class VerdictLog:
    """Verdict lines for the proxy's decisions (``records.verdict_record`` and
    ``error_record`` through ``output.json_line``, as ``replay --verdicts``
    prints them). A write that fails stops logging; the proxy goes on."""

    def __init__(self, path: str | None, note: Callable[[str], None]) -> None:
        self._note = note
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path is None:
            return
        try:
            self._fd = os.open(path, _FLAGS, LOG_MODE)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
                reason = "it is a symbolic link (refusing to write through it)"
            else:
                reason = str(exc.strerror or exc)
            raise LogOpenError(f"{path}: cannot open the log: {reason}") from None

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            if self._fd is None:
                return
            try:
                write_all(self._fd, json_line(record))
            except OSError as exc:
                self._note(f"cannot write the log ({exc.strerror or exc}); logging stopped")
                self._close()

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
