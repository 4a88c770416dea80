"""Identifiers from transcripts as people may see them: every control shown, none obeyed.

Tool names, session ids, call ids and file names come from input that an
agent, a model or whoever wrote the transcript chose. Printed raw to a terminal,
``\\x1b]0;...\\x07`` sets its window title, ``\\x1b[2J`` clears it, a C1 ``\\x9b``
starts a control sequence on some terminals, U+2028/U+2029 break a line where
nothing should, and bidirectional overrides reorder what is read. Every text for
people (summaries, tables, warnings, errors, stderr notes) passes identifiers
through ``visible``; JSON outputs keep them exact (JSON escapes what it must).
"""

from __future__ import annotations

import re

__all__ = ["visible"]

_UNSEEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""C0 and C1 controls, DEL, line and paragraph separators, bidirectional marks,
embeddings, overrides and isolates, and lone surrogates (which have no UTF-8 form)."""


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, lines: bool = False) -> str:
    """``text`` with each control, separator, bidi control or lone surrogate as its
    escape (``\\x1b``, ``\\x9b``, ``\\u2028``, ``\\ud800``); anything else as it is.
    ``lines``: a whole message of ours, whose line ends are kept."""
    if text.isprintable() and text.isascii():  # the common case: nothing to look for
        return text
    if lines:
        return "\n".join(_UNSEEN.sub(_escape, line) for line in text.split("\n"))
    return _UNSEEN.sub(_escape, text)
