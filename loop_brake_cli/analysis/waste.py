"""What a loop cost: the calls after a streak's first denial, the model turns behind them, and
their tokens.

The rule (docs/replay.md, "Waste"): a call is *wasted* when it repeats a streak
after the brake's first denial of that streak (the identical calls the agent
made after the brake would have said no; the denied call itself is not). A
model turn is the ``Usage`` record an adapter yields before the calls it
produced, so a turn's calls are its session's calls up to the next ``Usage`` of
the session. A turn is *wasted* when every call it produced is wasted, and then
all of its tokens count, once, however many calls it emitted; a turn some of
whose calls are wasted and some not is *partly wasted*: counted, but its tokens
are not, since the turn was needed for its other calls. The figures are thus a
floor of what the loop cost, never an estimate. Wasted calls with no ``Usage``
before them in their session have an unknown cost, and are counted as such.

Token counts are kept as the transcript recorded them, per model name and kind;
a kind no turn recorded stays None ("not recorded"), never 0. Plain data that
pickles, so ``replay -j`` merges it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.records import Usage
from .prices import KINDS as PRICED
from .prices import Prices

__all__ = [
    "KINDS",
    "Cost",
    "Dollars",
    "ModelCost",
    "Tokens",
    "Turn",
    "Unpriced",
    "Waste",
    "close_turn",
    "dollars",
]

KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
"""The token kinds, in the order every output lists them."""
JSON_KINDS = {
    "input": "input",
    "output": "output",
    "cache_read": "cacheRead",
    "cache_write": "cacheWrite",
    "reasoning": "reasoning",
}


def _plus(old: int | None, value: int | None) -> int | None:
    """A token count plus another, None meaning not recorded: None only when both are."""
    if value is None:
        return old
    return value if old is None else old + value


@dataclass(slots=True)
class Tokens:
    """Tokens by kind; None: no turn counted here recorded that kind (never 0 for it)."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None

    def add(self, other: Tokens) -> None:
        self.input = _plus(self.input, other.input)
        self.output = _plus(self.output, other.output)
        self.cache_read = _plus(self.cache_read, other.cache_read)
        self.cache_write = _plus(self.cache_write, other.cache_write)
        self.reasoning = _plus(self.reasoning, other.reasoning)

    def get(self, kind: str) -> int | None:
        return getattr(self, kind)  # type: ignore[no-any-return]

    @property
    def recorded(self) -> bool:
        """Whether any kind was recorded."""
        return any(getattr(self, kind) is not None for kind in KINDS)

    def to_json(self) -> dict[str, int | None]:
        return {JSON_KINDS[kind]: getattr(self, kind) for kind in KINDS}


@dataclass(slots=True)
class ModelCost:
    """One model's turns and tokens."""

    turns: int = 0
    tokens: Tokens = field(default_factory=Tokens)


@dataclass(slots=True)
class Cost:
    """Model turns and their tokens, by model name (None: the transcript named none)."""

    turns: int = 0
    by_model: dict[str | None, ModelCost] = field(default_factory=dict)

    def add_usage(self, usage: Usage) -> None:
        self.turns += 1
        mine = self.by_model.get(usage.model)
        if mine is None:
            mine = self.by_model[usage.model] = ModelCost()
        mine.turns += 1
        # Tokens._plus written out for each kind: replay adds every turn's usage (a loop
        # over KINDS with getattr/setattr cost 5% of a replay of the bench transcript;
        # five calls of _plus, then a method of Tokens, were the next largest parts).
        tokens = mine.tokens
        value = usage.input_tokens
        if value is not None:
            tokens.input = value if tokens.input is None else tokens.input + value
        value = usage.output_tokens
        if value is not None:
            tokens.output = value if tokens.output is None else tokens.output + value
        value = usage.cache_read_tokens
        if value is not None:
            tokens.cache_read = value if tokens.cache_read is None else tokens.cache_read + value
        value = usage.cache_write_tokens
        if value is not None:
            tokens.cache_write = value if tokens.cache_write is None else tokens.cache_write + value
        value = usage.reasoning_tokens
        if value is not None:
            tokens.reasoning = value if tokens.reasoning is None else tokens.reasoning + value

    def add(self, other: Cost) -> None:
        self.turns += other.turns
        for model, theirs in other.by_model.items():
            mine = self.by_model.get(model)
            if mine is None:
                mine = self.by_model[model] = ModelCost()
            mine.turns += theirs.turns
            mine.tokens.add(theirs.tokens)

    def tokens(self) -> Tokens:
        """All models' tokens together."""
        total = Tokens()
        for model in self.by_model.values():
            total.add(model.tokens)
        return total

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "tokens": self.tokens().to_json(),
            "byModel": [
                {"model": model, "turns": cost.turns, "tokens": cost.tokens.to_json()}
                for model, cost in self.by_model.items()
            ],
        }


