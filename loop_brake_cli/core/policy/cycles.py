"""The exact cycle brake, online and in bounded memory.

A session keeps the digests (and tool names) of its last ``max_period`` counted
calls and, for each period p in 2..max_period, ``runs[p-2]``: how many calls in a
row have each equalled the call p before them. The last ``r + p`` calls are then
p-periodic, i.e. ``(r + p) // p`` consecutive repetitions of the last p calls.
That is exactly "the tail of the last max_period x max_repeats digests repeats
one p-call cycle max_repeats times" without keeping that window: the decision
is the same, the memory is max_period digests and max_period - 1 counters.

A cycle is reported only if its p calls hold at least two distinct digests (a
streak of identical calls is the streak rule's, never a cycle) and none of them
is an exempt tool; the smallest such period wins.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["advance", "find_cycle"]

_ENDED = tuple((0,) * (period - 1) for period in range(65))
"""The runs after a call equal to none of the window's: all 0, one tuple per max_period."""


def advance(
    recent: tuple[bytes, ...],
    recent_tools: tuple[str, ...],
    runs: tuple[int, ...],
    digest: bytes,
    tool: str,
    max_period: int,
) -> tuple[tuple[bytes, ...], tuple[str, ...], tuple[int, ...]]:
    """The cycle window after one counted call (pure)."""
    size = len(recent)
    if digest not in recent:  # no period can go on: every run ends (the common call)
        new_runs = _ENDED[max_period] if max_period < len(_ENDED) else (0,) * (max_period - 1)
    else:
        new_runs = tuple(
            [
                (runs[p - 2] + 1 if p - 2 < len(runs) else 1)
                if size >= p and recent[size - p] == digest
                else 0
                for p in range(2, max_period + 1)
            ]
        )
    if size >= max_period:
        return recent[1:] + (digest,), recent_tools[1:] + (tool,), new_runs
    return recent + (digest,), recent_tools + (tool,), new_runs


def find_cycle(
    recent: tuple[bytes, ...],
    recent_tools: tuple[str, ...],
    runs: tuple[int, ...],
    max_repeats: int,
    exempt: Callable[[str], bool],
) -> tuple[int, int] | None:
    """(period, repetitions) of the shortest cycle the window ends with that has
    reached ``max_repeats`` repetitions in a row, or None."""
    for index, run in enumerate(runs):
        period = index + 2
        if run < period:  # the common case first: no repetition yet
            continue
        repeats = (run + period) // period
        if repeats < max_repeats:
            continue
        if len(set(recent[-period:])) < 2:
            continue
        if any(exempt(tool) for tool in recent_tools[-period:]):
            continue
        return period, repeats
    return None
