"""Located problems: where in a patch file something is, and the errors and warnings that say so.

Every message is printed as ``file:line:column: message`` so an editor can jump
to it. Messages name keys and the maxRepeats value, never other config values
(they may be secrets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A 1-based place in a file, printed as ``file:line:column``."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


Problem = tuple[Location | None, str]
"""One thing wrong, located when a place is known: ``(location or None, message)``."""


class ConfigError(Exception):
    """One or more located problems that make the composition unusable (exit 2).

    ``problems`` holds ``(location or None, message)`` pairs; ``str()`` is one line
    per problem, ``file:line:column: message``.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(located(loc, msg) for loc, msg in self.problems))


class PluginNotFoundError(ConfigError):
    """The composition has no loop-brake row at all (check-config exits 4)."""


@dataclass(frozen=True)
class ConfigWarning:
    """Something legal but probably not meant; ``--strict`` makes it fail."""

    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return located(self.location, self.message)


def located(loc: Location | None, message: str) -> str:
    """``file:line:column: message``, or the bare message when no place is known."""
    return f"{loc}: {message}" if loc is not None else message
