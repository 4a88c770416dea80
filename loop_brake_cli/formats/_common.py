"""Small pieces every adapter needs, so each format module stays about its format."""

from __future__ import annotations

from typing import Any

from ..canonical import JSONInputError, parse_json

__all__ = ["json_path", "load_json_line", "parse_arguments"]


def parse_arguments(value: Any) -> tuple[Any, bool]:
    """Arguments as the harness hashes them, and whether they were unparseable.

    A JSON string is parsed first (the harness hashes the parsed object); an empty
    string is ``{}``; a string that does not parse is hashed as the string itself.
    """
    if value is None:
        return {}, False
    if isinstance(value, str):
        if not value.strip():
            return {}, False
        try:
            return parse_json(value), False
        except JSONInputError:
            return value, True
    return value, False


def load_json_line(raw: bytes) -> tuple[Any, str | None]:
    """Parse one line; return (value, None) or (None, a message that quotes nothing)."""
    try:
        return parse_json(raw), None
    except JSONInputError as exc:
        return None, str(exc)


def json_path(*parts: str | int) -> str:
    """A JSONPath-like locator such as ``$.messages[3].tool_calls[0]``."""
    out = ["$"]
    for part in parts:
        out.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(out)
