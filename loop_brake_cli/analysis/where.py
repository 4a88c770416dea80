"""Where a call is in the input: what every finding of a replay points at.

Its own module because both the report and the per-call timeline hold one, and
the report refers to the timeline: here neither imports the other to name it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Where"]


class Where(NamedTuple):
    """Where a call is: its file, line or JSON path, and its ordinal among the file's calls.

    A named tuple: the analyzer builds one for every call it counts."""

    file: str
    line: int | None
    path: str | None
    call: int

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.path is not None:
            return f"{self.file}:{self.path}"
        return f"{self.file} (call {self.call})"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "call": self.call}