@dataclass(slots=True)
class Waste:
    """The calls after each streak's first denial, and what they cost where it is known."""

    calls: int = 0
    """Calls after the first denial of their streak (call-id duplicates not counted)."""
    unknown_calls: int = 0
    """Of those, calls with no ``Usage`` before them in their session: cost unknown."""
    partial_turns: int = 0
    """Turns some, not all, of whose calls are wasted: counted, their tokens not."""
    cost: Cost = field(default_factory=Cost)
    """The turns all of whose calls are wasted, and their tokens."""

    def add(self, other: Waste) -> None:
        self.calls += other.calls
        self.unknown_calls += other.unknown_calls
        self.partial_turns += other.partial_turns
        self.cost.add(other.cost)


@dataclass(slots=True)
class Turn:
    """A session's open model turn (live state while replaying, never in a finished report).

    ``usage`` is read when the turn closes, not when it opens: an adapter may raise
    a turn's figures after yielding it (``formats._common.TurnUsage``)."""

    usage: Usage
    ordinal: int
    """1-based among the session's turns."""
    start: int
    """The session's calls (call-id duplicates not counted) before this turn."""
    wasted: int = 0


def close_turn(turn: Turn, calls: int, spent: Cost, waste: Waste) -> None:
    """Count a finished turn: in ``spent`` always, in ``waste`` when all its calls were
    wasted (partly wasted: counted apart, its tokens not). ``calls``: the session's
    calls so far, duplicates not counted."""
    spent.add_usage(turn.usage)
    produced = calls - turn.start
    if turn.wasted:
        if turn.wasted == produced:
            waste.cost.add_usage(turn.usage)
        else:
            waste.partial_turns += 1


@dataclass(frozen=True, slots=True)
class Unpriced:
    """A model whose turns got no dollar figure, and why (never a guessed price)."""

    model: str | None
    turns: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "turns": self.turns, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Dollars:
    """What turns cost at the user's prices: ``amount`` over the priced turns only (in
    JSON null when no turn was priced)."""

    amount: float
    currency: str
    priced_turns: int
    unpriced: tuple[Unpriced, ...]
    cache_read: float = 0.0
    """Of ``amount``, what the cache reads cost: priced apart, since a cache read costs a
    fraction of fresh input (the HTML report shows the two parts; not in the JSON)."""

    @property
    def unpriced_turns(self) -> int:
        return sum(item.turns for item in self.unpriced)

    def to_json(self) -> dict[str, Any]:
        return {
            "amount": round(self.amount, 6) if self.priced_turns else None,
            "currency": self.currency,
            "pricedTurns": self.priced_turns,
            "unpricedTurns": self.unpriced_turns,
            "unpriced": [item.to_json() for item in self.unpriced],
        }


def dollars(cost: Cost, prices: Prices) -> Dollars:
    """``cost`` at ``prices``: per model, the first matching entry, which must price every
    kind of token the model's turns recorded (a kind recorded as 0 needs no price);
    a model with no such entry is listed as unpriced, with its turns and the reason."""
    amount = cache_read = 0.0
    priced = 0
    unpriced: list[Unpriced] = []
    for model, spent in cost.by_model.items():
        if not spent.turns:
            continue
        price = prices.for_model(model)
        if price is None:
            reason = "no price matches this model" if model else "model not recorded"
            unpriced.append(Unpriced(model, spent.turns, reason))
            continue
        subtotal = cached = 0.0
        missing = []
        for kind in PRICED:
            count = spent.tokens.get(kind)
            if not count:
                continue
            rate = price.of(kind)
            if rate is None:
                missing.append(kind)
            else:
                subtotal += count * rate / 1_000_000
                if kind == "cache_read":
                    cached = count * rate / 1_000_000
        if missing:
            where = f" (line {price.line})" if price.line else ""
            reason = f"the matching price{where} has none for {', '.join(missing)} tokens"
            unpriced.append(Unpriced(model, spent.turns, reason))
            continue
        amount += subtotal
        cache_read += cached
        priced += spent.turns
    return Dollars(amount, prices.currency, priced, tuple(unpriced), cache_read)


def usage_to_json(spent: Cost, prices: Prices | None) -> dict[str, Any]:
    """Every turn with recorded usage: ``turns`` 0 and null tokens when none was."""
    out = spent.to_json()
    out["cost"] = None if prices is None else dollars(spent, prices).to_json()
    return out


def waste_to_json(waste: Waste, spent: Cost, prices: Prices | None) -> dict[str, Any]:
    """The ``waste`` object of ``--json`` (docs/replay.md)."""
    cost = waste.cost
    return {
        "calls": waste.calls,
        "usageRecorded": spent.turns > 0,
        "turns": cost.turns,
        "partialTurns": waste.partial_turns,
        "unknownCostCalls": waste.unknown_calls,
        "tokens": cost.tokens().to_json(),
        "byModel": cost.to_json()["byModel"],
        "cost": None if prices is None else dollars(cost, prices).to_json(),
    }
