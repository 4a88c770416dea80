"""Canonical JSON and the call hash: the documented contract.

Changing anything in this module changes every hash, and a hash prefix printed
by this tool must name the same call as one printed by the Node.js plugin
dsh-loop-brake. The specification, normative:

``call_hash(tool, args)`` is the lowercase hex sha256 of the UTF-8 bytes of
``tool + "\\n" + canonical_json(args)``; a lone surrogate in ``tool`` is encoded
as U+FFFD, as Node does when it hashes a string.

``canonical_json`` is what Node.js prints for a value that came from
``JSON.parse``, serialised with object keys sorted at every level:

* object keys sorted by UTF-16 code units (JavaScript's default sort), written
  ``{"k":v,...}`` with no whitespace; for duplicate keys the last one wins;
* arrays in order; ``true``, ``false``, ``null``;
* every number an IEEE-754 double printed by ECMAScript ``Number::toString``
  (shortest round-trip digits, exponent form from 1e21 up and below 1e-6,
  ``-0`` as ``0``, a literal beyond the double range as ``null``);
* strings as ``JSON.stringify`` writes them: ``\\"`` ``\\\\`` ``\\b \\f \\n \\r \\t``,
  other control characters and lone surrogates as lowercase ``\\uXXXX``,
  everything else literally.

Input is strict RFC 8259 (no NaN, Infinity or trailing commas; UTF-8 only), and
the parser here produces exactly the values that the serialiser expects.
"""

from __future__ import annotations

import hashlib
import sys

try:  # the json package's own C scanner, without importing json (and re, enum) at start-up
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - an interpreter without _json
    from json.scanner import make_scanner as _make_scanner

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    import re
    from typing import Any

__all__ = [
    "JSONInputError",
    "call_digest",
    "call_hash",
    "canonical_json",
    "hash_prefix",
    "parse_arguments",
    "parse_json",
    "PREFIX_LENGTH",
]

PREFIX_LENGTH = 12
_SAFE_INT_DIGITS = 15  # any integer literal this short is exact as a double


class JSONInputError(ValueError):
    """Input that is not strict JSON. The message never quotes the input."""

    def __init__(self, message: str, column: int | None = None) -> None:
        self.reason = message
        self.column = column
        if column is not None:
            # Python's own messages may end in "at" ("Unterminated string starting at").
            message = (
                f"{message} column {column}"
                if message.endswith(" at")
                else (f"{message} at column {column}")
            )
        super().__init__(message)


def _reject_constant(name: str) -> Any:
    raise JSONInputError(f"not valid JSON: {name} is not a JSON value")


def _parse_int(literal: str) -> int | float:
    if len(literal) <= _SAFE_INT_DIGITS:
        return int(literal)
    return _as_js_number(float(literal))


def _parse_float(literal: str) -> int | float:
    return _as_js_number(float(literal))


def _as_js_number(value: float) -> int | float:
    """Integral doubles within 2**53 become ints, so equal numbers print alike cheaply."""
    if value.is_integer() and -(2**53) <= value <= 2**53:
        return int(value)
    return value


class _Decoding:
    """What ``json``'s scanner reads from a ``json.JSONDecoder`` (strict, numbers as
    doubles, no NaN or Infinity), built here so the hook, which parses one input
    before every tool call, does not import ``json`` and the ``re`` it compiles."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(_parse_float)
    parse_int = staticmethod(_parse_int)
    parse_constant = staticmethod(_reject_constant)
    memo: dict[str, str] = {}


# typeshed wants a JSONDecoder; the scanner reads only the attributes _Decoding has
_scan_once = _make_scanner(_Decoding())  # type: ignore[arg-type]


def parse_json(data: bytes | str) -> Any:
    """Parse strict JSON the way ``JSON.parse`` sees it (numbers as doubles).

    Raises JSONInputError with a column, never a message quoting the input.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONInputError("not valid UTF-8", exc.start + 1) from None
    else:
        text = data
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        value, end = _scan_once(text, start)
    except StopIteration as exc:  # json.JSONDecoder.raw_decode's "Expecting value"
        column = exc.value - text.rfind("\n", 0, exc.value)
        raise JSONInputError("not valid JSON: expecting value", column) from None
    except SystemError:
        # 3.11's scanner reports a syntax error through json.decoder's JSONDecodeError
        # only once json.decoder is loaded (else this): load it and read again.
        if "json.decoder" in sys.modules:
            raise
        import json.decoder  # noqa: F401

        return parse_json(text)
    except RecursionError:
        raise JSONInputError("not valid JSON: nested too deep") from None
    except JSONInputError:
        raise
    except ValueError as exc:
        from json import JSONDecodeError  # loaded by the scanner when it raised one

        if isinstance(exc, JSONDecodeError):
            message = exc.msg[:1].lower() + exc.msg[1:]
            raise JSONInputError(f"not valid JSON: {message}", exc.colno) from None
        # int/float conversion limits
        raise JSONInputError(f"not valid JSON: {exc.__class__.__name__}") from None
    rest = text[end:]
    if rest.strip(" \t\r\n"):
        raise JSONInputError("not valid JSON: extra data after the value", end + 1)
    return value


