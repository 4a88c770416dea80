"""Reading and replacing an agent's settings file for ``hook install``, safely.

* Only a regular file (or a symbolic link to one) is read: ``os.stat`` decides
  before anything is opened, and the open itself is non-blocking and checked
  again with ``fstat``, so a FIFO, a device or a directory at the settings path
  is refused and never blocks.
* A symbolic link is kept: the file it points to is what gets replaced.
* The new text replaces the file atomically: a temporary file in the same
  directory as the file really written (the link's target), with that file's
  mode (and owner, where permitted), flushed to disk, then renamed over it.
* A read-only file (no write permission bit, or not writable by this user) is
  refused, never chmodded: the permission is the owner's decision.
* The original bytes are kept first as ``<path>.bak-<timestamp>`` next to the
  path given (a regular file, with the original's mode), and the file is
  checked to be unchanged since it was read.

Every refusal is a ``SettingsFileError`` whose message says what and why.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from dataclasses import dataclass

from ..core.small_file import file_kind

__all__ = ["SettingsFile", "SettingsFileError", "read_settings", "replace_settings"]

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
_BACKUP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


class SettingsFileError(Exception):
    """A settings file that is not read or not replaced; it is left untouched."""


@dataclass(frozen=True)
class SettingsFile:
    """A settings file as read: the path given, the file really read, its bytes."""

    path: str
    target: str  # ``path`` itself, or the file a symbolic link at ``path`` points to
    data: bytes
    status: os.stat_result | None  # None: there was no file

    @property
    def existed(self) -> bool:
        return self.status is not None


def _reason(exc: OSError) -> str:
    return str(exc.strerror or exc.__class__.__name__)


def read_settings(path: str) -> SettingsFile:
    """The settings file at ``path``, or an empty one if there is none."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise SettingsFileError(
                f"{path} is a symbolic link to a file that does not exist: left untouched"
            ) from None
        return SettingsFile(path, path, b"", None)
    except OSError as exc:
        raise SettingsFileError(f"cannot read {path}: {_reason(exc)}") from None
    if not stat.S_ISREG(status.st_mode):
        raise SettingsFileError(
            f"{path} is {file_kind(status.st_mode)}, not a settings file: left untouched"
        )
    target = os.path.realpath(path)
    try:
        fd = os.open(target, _READ_FLAGS)
    except OSError as exc:
        raise SettingsFileError(f"cannot read {path}: {_reason(exc)}") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):  # swapped since the first look
            raise SettingsFileError(f"{path} is {file_kind(status.st_mode)}: left untouched")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise SettingsFileError(f"cannot read {path}: {_reason(exc)}") from None
    finally:
        os.close(fd)
    return SettingsFile(path, target, b"".join(chunks), status)


def read_only(settings: SettingsFile) -> bool:
    """No write permission bit at all, or not writable by this user.

    The bits are checked too because root may write anything: a file made
    read-only (``chmod a-w``) says "do not change me" to root as well."""
    status = settings.status
    if status is None:
        return False
    return not status.st_mode & 0o222 or not os.access(settings.target, os.W_OK)


def _unchanged(settings: SettingsFile) -> bool:
    try:
        now = os.stat(settings.target)
    except OSError:
        return False
    before = settings.status
    assert before is not None
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
        before.st_dev,
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def _write_backup(settings: SettingsFile) -> str:
    """The original bytes next to the path given, as a new regular file."""
    assert settings.status is not None
    stamp = time.strftime("%Y%m%dT%H%M%S")
    n = 1
    while True:
        backup = f"{settings.path}.bak-{stamp}" + (f"-{n}" if n > 1 else "")
        try:
            fd = os.open(backup, _BACKUP_FLAGS, 0o600)
            break
        except FileExistsError:
            n += 1
    try:
        os.fchmod(fd, stat.S_IMODE(settings.status.st_mode))
        _write_all(fd, settings.data)
    except BaseException:
        os.close(fd)
        os.unlink(backup)
        raise
    os.close(fd)
    os.utime(backup, ns=(settings.status.st_atime_ns, settings.status.st_mtime_ns))
    return backup


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def replace_settings(settings: SettingsFile, data: bytes) -> str | None:
    """Write ``data`` in place of the settings file; returns the backup's path (if any).

    Raises SettingsFileError (read-only, changed meanwhile) or OSError (the
    directory cannot take the new file, a full disk...); in every failure the
    file is as it was, and no backup or temporary file is left behind."""
    status = settings.status
    if status is not None and read_only(settings):
        raise SettingsFileError(
            f"{settings.path} is read-only: left untouched (make it writable to install, "
            "or add the entry yourself)"
        )
    directory = os.path.dirname(settings.target) or "."
    if status is None:
        os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".loop-brake-", dir=directory)
    backup = None
    try:
        try:
            if status is not None:
                os.fchmod(fd, stat.S_IMODE(status.st_mode))
                try:
                    os.fchown(fd, status.st_uid, status.st_gid)
                except OSError:
                    pass  # not permitted: the file becomes this user's, as any editor's would
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if status is not None:
            if not _unchanged(settings):
                raise SettingsFileError(
                    f"{settings.path} changed while it was being edited: left as it is now; "
                    "run install again"
                )
            backup = _write_backup(settings)
        os.replace(tmp, settings.target)
    except BaseException:
        for leftover in (tmp, backup):
            if leftover is not None:
                try:
                    os.unlink(leftover)
                except OSError:
                    pass
        raise
    return backup
