"""The fast path's verdict lines and cache bookkeeping (``fastpath.filter_events``).

``VerdictTemplates``: pre-encoded pieces of a verdict line, keys in the documented
order, so a verdict is one ``%`` format of cached byte strings instead of a dict
to encode; the deny text is ``verdicts.DENY_TEMPLATE`` split around the count and
the hash prefix, never a second spelling. ``CacheSwitch``: a cache that does not
pay is switched off for a while (adaptive: the input may change).
"""

from __future__ import annotations

from .canonical import js_string
from .output import encode_json
from .verdicts import CODE, DENY_TEMPLATE, PLUGIN

__all__ = [
    "CACHE_LIMIT",
    "OFF_LINES",
    "WINDOW",
    "CacheSwitch",
    "VerdictTemplates",
    "deny_head",
    "json_string",
]

CACHE_LIMIT = 1 << 12
# A cache is switched off for OFF_LINES lines when, over a window of WINDOW misses,
# fewer than a quarter of its look-ups hit (then tried again: input changes).
WINDOW = 1 << 12
OFF_LINES = 1 << 18


class CacheSwitch:
    """A cache's hit rate, counted on its misses only (a hit costs nothing more)."""

    def __init__(self, cache: dict, least: float) -> None:
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
            self.cache.clear()
            self.start = number + OFF_LINES
            return self.start
        self.start = number
        return number


# brake.DENY_TEMPLATE in the three pieces around the count and the hash prefix.
_DENY_HEAD, _DENY_REST = DENY_TEMPLATE.split("{count}")
_DENY_MID, _DENY_TAIL = _DENY_REST.split("{prefix}")


class VerdictTemplates:
    """Pre-encoded pieces of the verdict line (keys in the documented order), so that a
    verdict is one ``%`` format of cached byte strings rather than a dict to encode."""

    def __init__(self, max_repeats: int, file: str | None) -> None:
        # the file name is part of a %-format: a '%' in it must stay literal
        label = b"" if file is None else b'"file":' + _json_str(file).replace(b"%", b"%%") + b","
        middle = b'%d,"toolName":%b,"sessionId":%b,"callId":%b,"count":%d'
        tail = b',"maxRepeats":%d,"hashPrefix":"%%b"' % max_repeats
        # line, tool JSON, session JSON, callId JSON, count, hash prefix
        self.pass_line = b'{"verdict":"pass",' + label + b'"line":' + middle + tail + b"}\n"
        # ... then the deny text quoting the tool, count, deny_mid, hash prefix
        self.deny_line = b'{"verdict":"deny",' + label + b'"line":' + middle + tail
        self.deny_line += b',"code":' + _json_str(CODE) + b',"plugin":' + _json_str(PLUGIN)
        self.deny_line += b',"message":"%b%d%b%b' + _json_str(
            _DENY_TAIL.format(limit=max_repeats), quoted=False
        )
        self.deny_line += b'"}\n'
        self.deny_mid = _json_str(_DENY_MID, quoted=False)


def json_string(value: str) -> bytes:
    """``value`` as a JSON string in a verdict line (the caller caches it per tool)."""
    return _json_str(value)


def deny_head(tool: str) -> bytes:
    """The start of the deny message, which quotes the tool name as the core does."""
    return _json_str(_DENY_HEAD.format(tool=js_string(tool)), quoted=False)


def _json_str(value: str, quoted: bool = True) -> bytes:
    """A JSON string as ``output.json_line`` writes it (a lone surrogate, possible in a
    tool name read by the exact path, as its escape); cached by callers."""
    data = encode_json(value).encode("utf-8", "backslashreplace")
    return data if quoted else data[1:-1]
