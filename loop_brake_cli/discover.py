"""Which files a replay reads: paths as given, directories searched for transcripts.

A directory is walked recursively in sorted order (so a replay's output is the
same on every machine) and yields the files whose names match any registered
format's ``INFO.patterns``, or those patterns plus ``.gz``. Hidden directories
(``.git``, ``.venv``) are skipped. A file named explicitly is always replayed,
whatever its name: the format is decided by its content, not its suffix.
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


def known_patterns() -> tuple[str, ...]:
    """Every registered format's file-name patterns, in registry order, without repeats."""
    from .formats import ADAPTERS

    seen: dict[str, None] = {}
    for module in ADAPTERS:
        for pattern in module.INFO.patterns:
            seen.setdefault(pattern.lower(), None)
    return tuple(seen)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    lowered = name.lower()
    if lowered.endswith(".gz"):
        lowered = lowered[:-3]
    return any(fnmatchcase(lowered, pattern) for pattern in patterns)


def _walk(root: str, patterns: Sequence[str]) -> Iterator[str]:
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and _matches(name, patterns):
                yield os.path.join(top, name)


def discover(paths: Iterable[str], patterns: Sequence[str] | None = None) -> Iterator[Found]:
    """Expand paths in order: ``-`` and files as given, directories searched.

    A directory with no matching file yields one ``Found`` with an error, so the
    caller can report it alongside the files that were replayed.
    """
    wanted = known_patterns() if patterns is None else tuple(p.lower() for p in patterns)
    for path in paths:
        if path != "-" and os.path.isdir(path):
            found = False
            for file in _walk(path, wanted):
                found = True
                yield Found(file)
            if not found:
                shown = ", ".join(wanted)
                yield Found(path, f"no transcript files found (looked for {shown})")
        else:
            yield Found(path)
