"""The fast path's verdict lines and cache bookkeeping (``fastpath.filter_events``).

``VerdictTemplates``: a tool's verdict lines, keys in the documented order, so a
verdict is one ``%`` format of cached byte strings instead of a dict to encode;
the deny text is ``verdicts.DENY_TEMPLATE`` split around the count and the hash
prefix, never a second spelling. ``CacheSwitch``: a cache that does not
pay is switched off for a while (adaptive: the input may change).
"""

from __future__ import annotations

from ..core.canonical import js_string
from ..core.verdicts import CODE, DENY_TEMPLATE, PLUGIN
from .output import encode_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CACHE_LIMIT",
    "MAX_KEY_BYTES",
    "OFF_LINES",
    "WINDOW",
    "CacheSwitch",
    "VerdictTemplates",
]

CACHE_LIMIT = 1 << 12
# Keys longer than this are neither looked up nor stored: hashing a long key for the
# look-up costs about what a hit saves, and it bounds each cache in bytes, at
# CACHE_LIMIT * MAX_KEY_BYTES (16 MiB), whatever the line limit.
MAX_KEY_BYTES = 1 << 12
# A cache is switched off for OFF_LINES lines when, over a window of WINDOW misses,
# fewer than a quarter of its look-ups hit (then tried again: input changes).
WINDOW = 1 << 12
OFF_LINES = 1 << 18


class CacheSwitch:
    """A cache's hit rate, counted on its misses only (a hit costs nothing more). Also
    switches the C event reader, whose "miss" is a line it declines (``cache`` None)."""

    def __init__(self, cache: dict[bytes, Any] | None, least: float) -> None:
        self.cache = cache
        self.most_missed = 1 - least  # the cache pays while at least ``least`` hit
        self.start = 0  # the line number where the current window began
        self.misses = 0

    def miss(self, number: int) -> int:
        """Count a miss at line ``number``; the line number from which the cache is
        used again: ``number`` itself while it pays, a later one when it is off."""
        self.misses += 1
        if self.misses < WINDOW:
            return number
        return self.judge(number)

    def judge(self, number: int) -> int:
        """The end of a window of WINDOW misses: keep the cache, or switch it off."""
        lines, self.misses = number - self.start, 0
        if lines * self.most_missed < WINDOW:
            if self.cache is not None:
                self.cache.clear()
            self.start = number + OFF_LINES
            return self.start
        self.start = number
        return number


# brake.DENY_TEMPLATE in the three pieces around the count and the hash prefix.
_DENY_HEAD, _DENY_REST = DENY_TEMPLATE.split("{count}")
_DENY_MID, _DENY_TAIL = _DENY_REST.split("{prefix}")


class VerdictTemplates:
    """Pre-encoded verdict lines (keys in the documented order), built per tool, so that
    a verdict is one ``%`` format of a few byte strings rather than a dict to encode.
    Every literal piece is ``%``-escaped: a tool or file name may hold ``%``."""

    def __init__(self, max_repeats: int, file: str | None) -> None:
        label = b"" if file is None else b'"file":' + _json_str(file) + b","
        self._head = _literal(label) + b'"line":%d,"toolName":'
        # ... the tool's JSON, then session JSON, call id JSON, count, hash prefix
        self._middle = b',"sessionId":%b,"callId":%b,"count":%d,"maxRepeats":'
        self._middle += b"%d" % max_repeats
        self._middle += b',"hashPrefix":"%b"'
        self._verdict = b',"code":' + _json_str(CODE) + b',"plugin":' + _json_str(PLUGIN)
        self._deny_mid = _literal(_json_str(_DENY_MID, quoted=False))
        self._deny_tail = _json_str(_DENY_TAIL.format(limit=max_repeats), quoted=False)

    def pass_line(self, tool: str) -> bytes:
        """The pass line of ``tool``: a ``%`` format of (line number, session JSON, call
        id JSON, count, hash prefix)."""
        return b'{"verdict":"pass",' + self._start(tool) + b"}\n"

    def deny_line(self, tool: str) -> bytes:
        """The deny line of ``tool``: the pass line's arguments, then (count, hash
        prefix) again for its message. Built on a tool's first deny: quoting the tool
        in the message costs more than the pass line."""
        line = b'{"verdict":"deny",' + self._start(tool) + _literal(self._verdict)
        line += b',"message":"' + _literal(_deny_head(tool)) + b"%d" + self._deny_mid
        return line + b"%b" + _literal(self._deny_tail) + b'"}\n'

    def _start(self, tool: str) -> bytes:
        return self._head + _literal(_json_str(tool)) + self._middle


def _deny_head(tool: str) -> bytes:
    """The start of the deny message, which quotes the tool name as the core does."""
    return _json_str(_DENY_HEAD.format(tool=js_string(tool)), quoted=False)


def _literal(data: bytes) -> bytes:
    """``data`` as a literal piece of a ``%`` format."""
    return data.replace(b"%", b"%%")


def _json_str(value: str, quoted: bool = True) -> bytes:
    """A JSON string as ``output.json_line`` writes it (a lone surrogate, possible in a
    tool name read by the exact path, as its escape); cached by callers."""
    data = encode_json(value).encode("utf-8", "backslashreplace")
    return data if quoted else data[1:-1]
