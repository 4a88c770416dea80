"""The hook's deny (or stop) answer as one JSON line, without importing ``json``.

Every supported agent's answer is an object of strings and booleans (objects
nested). ``json`` and the ``re`` and ``enum`` it imports cost a denied call a
quarter of its start-up, so this writes those few types with the C string
encoder ``json`` itself uses for ``ensure_ascii=False``: the bytes are
``output.json_line``'s, which anything else is handed to.
"""

from __future__ import annotations

try:
    from _json import encode_basestring as _string
except ImportError:  # pragma: no cover - an interpreter without _json
    _string = None

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = ["answer_line"]

_CONSTANTS = {True: "true", False: "false"}


def _write(value: Any, out: list[str]) -> bool:
    """Append ``value``'s compact JSON to ``out``; False for a type left to json."""
    cls = value.__class__
    if cls is str:
        out.append(_string(value))  # type: ignore[misc]
    elif cls is bool:
        out.append(_CONSTANTS[value])
    elif value is None:
        out.append("null")
    elif cls is dict:
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if key.__class__ is not str:
                return False
            out.append("," if i else "")
            out.append(_string(key))  # type: ignore[misc]
            out.append(":")
            if not _write(item, out):
                return False
        out.append("}")
    else:
        return False
    return True


def answer_line(obj: dict[str, Any]) -> bytes:
    """``output.json_line(obj)``, byte for byte."""
    out: list[str] = []
    if _string is None or not _write(obj, out):
        from ..readers.output import json_line

        return json_line(obj)
    out.append("\n")
    return "".join(out).encode("utf-8", "backslashreplace")
