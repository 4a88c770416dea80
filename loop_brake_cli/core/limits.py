"""maxRepeats: which value applies and what a valid one is (the plugin's rules).

An explicit value (``-m``, a config row) wins, then ``$DSH_LOOP_BRAKE_MAX_REPEATS``,
then 3. A value the plugin would reject is an error naming where it came from,
never a guess.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = [
    "DEFAULT_MAX_REPEATS",
    "ENV_VAR",
    "InvalidMaxRepeatsError",
    "normalize_max_repeats",
    "parse_env_max_repeats",
    "resolve_max_repeats",
]

DEFAULT_MAX_REPEATS = 3
ENV_VAR = "DSH_LOOP_BRAKE_MAX_REPEATS"


class InvalidMaxRepeatsError(ValueError):
    """A maxRepeats that the plugin would reject; names where the value came from."""

    def __init__(self, source: str, value: object, reason: str = "") -> None:
        self.source = source
        self.value = value
        import json  # only for this message: the hook's start-up does not import json

        shown = json.dumps(value, default=repr)
        detail = reason or "must be an integer of at least 1"
        super().__init__(f"invalid maxRepeats from {source}: {shown} ({detail})")


def normalize_max_repeats(value: object, source: str = "maxRepeats") -> int:
    """Accept an integer >= 1; an integral float such as 5.0 counts as 5.

    Booleans and strings are rejected even though JavaScript would coerce them:
    a config value of "5" is a mistake worth reporting, not guessing about.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidMaxRepeatsError(source, value, "must be an integer of at least 1")
    if isinstance(value, float) and not value.is_integer():
        raise InvalidMaxRepeatsError(source, value, "must be a whole number")
    if value < 1:
        raise InvalidMaxRepeatsError(source, value, "must be at least 1")
    return int(value)


def parse_env_max_repeats(raw: str) -> int | None:
    """The environment fallback: a base-10 integer, spaces allowed, empty = unset."""
    text = raw.strip()
    if not text:
        return None
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()):
        raise InvalidMaxRepeatsError(f"${ENV_VAR}", raw, "must be a base-10 integer of at least 1")
    return normalize_max_repeats(int(text), f"${ENV_VAR}")


def resolve_max_repeats(
    explicit: object = None, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """The value and a description of its source: explicit, environment, default."""
    if explicit is not None:
        return normalize_max_repeats(explicit, "--max-repeats"), "--max-repeats"
    environ = os.environ if env is None else env
    raw = environ.get(ENV_VAR)
    if raw is not None:
        value = parse_env_max_repeats(raw)
        if value is not None:
            return value, f"${ENV_VAR}"
    return DEFAULT_MAX_REPEATS, "default"
