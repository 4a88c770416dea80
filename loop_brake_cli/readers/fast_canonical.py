"""The orjson canonical form: ``canonical_json``'s bytes when provably equal, else None.

orjson is optional: without it ``AVAILABLE`` is False and everything takes the
exact path (``canonical.parse_json`` and ``canonical_json``). What makes the
orjson form exact, and where it declines:

* Strings: orjson escapes exactly as JSON.stringify (``\\" \\\\ \\b \\f \\n \\r \\t``,
  other controls as lowercase ``\\u00xx``, the rest literally); a lone surrogate
  makes it raise, so the exact path takes such a value.
* Integers: exact within 2**53; anything beyond raises (``OPT_STRICT_INTEGER``).
* Floats: orjson writes shortest round-trip digits like ``Number::toString`` but
  ``1.0`` for integral values and exponents from 1e16 and below 1e-5 (``1e+16``,
  ``1e-6``); any output containing ``.0`` or a digit followed by ``e+``/``e-``
  is declined (strings that merely contain those characters are too, which costs
  time, never correctness).
* Key order: orjson sorts by code point, JavaScript by UTF-16 unit. Two keys
  compare alike both ways unless, where they first differ, an astral character
  meets U+E000..U+FFFF or a lone surrogate; lone surrogates never reach orjson, so
  output holding both an astral and a U+E000..U+FFFF character anywhere is declined.
* Nesting past orjson's serialiser limit (254) raises and is declined.

The checks look only at the output bytes: equal bytes are equally exact, which is
what lets the fast path skip them for bytes its digest cache already holds.
``fast_digest`` serves values that ``parse_json`` or ``orjson.loads`` produced
(plain dicts, lists, strings, numbers); orjson would also serialise types that
``canonical_json`` rejects (dataclasses, UUIDs, subclasses), so never feed it those.
"""

from __future__ import annotations

import os
import re
from hashlib import sha256 as _sha256
from typing import TYPE_CHECKING, Any

from ..core.canonical import JSONInputError, call_digest, parse_json, utf8
from .fast_lines import MAX_KEY_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

try:  # optional: the exact path is complete without it
    import orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    orjson = None  # type: ignore[assignment]  # AVAILABLE says so before any use

__all__ = [
    "AVAILABLE",
    "LONG",
    "fast_canonical",
    "fast_digest",
    "is_exact",
    "load_line",
    "no_float",
    "too_deep",
]

AVAILABLE = orjson is not None
_EXPONENT = re.compile(rb"[0-9]e[-+]")

# parse_json gives up ("nested too deep") at Python's recursion limit (about 1000
# levels, less the caller's stack), orjson at 1024: a line that might nest that deep
# (this many brackets, inside strings or not) is read by parse_json alone.
_DEEP = 512

_digest_json: Callable[[bytes, bytes], bytes | None] | None
try:  # optional, and only with orjson: see fast_digest
    from ._event_scan import digest_json as _digest_json
except ImportError:  # pragma: no cover - exercised where the extension is not built
    _digest_json = None
if not AVAILABLE or os.environ.get("LOOP_BRAKE_PURE_PYTHON"):
    _digest_json = None

if AVAILABLE:
    loads = orjson.loads
    dumps = orjson.dumps
    DecodeError = orjson.JSONDecodeError
    EncodeError = orjson.JSONEncodeError
    OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


def is_exact(out: bytes) -> bool:
    """Whether orjson's sorted output ``out`` is certainly the canonical form."""
    if b".0" in out:
        return False
    if (b"e+" in out or b"e-" in out) and _EXPONENT.search(out):
        return False
    if out.isascii():
        return True
    # an astral character's UTF-8 lead byte, then one of U+E000..U+FFFF: each looked for
    # with ``in`` (memchr), which a regex class took ten times longer over long output
    astral = b"\xf0" in out or b"\xf1" in out or b"\xf2" in out or b"\xf3" in out or b"\xf4" in out
    return not (astral and (b"\xee" in out or b"\xef" in out))


# Output longer than this (the digest cache's longest key) is proved exact from its
# parsed value (``no_float``) before its bytes are looked through: on long output the
# looks cost about 2.5 ns a byte (the 2-byte ones most), a walk of a value with few
# members next to nothing.
LONG = MAX_KEY_BYTES

_PLAIN = frozenset((str, int, bool, type(None)))
_NESTED = _PLAIN | {dict, list}


