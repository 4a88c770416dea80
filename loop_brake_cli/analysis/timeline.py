"""A session's calls one by one, for pictures of a replay (``replay --html``).

Collected only when asked for (``Analyzer(..., timeline=True)``, ``Job.timeline``,
``replay_files(timeline=True)``): a plain replay keeps constant state per
session, a timeline keeps one small record per call. Each record holds what the
brake saw and decided, never the arguments: the tool name, the 12-hex hash
prefix, the count, the verdict, where the call is, and whether it is wasted (a
call after its streak's first denial; see ``waste``). A call logged twice under
one call id is one call: its copy is not a record here. Streaks are runs of
``count`` 1, 2, 3...; the first denial of a streak is its first ``deny`` or
``stop`` record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .where import Where

__all__ = ["TimelineCall"]


@dataclass(frozen=True, slots=True)
class TimelineCall:
    """One call of a session, in input order (``SessionStats.timeline``)."""

    tool: str
    hash_prefix: str
    count: int
    """The brake's count for it: 1 starts a streak of identical calls."""
    verdict: str
    """``pass``, ``deny``, or ``stop`` (under a policy's ``[stop]``)."""
    where: Where
    """File, line or JSON path, and the call's 1-based ordinal in its file."""
    waste: bool
    """After the first denial of its streak (the tries the brake would have saved)."""
    turn: int | None
    """The 1-based model turn of the session that produced it; None: no usage before it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "hashPrefix": self.hash_prefix,
            "count": self.count,
            "verdict": self.verdict,
            "at": self.where.to_json(),
            "waste": self.waste,
            "turn": self.turn,
        }
