"""Sniffing helpers shared by the adapters: what the head of a file looks like.

The head is the first 64 KiB of a file (``Source.head()``) and may end
mid-line, so the line helpers ignore the last piece unless the file is shorter
than the head. Nothing here raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..readers.reader import BOM, CHUNK_SIZE

__all__ = ["foreign", "head_lines", "head_objects", "head_text", "mentions"]

WHITESPACE = b" \t\r\n"

# Markers of formats whose lines also hold chat-like messages but are read by other
# adapters (compiled, and cached by re, on first use: not every run sniffs).
# A key written by JSON itself, not one quoted inside a string (those are \"escaped\").
# The quote comes first and the look-behind after it (a quote not preceded by a
# backslash), so re scans for the quote's byte instead of trying every position:
# 8x faster on a head with no marker, which every event file's sniffs search three times.
_FOREIGN = (
    rb'"(?<!\\")(?:(?:parentUuid|isSidechain|jsonrpc|resourceSpans|fncall_messages'
    rb'|fncall_response|tool_call_metadata|toolCalls|projectHash)"\s*:'
    rb'|type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context)"'
    rb'|trajectory"\s*:\s*\[)'
)


def head_text(head: bytes) -> bytes:
    """The head without a BOM and leading whitespace."""
    if head.startswith(BOM):
        head = head[3:]
    return head.lstrip(WHITESPACE)


def mentions(head: bytes, needles: tuple[bytes, ...]) -> bool:
    """Does the head hold any of ``needles``? A sniff asks first, for the literals its
    patterns cannot match without: a bytes search is a few times cheaper than a regex
    search, and most heads a sniff sees (another format's) hold none of them."""
    for needle in needles:
        if needle in head:
            return True
    return False


UNICODE_ESCAPE = b"\\u"
"""In a head with no ``\\u``, a JSON key is spelled literally in its bytes: a sniff that
parses lines for a key can rule out a head without that key's bytes."""


def foreign(head: bytes) -> bool:
    """Does the head carry a marker of a format another adapter owns?"""
    return re.search(_FOREIGN, head) is not None


def head_lines(head: bytes, limit: int = 200) -> Iterator[bytes]:
    """The complete, non-blank lines of a file's head (at most ``limit``)."""
    if head.startswith(BOM):
        head = head[3:]
    lines = head.split(b"\n")
    if len(head) >= CHUNK_SIZE and not head.endswith(b"\n"):
        lines = lines[:-1]  # cut mid-line by the sniff window
    count = 0
    for line in lines:
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        yield line
        count += 1
        if count >= limit:
            return


def head_objects(head: bytes, limit: int = 200) -> Iterator[dict[str, Any]]:
    """The JSON objects among the head's complete lines; other lines are skipped."""
    for line in head_lines(head, limit):
        if not line.lstrip().startswith(b"{"):
            continue
        try:
            obj = parse_json(line)
        except JSONInputError:
            continue
        if isinstance(obj, dict):
            yield obj
