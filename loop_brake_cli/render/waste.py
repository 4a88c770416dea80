"""The words of replay's waste figures, for render.py: plain strings, no rich.

A figure the transcript did not record is said to be unrecorded ("no usage
recorded", "not recorded"), never shown as 0; a dollar amount appears only with
the user's ``--prices`` and says which turns it leaves out.
"""

from __future__ import annotations

from ..analysis.prices import Prices
from ..analysis.waste import KINDS, Cost, Dollars, Tokens, Waste, dollars

__all__ = ["money", "session_cells", "tokens_phrase", "waste_line"]

_KIND_WORDS = {
    "input": "input",
    "output": "output",
    "cache_read": "cache read",
    "cache_write": "cache write",
    "reasoning": "reasoning",
}


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def tokens_phrase(tokens: Tokens) -> str:
    """``41,695 input, 4,096 output tokens``: the recorded kinds only."""
    parts = [
        f"{tokens.get(kind):,} {_KIND_WORDS[kind]}"
        for kind in KINDS
        if tokens.get(kind) is not None
    ]
    return ", ".join(parts) + " tokens" if parts else "tokens not recorded"


def money(amount: float, currency: str) -> str:
    """``12.34 USD``; below one unit, four decimals so a small figure is not shown as 0.00."""
    return f"{amount:,.2f} {currency}" if amount >= 0.995 else f"{amount:.4f} {currency}"


def _dollars_phrase(priced: Dollars, path: str | None) -> str:
    """``0.0063 USD at the prices in FILE (1 turn not priced: MODEL)``; with no turn
    priced, no amount at all (never a 0 that would read as free)."""
    where = f" at the prices in {path}" if path is not None else ""
    models = ", ".join(item.model or "model not recorded" for item in priced.unpriced)
    if not priced.priced_turns:
        return f"not priced{where} ({models})"
    text = money(priced.amount, priced.currency) + where
    if priced.unpriced:
        text += f" ({_plural(priced.unpriced_turns, 'turn')} not priced: {models})"
    return text


def waste_line(waste: Waste, spent: Cost, without_usage: int, prices: Prices | None) -> str:
    """The summary's one line on what the calls after the denials cost, over all sessions.

    ``without_usage``: sessions with wasted calls whose transcript recorded no usage."""
    head = f"Waste: {_plural(waste.calls, 'call')} after a denial"
    if not spent.turns:
        return head + "; no usage recorded"
    cost = waste.cost
    parts = [head]
    if cost.turns:
        turns = _plural(cost.turns, "model turn")
        parts.append(f"{turns} spent only on them: {tokens_phrase(cost.tokens())}")
        if prices is not None:
            parts[-1] += ", " + _dollars_phrase(dollars(cost, prices), prices.path)
    else:
        parts.append("no model turn spent only on them")
    if waste.partial_turns:
        parts.append(
            f"{_plural(waste.partial_turns, 'turn')} also made other calls (tokens not counted)"
        )
    unknown = waste.unknown_calls
    if unknown:
        sessions = f", {_plural(without_usage, 'session')} with none" if without_usage else ""
        parts.append(f"{_plural(unknown, 'call')} of unknown cost (no usage before them{sessions})")
    return "; ".join(parts)


def session_cells(waste: Waste, spent: Cost, prices: Prices | None) -> tuple[str, ...]:
    """A session's row of the waste table: turns, tokens, calls of unknown cost[, cost]."""
    cost = waste.cost
    if not spent.turns:
        cells: tuple[str, ...] = ("no usage recorded", "-", "-")
        return (*cells, "-") if prices is not None else cells
    turns = str(cost.turns)
    if waste.partial_turns:
        turns += f" (+{waste.partial_turns} partly)"
    tokens = tokens_phrase(cost.tokens()) if cost.turns else "-"
    cells = (turns, tokens, str(waste.unknown_calls))
    if prices is None:
        return cells
    if not cost.turns:
        return (*cells, "-")
    return (*cells, _dollars_phrase(dollars(cost, prices), None))
