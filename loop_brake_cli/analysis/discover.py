"""Which files a replay reads: paths as given, directories searched for transcripts.

A directory is walked recursively in sorted order (so a replay's output is the
same on every machine) and yields the files whose names match any registered
format's ``INFO.patterns``, or those patterns plus ``.gz``. Hidden directories
(``.git``, ``.venv``) are skipped, and so is anything that is not a regular
file (a FIFO, a socket, a device). A file named explicitly is always replayed,
whatever its name: the format is decided by its content, not its suffix.
A file found in a directory is marked ``in_directory``: replay skips it, with
one line, when it turns out not to be a transcript.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["Found", "discover", "known_patterns"]


@dataclass(frozen=True, slots=True)
class Found:
    """A file to replay, or (``error`` set) a path that yielded nothing to replay."""

    path: str
    error: str | None = None
    in_directory: bool = False


def known_patterns() -> tuple[str, ...]:
    """Every registered format's file-name patterns, in registry order, without repeats,
    then the datasets of runs (``corpus/``) that are no line format: ``*.parquet``."""
    from ..formats import ADAPTERS

    seen: dict[str, None] = {}
    for module in ADAPTERS:
        for pattern in module.INFO.patterns:
            seen.setdefault(pattern.lower(), None)
    seen.setdefault("*.parquet", None)
    return tuple(seen)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    lowered = name.lower()
    if lowered.endswith(".gz"):
        lowered = lowered[:-3]
    return any(fnmatchcase(lowered, pattern) for pattern in patterns)


def _walk(root: str, patterns: Sequence[str]) -> Iterator[str]:
    """Files under root in path order (a directory's entries sorted by name, files and
    subdirectories together), so the order is the same on every machine."""
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            yield from _walk(entry.path, patterns)
        elif _matches(entry.name, patterns) and _is_regular(entry):
            yield entry.path


def _is_regular(entry: os.DirEntry[str]) -> bool:
    """Only regular files (or links to one) are read from a directory: opening a
    FIFO or a device found there would block or never end."""
    try:
        return entry.is_file()
    except OSError:
        return False


def discover(paths: Iterable[str], patterns: Sequence[str] | None = None) -> Iterator[Found]:
    """Expand paths in order: ``-`` and files as given, directories searched.

    A directory with no matching file yields one ``Found`` with an error, so the
    caller can report it alongside the files that were replayed.
    """
    wanted = None if patterns is None else tuple(p.lower() for p in patterns)
    for path in paths:
        if path != "-" and os.path.isdir(path):
            if wanted is None:  # imports every adapter: only once a directory is searched
                wanted = known_patterns()
            found = False
            for file in _walk(path, wanted):
                found = True
                yield Found(file, in_directory=True)
            if not found:
                shown = ", ".join(wanted)
                yield Found(path, f"no transcript files found (looked for {shown})")
        else:
            yield Found(path)
