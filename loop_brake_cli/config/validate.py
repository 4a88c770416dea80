"""Judging the plugin's composed row: errors that make it unusable, warnings for the unmeant.

Errors: a config that is not a mapping, a key other than maxRepeats (with a
"did you mean" when it is a near miss, since the brake then silently runs
without it), a maxRepeats the brake would reject. Warnings: a disabled row or
group, an override that dropped an earlier maxRepeats, a limit of 1 or one too
high to bite. Only the maxRepeats value is ever echoed, never other values.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..core.limits import InvalidMaxRepeatsError, normalize_max_repeats
from .compose import KEY, Row
from .load import T_NULL, Js, location_of, pairs, scalar, truthy
from .problems import ConfigWarning, Location, Problem

KNOWN_KEYS = (KEY,)
HIGH_MAX_REPEATS = 50


def _describe(value: Any) -> str:
    """The maxRepeats value as the user wrote it (it is the one value we may echo)."""
    if isinstance(value, Js):
        return "a !!js expression"
    if isinstance(value, bool):
        return "true (a boolean)" if value else "false (a boolean)"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "\u2026"
        return f'"{shown}" (a string)'
    if isinstance(value, (int, float)):
        return repr(value)
    return "a list" if isinstance(value, list) else "a mapping"


def row_config(row: Row, row_name: str) -> tuple[int | None, Location | None, list[Problem]]:
    """The row's composed maxRepeats (or None) and every problem with its config."""
    f = row.fields.get("config")
    if f is None or (f.value.id == "scalar" and f.value.tag == T_NULL):
        return None, None, []
    path = f.file
    if f.value.id != "mapping":
        kind = "a list" if f.value.id == "sequence" else "a scalar"
        return (
            None,
            None,
            [
                (
                    location_of(path, f.value),
                    f"config of row {row_name!r} must be a mapping, not {kind}",
                )
            ],
        )
    problems: list[Problem] = []
    value: int | None = None
    key_loc: Location | None = None
    for key, (key_node, value_node) in pairs(f.value).items():
        if key != KEY:
            problems.append((location_of(path, key_node), _unknown_key(key, row_name)))
            continue
        key_loc = location_of(path, key_node)
        raw = _value_of(path, value_node)
        try:
            value = normalize_max_repeats(raw)
        except InvalidMaxRepeatsError as exc:
            reason = str(exc).rsplit("(", 1)[-1].rstrip(")")
            problems.append(
                (location_of(path, value_node), f"maxRepeats {reason}, got {_describe(raw)}")
            )
            value = None
    return value, key_loc, problems


def _value_of(path: str, node: Any) -> Any:
    if node.id == "scalar":
        return scalar(path, node)
    return [] if node.id == "sequence" else {}


def _unknown_key(key: str, row_name: str) -> str:
    message = f"unknown key {key!r} in the config of row {row_name!r} (its one key is {KEY!r})"
    squashed = re.sub(r"[^a-z0-9]", "", key.lower())
    if squashed == KEY.lower() or difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6):
        message += f"; did you mean {KEY!r}? As written, the brake runs without it"
    return message


def row_warnings(
    row: Row, row_name: str, value: int, location: Location | None, fallback: str | None
) -> list[ConfigWarning]:
    """What is legal about the row and its effective ``value`` but probably not meant.

    ``fallback`` names what the brake falls back to when the row sets no
    maxRepeats (None when it does): only then can a dropped maxRepeats matter.
    """
    warnings: list[ConfigWarning] = []
    holder: Row | None = row
    while holder is not None:
        disabled = holder.fields.get("disabled")
        if disabled is not None and truthy(disabled.file, disabled.value):
            whose = f"row {row_name!r} is" if holder is row else f"its group {holder.id!r} is"
            warnings.append(
                ConfigWarning(
                    f"{whose} disabled: the brake does not run at all",
                    location_of(disabled.file, disabled.key),
                )
            )
            break
        holder = holder.parent
    dropped = _dropped(row) if fallback is not None else None
    if dropped is not None:
        replaced, earlier = dropped
        warnings.append(
            ConfigWarning(
                f"this override replaces the whole config of row {row_name!r} and drops "
                f"maxRepeats (set at {earlier}); the brake falls back to {fallback}. "
                "Restate maxRepeats in this config to keep it",
                replaced,
            )
        )
    if value == 1:
        warnings.append(
            ConfigWarning(
                "maxRepeats is 1: every call is denied, even the first of a streak "
                "(a debugging setting)",
                location,
            )
        )
    elif value > HIGH_MAX_REPEATS:
        warnings.append(
            ConfigWarning(
                f"maxRepeats is {value}, above {HIGH_MAX_REPEATS}: a brake that rarely bites",
                location,
            )
        )
    return warnings


def _dropped(row: Row) -> tuple[Location, Location] | None:
    """Where the last config replacement dropped a maxRepeats an earlier layer set."""
    if len(row.configs) < 2 or row.configs[-1].key_location is not None:
        return None
    for earlier in reversed(row.configs[:-1]):
        if earlier.key_location is not None:
            return row.configs[-1].location, earlier.key_location
    return None
