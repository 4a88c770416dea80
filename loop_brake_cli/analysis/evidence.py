"""A session's evidence for a policy (``replay --suggest-policy``): plain data, no values.

Its own module because the report holds it (``SessionStats.suggest``) and the
analyzer that gathers it (``analysis/suggest.py``) builds the report: here neither
imports the other to name it. Only tool names, printable argument paths and counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Evidence", "NearStreaks", "ToolStreaks"]


@dataclass(slots=True)
class ToolStreaks:
    """One tool's identical streaks that reach maxRepeats, in one session (or added up)."""

    streaks: int = 0
    longest: int = 0
    changing: int = 0
    """Of those, streaks whose results changed between calls."""
    unresulted: int = 0
    """Of those, streaks with fewer than two results paired (no way to tell)."""

    def add(self, other: ToolStreaks) -> None:
        self.streaks += other.streaks
        self.longest = max(self.longest, other.longest)
        self.changing += other.changing
        self.unresulted += other.unresulted


@dataclass(slots=True)
class NearStreaks:
    """Runs of one tool's calls identical but for some paths, reaching maxRepeats."""

    streaks: int = 0
    longest: int = 0

    def add(self, other: NearStreaks) -> None:
        self.streaks += other.streaks
        self.longest = max(self.longest, other.longest)


@dataclass(slots=True)
class Evidence:
    """One session's evidence: ``streaks`` by tool; ``near`` by (tool, printed paths);
    ``withheld`` by tool: near streaks whose paths are not printable; ``textual`` (see
    its docstring)."""

    streaks: dict[str, ToolStreaks] = field(default_factory=dict)
    near: dict[tuple[str, tuple[str, ...]], NearStreaks] = field(default_factory=dict)
    withheld: dict[str, NearStreaks] = field(default_factory=dict)
    textual: dict[str, NearStreaks] = field(default_factory=dict)
    """By tool: near streaks whose varying values are not noise (``NOISE``)."""