def parse_arguments(value: Any) -> tuple[Any, bool]:
    """Arguments as the harness hashes them, and whether they were unparseable.

    A JSON string is parsed first (the harness hashes the parsed object); an empty
    string or a missing value is ``{}``; a string that does not parse is hashed as
    the string itself. One rule for the adapters and the hook, so a replayed
    transcript counts a call exactly as the live hook did.
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


def js_number(value: float) -> str:
    """ECMAScript Number::toString for a double, as JSON.stringify prints it."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        if abs(value) <= 2**53:
            return str(int(value))
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exponent = ("e+" if e >= 0 else "e-") + str(abs(e))
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + exponent
    return sign + body


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
for _code in range(0x20):
    _ESCAPES.setdefault(chr(_code), f"\\u{_code:04x}")
for _code in range(0xD800, 0xE000):
    _ESCAPES[chr(_code)] = f"\\u{_code:04x}"
_NEEDS_ESCAPE = '["\\\\\x00-\x1f\ud800-\udfff]'
_needs_escape: Any = None  # _NEEDS_ESCAPE compiled, on the first string that needs it


def _escape_match(match: re.Match[str]) -> str:
    return _ESCAPES[match.group(0)]


def js_string(value: str) -> str:
    """A string literal exactly as JSON.stringify writes it.

    A printable string holds no control character and no lone surrogate, so
    without ``"`` or ``\\`` it needs no escape, and ``re`` is not imported (the
    hook's start-up: its denial message quotes the tool name)."""
    if value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'
    global _needs_escape
    if _needs_escape is None:
        import re

        _needs_escape = re.compile(_NEEDS_ESCAPE)
    return '"' + _needs_escape.sub(_escape_match, value) + '"'


def _utf16_key(key: str) -> bytes:
    """A key as JavaScript compares it: its UTF-16 code units (a lone surrogate is one)."""
    return key.encode("utf-16-be", "surrogatepass")


# Code-point order and UTF-16 order part only where two keys first differ at an astral
# character (two units, the first in U+D800..U+DBFF) against U+E000..U+FFFF or a lone
# surrogate: a key set with no astral character is already in order. (This class
# compiles in a tenth of the time of one that starts in the BMP; it is compiled, and cached
# by re, only once a key set is not ASCII: the hook pays start-up before every call.)
_ASTRAL = "[\U00010000-\U0010ffff]"


def _astral_in(text: str) -> bool:
    import re

    return re.search(_ASTRAL, text) is not None


def _sorted_keys(obj: dict[str, Any]) -> list[str]:
    """The keys in JavaScript's default sort order (UTF-16 code units).

    ``sorted`` orders by code point, which is the same order unless some key holds
    an astral character (anywhere in it, not only first: ``"a😀"`` comes before
    ``"a！"``, and ``"10😀"`` before ``"10\\udfff"``). One join and ``isascii``
    rule out the common case cheaply; only then is the slower UTF-16 sort paid for.
    """
    keys = sorted(obj)
    joined = "".join(keys)
    if not joined.isascii() and _astral_in(joined):
        keys.sort(key=_utf16_key)
    return keys


def _big_int(value: int) -> str:
    """A Python int beyond 2**53 as Node's Number(value) prints it (Infinity -> null)."""
    try:
        return js_number(float(value))
    except OverflowError:
        return "null"


def _write(value: Any, out: list[str]) -> None:
    cls = value.__class__
    if cls is str:
        out.append(js_string(value))
    elif cls is dict:
        out.append("{")
        first = True
        for key in _sorted_keys(value):
            if not first:
                out.append(",")
            first = False
            out.append(js_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif cls is list or cls is tuple:
        out.append("[")
        first = True
        for item in value:
            if not first:
                out.append(",")
            first = False
            _write(item, out)
        out.append("]")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif cls is int:
        out.append(str(value) if -(2**53) <= value <= 2**53 else _big_int(value))
    elif cls is float:
        out.append(js_number(value))
    elif isinstance(value, (int, float)):
        _write(float(value) if isinstance(value, float) else int(value), out)
    else:
        raise TypeError(f"not a JSON value: {cls.__name__}")


def canonical_json(value: Any) -> str:
    """Serialise a parsed JSON value with keys sorted, exactly as Node.js would."""
    out: list[str] = []
    try:
        _write(value, out)
    except RecursionError:
        raise JSONInputError("not valid JSON: nested too deep") from None
    return "".join(out)


_SURROGATE = "[\ud800-\udfff]"  # compiled (and cached by re) on the first lone surrogate


def utf8(text: str) -> bytes:
    """UTF-8 with a lone surrogate as U+FFFD, as Node encodes a string it hashes."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        import re

        return re.sub(_SURROGATE, "\ufffd", text).encode("utf-8")


def call_digest(tool_name: str, args: Any) -> bytes:
    """The 32-byte sha256 digest behind call_hash; what session slots keep."""
    return hashlib.sha256(utf8(tool_name + "\n" + canonical_json(args))).digest()


def call_hash(tool_name: str, args: Any) -> str:
    """Lowercase hex sha256 of ``tool_name + "\\n" + canonical_json(args)``."""
    return call_digest(tool_name, args).hex()


def hash_prefix(digest: bytes | str) -> str:
    """The 12 hex characters that are all this tool ever prints of a hash."""
    if isinstance(digest, bytes):
        return digest[: PREFIX_LENGTH // 2].hex()
    return digest[:PREFIX_LENGTH]
