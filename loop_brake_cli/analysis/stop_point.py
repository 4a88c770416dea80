"""Where a run would have been stopped at one maxRepeats (``analysis/stops.py`` finds it).

Its own module because the report holds them (``SessionStats.stops``) and the analyzer
that finds them builds the report: here neither imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .waste import Cost
from .where import Where

__all__ = ["StopPoint"]


@dataclass(slots=True)
class StopPoint:
    """Where a session would have been stopped at one maxRepeats."""

    call: int
    """The session's calls (call-id duplicates not counted) up to the stop call, itself
    included: the calls after it are the session's calls minus this."""
    turn: int
    """The session's model turns begun by then (0: none recorded yet)."""
    where: Where
    """The stop call."""
    saved: Cost = field(default_factory=Cost)
    """The turns begun after the stop call, and their tokens."""

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "turn": self.turn, "at": self.where.to_json()}
