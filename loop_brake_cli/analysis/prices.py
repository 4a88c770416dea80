"""Token prices the user gives (``replay --prices FILE``): TOML in, checked prices out.

loop-brake ships no prices and never guesses one: a dollar figure exists only
for a model whose name a ``[[models]]`` entry of the user's file matches, and
only when that entry prices every kind of token the model's turns recorded.
Prices are per million tokens, one number per billed kind (``input``, ``output``,
``cache_read``, ``cache_write``; reasoning tokens are part of the output and
billed as output, so they have no price of their own); the first entry whose glob
matches the model name wins (a turn whose model is not recorded is matched as
the empty name, so only a glob like ``*`` prices it). Every mistake is located
(``prices.toml:7:1: ...``), as the policy reader does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..core.small_file import SmallFileError, read_small_file
from ..core.toml_reader import tomllib

__all__ = ["KINDS", "Price", "Prices", "PricesError", "load_prices", "parse_prices"]

KINDS = ("input", "output", "cache_read", "cache_write")
MAX_PRICES_BYTES = 1 << 20
"""The largest prices file read (1 MiB; a price per model is a few dozen bytes)."""
"""The token kinds a price names: the billed kinds of ``records.Usage`` (whose reasoning
tokens are a part of its output tokens)."""
TOP_KEYS = ("currency", "models")
ENTRY_KEYS = ("match", *KINDS)
MAX_PRICE = 1_000_000.0
"""Per million tokens; anything above is a typo (a price per token would be tiny)."""


class PricesError(ValueError):
    """An unusable prices file; ``problems`` are its located errors, one a line."""

    def __init__(self, problems: list[str], unopened: bool = False) -> None:
        self.problems = problems
        self.unopened = unopened
        """The file could not be opened (an unreadable input, not a mistake in it)."""
        super().__init__("\n".join(problems))


@dataclass(frozen=True, slots=True)
class Price:
    """One ``[[models]]`` entry: its globs and a price per million tokens by kind."""

    patterns: tuple[str, ...]
    per_million: tuple[tuple[str, float], ...]
    line: int | None = None

    def of(self, kind: str) -> float | None:
        for name, value in self.per_million:
            if name == kind:
                return value
        return None


@dataclass(frozen=True, slots=True)
class Prices:
    """The user's prices, in file order; ``currency`` only labels amounts."""

    entries: tuple[Price, ...]
    path: str
    currency: str = "USD"

    def for_model(self, model: str | None) -> Price | None:
        """The first entry whose glob matches ``model`` (None: not recorded, matched as "")."""
        name = model or ""
        for entry in self.entries:
            if any(fnmatchcase(name, pattern) for pattern in entry.patterns):
                return entry
        return None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(r"^(\s*)([A-Za-z0-9_\"'.-]+?)\s*=")


class _Locator:
    """The line of each table and key, found by scanning the text (tomllib gives none)."""

    def __init__(self, text: str) -> None:
        self.keys: dict[tuple[int, str], int] = {}
        self.entries: dict[int, int] = {}
        entry = -1  # -1: the top level
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header:
                name = header.group(2).strip().strip("\"'")
                entry = len(self.entries) if header.group(1) == "[[" and name == "models" else -2
                if entry >= 0:
                    self.entries[entry] = number
                continue
            key = _KEY.match(line)
            if key:
                self.keys.setdefault((entry, key.group(2).strip("\"'")), number)

    def line(self, entry: int, key: str) -> int | None:
        return self.keys.get((entry, key)) or self.entries.get(entry)


def load_prices(path: str) -> Prices:
    """Read and check a prices file; ``PricesError`` with located errors."""
    try:
        data = read_small_file(path, "prices file", MAX_PRICES_BYTES)
    except SmallFileError as exc:
        raise PricesError([f"{path}: {exc}"], unopened=exc.unreadable) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PricesError([f"{path}:{line}: not UTF-8"]) from None
    return parse_prices(text, path)


def parse_prices(text: str, path: str) -> Prices:
    """The prices in ``text``; ``PricesError`` listing every mistake, located."""
    toml = tomllib()
    if toml is None:
        raise PricesError([f"{path}: reading TOML needs Python 3.11+ or tomli"])
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{found.group(1)}:{found.group(2)}" if found else path
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise PricesError([f"{where}: not valid TOML: {message}"]) from None
    locator = _Locator(text)
    problems: list[tuple[int, str]] = []

    def problem(entry: int, key: str, message: str) -> None:
        line = locator.line(entry, key)
        problems.append((line or 0, f"{path}:{line}: {message}" if line else f"{path}: {message}"))

    for key in document:
        if key not in TOP_KEYS:
            problem(-1, key, f'unknown key "{key}"{_hint(key, TOP_KEYS)}')
    currency = document.get("currency", "USD")
    if not isinstance(currency, str) or not currency.strip() or len(currency) > 16:
        problem(-1, "currency", "currency must be a short name such as USD")
        currency = "USD"
    raw = document.get("models")
    entries: list[Price] = []
    if raw is None:
        problem(-1, "models", "no prices: add [[models]] entries (match = a glob, input = ...)")
    elif not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        problem(-1, "models", "models must be an array of tables ([[models]] entries)")
    else:
        for index, item in enumerate(raw):
            entry = _entry(index, item, problem)
            if entry is not None:
                entries.append(Price(entry[0], entry[1], locator.entries.get(index)))
    if problems:
        raise PricesError([message for _, message in sorted(problems, key=lambda p: p[0])])
    return Prices(tuple(entries), path, currency.strip())


def _entry(
    index: int, item: dict[str, Any], problem: Any
) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]] | None:
    where = f"[[models]] entry {index + 1}"
    ok = True
    for key in item:
        if key == "reasoning":
            problem(
                index,
                key,
                f"{where}: reasoning tokens are part of the output and billed at its price: "
                "drop reasoning",
            )
            ok = False
        elif key not in ENTRY_KEYS:
            problem(index, key, f'unknown key "{key}" in {where}{_hint(key, ENTRY_KEYS)}')
            ok = False
    raw = item.get("match")
    patterns: tuple[str, ...] = ()
    if isinstance(raw, str):
        patterns = (raw,)
    elif isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
        patterns = tuple(raw)
    else:
        problem(index, "match", f"{where}: match must be a model-name glob or a list of globs")
        ok = False
    if any(not pattern for pattern in patterns):
        problem(index, "match", f"{where}: match holds an empty glob")
        ok = False
    prices: list[tuple[str, float]] = []
    for kind in KINDS:
        if kind not in item:
            continue
        value = item[kind]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 <= value <= MAX_PRICE
        ):
            problem(
                index,
                kind,
                f"{where}: {kind} must be a price per million tokens, a number from 0 "
                f"to {MAX_PRICE:,.0f}, not {_show(value)}",
            )
            ok = False
            continue
        prices.append((kind, float(value)))
    if not prices and ok:
        problem(index, "match", f"{where} prices no kind of token (input, output, ...)")
        ok = False
    return (patterns, tuple(prices)) if ok else None


def _hint(key: str, allowed: tuple[str, ...]) -> str:
    import difflib

    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(allowed)})"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)
