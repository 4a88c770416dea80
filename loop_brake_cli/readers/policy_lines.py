"""The fast path's verdict lines under a policy (``fastpath.filter_events`` with one).

A policy's verdict line has more fields than the seed's (the rule, its limit, the
glob that matched, a warning, a denial text per rule), so rather than spell each
shape again, a tool's line for one decision and count is written once by the exact
writer itself (``records.verdict_record``, ``output.json_line``) with marked stand-ins
for what changes from call to call: the line number, the session's and the call id's
JSON and the hash prefix. The marks become ``%`` fields, and the line is checked
against the exact writer's for the call at hand before it is kept: a template is
the exact line, by construction and by that check.

Not templated (``template`` says None, the exact writer writes every such line):
a cycle's denial (it names earlier calls' prefixes), a tool name, glob or file label
holding a mark's character (U+E000), and anything the check finds unequal.
"""

from __future__ import annotations

from typing import Any

from ..core.records import ToolCall, verdict_record
from ..core.verdicts import verdict_of_policy
from .output import encode_json, json_line

__all__ = ["PREFIXES", "template"]

_SESSION = "\ue000s"
_CALL = "\ue000c"
_PREFIX = "\ue000p"
_LINE = 7_319_004_251_866_409_137  # a line number no input reaches

_MARK = "\ue000".encode()
_SESSION_JSON = encode_json(_SESSION).encode()
_CALL_JSON = encode_json(_CALL).encode()
_PREFIX_TEXT = _PREFIX.encode()
_LINE_FIELD = b'"line":%d,' % _LINE

PREFIXES = 3
"""Every template takes (line number, session JSON, call id JSON) and the hash prefix
this many times: where the line says it fewer times, an empty ``%.0b`` takes the rest."""


def template(tool: str, state: Any, file: str | None) -> bytes | None:
    """The verdict line of a non-duplicate call of ``tool`` counted into ``state`` (a
    ``PolicySlot``), as a ``%`` format of (line number, session JSON, call id JSON,
    then the hash prefix ``PREFIXES`` times); None where the exact writer must write
    it (module docstring). The caller checks it against the exact line once."""
    decision = state[1]
    if decision.period:  # a cycle: the line names the cycle's calls
        return None
    verdict = verdict_of_policy(state, _SESSION, _CALL, False)._replace(hash_prefix=_PREFIX)
    text = json_line(verdict_record(ToolCall(tool, None, _SESSION, _CALL, _LINE), verdict, file))
    prefixes = text.count(_PREFIX_TEXT)
    if (
        not 1 <= prefixes <= PREFIXES
        or text.count(_MARK) != 2 + prefixes  # a mark in the tool, glob or file label
        or text.count(_LINE_FIELD) != 1
        or not text.index(_LINE_FIELD)
        < text.index(_SESSION_JSON)
        < text.index(_CALL_JSON)
        < text.index(_PREFIX_TEXT)
    ):
        return None
    text = text.replace(b"%", b"%%").replace(_LINE_FIELD, b'"line":%d,')
    text = text.replace(_SESSION_JSON, b"%b").replace(_CALL_JSON, b"%b")
    return text.replace(_PREFIX_TEXT, b"%b") + b"%.0b" * (PREFIXES - prefixes)
