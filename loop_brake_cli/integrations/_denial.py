"""What every integration hands over with a denial, besides the core's text, and the brake
it counts with."""

from __future__ import annotations

from typing import Any

from ..brake import LoopBrake
from ..verdicts import CODE, PLUGIN, Verdict

META_KEY = "loop-brake/denial"
"""The key of the structured denial where a framework carries metadata (MCP ``_meta``)."""


def denial_fields(verdict: Verdict) -> dict[str, Any]:
    """The denial as data, named as in the verdict lines: never the arguments."""
    return {
        "code": CODE,
        "plugin": PLUGIN,
        "toolName": verdict.tool_name,
        "count": verdict.count,
        "maxRepeats": verdict.max_repeats,
        "hashPrefix": verdict.hash_prefix,
    }


def make_brake(brake: LoopBrake | None, max_repeats: object) -> LoopBrake:
    """The given ``brake``, else a new one with ``max_repeats``: never both."""
    if brake is not None and max_repeats is not None:
        raise ValueError("give either brake or max_repeats, not both")
    return LoopBrake(max_repeats) if brake is None else brake
