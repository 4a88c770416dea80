"""A stored streak row in both directions: call ids as canonical JSON text, and what
``state list`` may show of a row (never arguments: a hash prefix only).

SQLite lets any column hold any type, so a row is checked before it is used:
a store edited by hand or by another program must not crash ``state list`` or
the hook.
"""

from __future__ import annotations

import math

from ..core.canonical import canonical_json, hash_prefix, parse_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SessionRow",
    "call_id_key",
    "decode_call_id",
    "encode_call_id",
    "from_column",
    "session_row",
    "to_column",
    "well_typed",
]


class SessionRow:
    """One session as ``state list`` shows it: never arguments, only a hash prefix."""

    __slots__ = ("session", "tool", "count", "hash_prefix", "call_id", "updated")

    def __init__(
        self, session: str, tool: str, count: int, prefix: str, call_id: Any, updated: float
    ) -> None:
        self.session = session
        self.tool = tool
        self.count = count
        self.hash_prefix = prefix
        self.call_id = call_id  # a string, an integer, or None
        self.updated = updated


def encode_call_id(call_id: Any) -> str | None:
    """A call id as stored: canonical JSON text, so ``7`` and ``"7"`` differ."""
    return None if call_id is None else canonical_json(call_id)


def call_id_key(call_id: Any) -> str:
    """A text equal for two call ids exactly when Python finds them equal, as
    ``streak.step`` compares them (``True == 1``, ``7 == 7.0``): the canonical JSON
    of the id with booleans and integral floats as integers. A store that compares
    ids outside Python (``redis_step.lua``) compares these."""
    return canonical_json(_comparable(call_id))


def _comparable(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_comparable(item) for item in value]
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    return value


def decode_call_id(text: str | None) -> Any:
    """The stored id back as the brake compares it; unreadable text is no id."""
    if text is None:
        return None
    try:
        return parse_json(text)
    except ValueError:
        return None


def to_column(text: str) -> str | bytes:
    """A session key or tool name as stored. SQLite text must be UTF-8, which a
    string with a lone surrogate (``"\\ud800"`` in the agent's JSON) is not: such a
    string is stored as a BLOB of its surrogate-preserving UTF-8 bytes. A BLOB never
    equals a TEXT value, so the key stays as distinct as ``filter`` keeps it in memory."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def from_column(value: str | bytes) -> str:
    """``to_column`` undone: the string the row was written from. Raises
    UnicodeDecodeError for a BLOB ``to_column`` never writes: one that is not
    surrogate-preserving UTF-8, or one that is plain UTF-8 (that would be TEXT)."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", "surrogatepass")
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return text  # it holds a lone surrogate: what to_column writes as a BLOB
        raise UnicodeDecodeError("utf-8", value, 0, len(value), "a BLOB of plain UTF-8")
    return value


def well_typed(digest: Any, count: Any, call_id: Any, tool: Any, updated: Any) -> bool:
    """A row's columns hold what this module writes (SQLite lets any column hold anything)."""
    return (
        isinstance(digest, bytes)
        and len(digest) == 32
        and type(count) is int
        and (call_id is None or isinstance(call_id, str))
        and isinstance(tool, (str, bytes))
        and type(updated) in (int, float)
        and math.isfinite(updated)
    )


def session_row(row: tuple[Any, ...]) -> SessionRow | None:
    session, tool, count, digest, call_id, updated = row
    if not isinstance(session, (str, bytes)) or not well_typed(
        digest, count, call_id, tool, updated
    ):
        return None
    try:
        session, tool = from_column(session), from_column(tool)
    except UnicodeDecodeError:  # a BLOB this module did not write
        return None
    return SessionRow(session, tool, count, hash_prefix(digest), decode_call_id(call_id), updated)