def no_float(value: Any, budget: int) -> bool:
    """Whether ``value`` (as ``orjson.loads`` gives it) holds no float and only ASCII
    keys, found by looking at no more than ``budget`` members; False when unsure.

    Then orjson's sorted output is the canonical form whatever its bytes: its only
    numbers are integers (exact within 2**53, and OPT_STRICT_INTEGER raises beyond),
    its strings are escaped as JSON.stringify escapes them, and ASCII keys sort alike
    by code point and by UTF-16 unit. So ``is_exact``'s looks, which decline any
    ``.0``, ``e+`` or ``e-`` even inside strings, are not needed. The budget keeps a
    value of many small members (cheaper to look through as bytes) from being walked.
    For output longer than ``LONG`` only, which the fast path's digest cache never
    holds (it keeps bytes proved by their looks, this proves a value)."""
    stack = [value]
    while stack:
        node = stack.pop()
        members: Iterable[Any]
        if node.__class__ is dict:
            if not "".join(node).isascii():
                return False
            members = node.values()
        elif node.__class__ is list:
            members = node
        else:
            return node.__class__ in _PLAIN  # a lone scalar
        budget -= len(members)
        if budget < 0:
            return False
        kinds = set(map(type, members))
        if kinds <= _PLAIN:
            continue
        if not kinds <= _NESTED:
            return False  # a float
        stack.extend(m for m in members if m.__class__ is dict or m.__class__ is list)
    return True


def fast_canonical(args: Any) -> bytes | None:
    """UTF-8 canonical JSON of a parsed value, or None when not provably exact."""
    try:
        out = dumps(args, option=OPTIONS)
    except EncodeError:
        return None
    return out if is_exact(out) else None


def fast_digest(tool: str, args: Any) -> bytes:
    """``canonical.call_digest(tool, args)`` for a value from ``parse_json`` or
    ``orjson.loads``, by orjson where that is provably the same bytes.

    With the C reader built (``_event_scan.c``), orjson's plain dump is read and
    hashed there first: it sorts members itself and proves its subset exact, which
    spares the sorted dump, the looks and hashlib's calls; outside the subset it says
    None and the way below decides."""
    head = _HEADS.get(tool)
    if head is None:
        head = _head(tool)
    if _digest_json is not None:
        try:
            digest = _digest_json(head[0], dumps(args))
        except EncodeError:
            return call_digest(tool, args)
        if digest is not None:
            return digest
    try:
        out = dumps(args, option=OPTIONS)
    except EncodeError:
        return call_digest(tool, args)
    # is_exact only where a cheap look finds a risk; out.replace(x, b"") is out itself
    # when x does not occur (argument clinic: cheaper than find's PyArg_ParseTuple);
    # called as out.replace each time: a bound method kept in a variable is built by
    # a generic look-up, which costs more than the three specialised calls; long
    # output is first proved from the value (no_float)
    if (
        (len(out) <= LONG or not no_float(args, len(out) >> 6))
        and (
            out.replace(b".0", b"") is not out
            or out.replace(b"e+", b"") is not out
            or out.replace(b"e-", b"") is not out
            or not out.isascii()
        )
        and not is_exact(out)
    ):
        return call_digest(tool, args)
    hasher = head[1].copy()  # cheaper than a new sha256: OpenSSL 3 looks the digest up each time
    hasher.update(out)
    return hasher.digest()


def _head(tool: str) -> tuple[bytes, Any]:
    """Fill the head cache: the bytes hashed before a call's canonical form, and a
    sha256 that has hashed them (copied for each call)."""
    if len(_HEADS) >= 1024:
        _HEADS.clear()
    text = utf8(tool + "\n")
    head = _HEADS[tool] = (text, _sha256(text))
    return head


# tool name -> (the bytes hashed before the canonical form, a sha256 of them)
_HEADS: dict[str, tuple[bytes, Any]] = {}


def too_deep(line: bytes) -> bool:
    """Whether ``line`` might nest deeper than parse_json reads (then it must judge it)."""
    return len(line) >= _DEEP * 2 and line.count(b"[") + line.count(b"{") >= _DEEP


def load_line(raw: bytes) -> tuple[Any, str | None]:
    """``formats._common.load_json_line``: (value, None) or (None, the exact error),
    by orjson where it accepts the line (its values hash alike: see fast_digest)."""
    if not too_deep(raw):
        try:
            return loads(raw), None
        except DecodeError:
            pass
    try:
        return parse_json(raw), None
    except JSONInputError as exc:
        return None, str(exc)
