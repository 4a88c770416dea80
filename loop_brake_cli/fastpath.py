"""The fast path of ``loop-brake filter --format events``: the same bytes out, less work.

Exactness first: every verdict line written here is byte-identical to what the
exact path (``formats.events.parse`` -> ``judge`` -> ``verdict_record`` ->
``json_line``) writes, and every hash equals ``canonical.call_digest``. The fast
path takes a line only when it can be sure, and hands it to the exact path
otherwise:

* Lines are parsed with orjson (optional: without it everything goes the exact
  way). Anything orjson rejects (bad JSON, lone surrogates, literals beyond the
  double range, nesting past 1024) is re-read by ``canonical.parse_json``, so
  errors, and the values Python accepts where orjson does not, are the exact ones.
* The canonical form is ``orjson.dumps(args, OPT_SORT_KEYS | OPT_STRICT_INTEGER)``
  only when it provably equals ``canonical_json(args)``. Strings: orjson escapes
  exactly as JSON.stringify (``\\" \\\\ \\b \\f \\n \\r \\t``, other controls as
  lowercase ``\\u00xx``, the rest literally; lone surrogates cannot reach it).
  Integers: exact within 2**53, anything beyond raises (STRICT_INTEGER) and goes
  the exact way. Floats: orjson writes shortest round-trip digits like
  ``Number::toString`` but ``1.0`` for integral values and exponents from 1e16
  and below 1e-5 (``1e+16``, ``1e-6``); any output containing ``.0`` or a digit
  followed by ``e+``/``e-`` goes the exact way (strings that merely contain those
  characters do too, which costs time, never correctness). Key order: orjson
  sorts by code point, JavaScript by UTF-16 unit; they differ only when an astral
  character meets one in U+E000..U+FFFF, so output with both goes the exact way.
  Nesting past orjson's serialiser limit (254) raises and goes the exact way.
* Event fields: the common shape (``tool``, ``args``, ``sessionId`` strings,
  ``callId`` string) is read directly; other shapes through
  ``wire.event_line.decode``; a record that is not a clean call, or has an
  integer call id beyond 2**53 (which ``parse_json`` would read as a double),
  goes the exact way.

``tests/test_fastpath_node.py`` checks the canonical forms against Node.js and
``tests/test_fastpath.py`` checks whole verdict streams against the exact path.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from binascii import hexlify as _hexlify
from typing import Any

from .brake import LoopBrake
from .canonical import JSONInputError, parse_json
from .output import LineWriter
from .pipeline import Tally, write_verdicts
from .reader import TOO_LONG, Source
from .records import BadRecord, Record, ToolCall, line_too_long, verdict_record
from .shard import shard_of
from .wire.event_line import decode as decode_event

try:  # optional: the exact path is complete without it
    import orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    orjson = None  # type: ignore[assignment]

__all__ = ["AVAILABLE", "enabled", "fast_canonical", "filter_events"]

AVAILABLE = orjson is not None
_MAX_SAFE = 2**53
_EXPONENT = re.compile(rb"[0-9]e[-+]")
_ASTRAL = re.compile(b"[\xf0-\xf4]")  # UTF-8 lead bytes of U+10000..
_HIGH_BMP = re.compile(b"[\xee\xef]")  # UTF-8 lead bytes of U+E000..U+FFFF
_CACHE_LIMIT = 1 << 12

if AVAILABLE:
    _dumps = orjson.dumps
    _loads = orjson.loads
    _DecodeError = orjson.JSONDecodeError
    _EncodeError = orjson.JSONEncodeError
    _OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


def enabled() -> bool:
    """orjson is installed and ``LOOP_BRAKE_EXACT`` is not set (to compare the paths)."""
    return AVAILABLE and not os.environ.get("LOOP_BRAKE_EXACT")


def fast_canonical(args: Any) -> bytes | None:
    """UTF-8 canonical JSON of a value orjson parsed, or None when not provably exact."""
    try:
        out = _dumps(args, option=_OPTIONS)
    except _EncodeError:
        return None
    if b".0" in out:
        return None
    if (b"e+" in out or b"e-" in out) and _EXPONENT.search(out):
        return None
    if not out.isascii() and _ASTRAL.search(out) and _HIGH_BMP.search(out):
        return None
    return out


def _exact(line: bytes, number: int) -> Record:
    """What ``formats.events.parse`` yields for this line."""
    try:
        obj = parse_json(line)
    except JSONInputError as exc:
        return BadRecord(str(exc), number)
    return decode_event(obj, number)


class _Templates:
    """Pre-encoded pieces of the verdict line (keys in the documented order)."""

    def __init__(self, max_repeats: int, file: str | None) -> None:
        label = b"" if file is None else b'"file":' + _json_str(file) + b","
        self.pass_head = b'{"verdict":"pass",' + label + b'"line":'
        self.deny_head = b'{"verdict":"deny",' + label + b'"line":'
        self.tail = b',"maxRepeats":%d,"hashPrefix":"' % max_repeats
        self.deny_mid = _json_str(" times in a row with identical arguments (call ", quoted=False)
        self.deny_end = (
            _json_str(
                f"\u2026, limit {max_repeats}); the call was denied before it ran.\n"
                "Change the arguments, call a different tool, or stop.",
                quoted=False,
            )
            + b'"}\n'
        )
        self.strings: dict[str, bytes] = {}
        self.deny_tools: dict[str, bytes] = {}

    def string(self, value: str) -> bytes:
        cached = self.strings.get(value)
        if cached is None:
            if len(self.strings) >= _CACHE_LIMIT:
                self.strings.clear()
            cached = self.strings[value] = _json_str(value)
        return cached

    def deny_tool(self, tool: str) -> bytes:
        cached = self.deny_tools.get(tool)
        if cached is None:
            if len(self.deny_tools) >= _CACHE_LIMIT:
                self.deny_tools.clear()
            text = f"loop brake: tool {json.dumps(tool, ensure_ascii=False)} called "
            cached = b',"code":"LOOP_BRAKE","plugin":"dsh-loop-brake","message":"'
            cached += _json_str(text, quoted=False)
            self.deny_tools[tool] = cached
        return cached


def _tool_parts(t: _Templates, tool: str) -> tuple[bytes, bytes, bytes]:
    """What a verdict needs of a tool name: the hashed ``tool + "\\n"``, its JSON, and
    the start of the deny message that quotes it."""
    hashed = (tool + "\n").encode("utf-8")  # tools reaching here hold no lone surrogate
    return hashed, t.string(tool), t.deny_tool(tool)


def _json_str(value: str, quoted: bool = True) -> bytes:
    """A JSON string as ``output.json_line`` writes it (a lone surrogate, possible in a
    tool name or session key read by the exact path, as its escape); cached by callers."""
    data = _encode_str(value).encode("utf-8", "backslashreplace")
    return data if quoted else data[1:-1]


_encode_str = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def filter_events(
    source: Source,
    brake: LoopBrake,
    tally: Tally,
    out: LineWriter,
    wanted: set[str] | frozenset[str],
    file: str | None = None,
    shard: tuple[int, int] | None = None,
) -> None:
    """Judge the event lines of one source and write the verdicts, as filter does."""
    t = _Templates(brake.max_repeats, file)
    parts = out.pending()  # verdict lines collect here until the reader's on_wait flush
    append = parts.append
    count_call = brake.count_call
    max_repeats = brake.max_repeats
    want_pass = "pass" in wanted
    want_deny = "deny" in wanted
    loads, dumps, options, sha256, hexlify = _loads, _dumps, _OPTIONS, hashlib.sha256, _hexlify
    middle = b',"toolName":%b,"sessionId":%b,'
    pass_id = t.pass_head + b"%d" + middle + b'"callId":%b,"count":%d' + t.tail + b'%b"}\n'
    deny_id = t.deny_head + b"%d" + middle + b'"callId":%b,"count":%d' + t.tail + b'%b"%b%d%b%b'
    deny_id += t.deny_end
    deny_mid = t.deny_mid
    strings = t.strings
    tools: dict[str, tuple[bytes, bytes, bytes]] = {}  # tool -> hashed prefix, JSON, deny text
    # hashed bytes -> (sha256, its 12-hex prefix as bytes): repeated calls are the norm
    digests: dict[bytes, tuple[bytes, bytes]] = {}
    get_digest = digests.get
    shard_cache: dict[str, bool] = {}
    shard_index, shard_count = shard if shard is not None else (0, 1)
    errors_here = shard_index == 0
    passed = denied = 0

    def slow(record: Record) -> None:
        if shard is not None:
            if record.__class__ is BadRecord:
                if not errors_here:
                    return
            elif shard_of(record.session, shard_count) != shard_index:  # type: ignore[union-attr]
                return
        write_verdicts((record,), brake, tally, out, wanted, file)

    thresholds = gc.get_threshold()
    # Session slots are long-lived objects: with the default thresholds the cyclic
    # GC rescans them over and over (29% of the time with 1,000,000 sessions). Young
    # cycles are still collected; the thresholds are restored afterwards.
    gc.set_threshold(50_000, 50, 1000)
    try:
        for number, line in source.lines():
            if line is TOO_LONG:
                slow(line_too_long(number, source.max_line_bytes))
                continue
            try:
                obj = loads(line)
            except _DecodeError:
                slow(_exact(line, number))
                continue
            if obj.__class__ is not dict:
                slow(_exact(line, number))
                continue
            get = obj.get
            tool = get("tool")
            args = get("args")
            session = get("sessionId")
            call_id = get("callId")
            if not (
                tool.__class__ is str
                and args is not None
                and session.__class__ is str
                and call_id.__class__ is str
                and "agentId" not in obj
                and "agent_id" not in obj
            ):
                record = decode_event(obj, number)
                if record.__class__ is not ToolCall:
                    slow(_exact(line, number))
                    continue
                call_id = record.call_id  # type: ignore[union-attr]
                if call_id.__class__ is int and not -_MAX_SAFE <= call_id <= _MAX_SAFE:
                    slow(_exact(line, number))
                    continue
                tool = record.tool  # type: ignore[union-attr]
                args = record.args  # type: ignore[union-attr]
                session = record.session  # type: ignore[union-attr]
            try:
                canonical = dumps(args, option=options)
            except _EncodeError:
                slow(_exact(line, number))
                continue
            find = canonical.find  # .find is about twice as fast as `in` on short bytes
            if (
                find(b".0") >= 0 or find(b"e+") >= 0 or find(b"e-") >= 0 or not canonical.isascii()
            ) and fast_canonical(args) is None:
                slow(_exact(line, number))
                continue
            if shard is not None:
                keep = shard_cache.get(session)
                if keep is None:
                    if len(shard_cache) >= _CACHE_LIMIT:
                        shard_cache.clear()
                    keep = shard_cache[session] = shard_of(session, shard_count) == shard_index
                if not keep:
                    continue
            known = tools.get(tool)
            if known is None:
                if len(tools) >= _CACHE_LIMIT:
                    tools.clear()
                known = tools[tool] = _tool_parts(t, tool)
            hashed = known[0] + canonical
            known_digest = get_digest(hashed)
            if known_digest is None:
                if len(digests) >= _CACHE_LIMIT:
                    digests.clear()
                digest = sha256(hashed).digest()
                known_digest = digests[hashed] = (digest, hexlify(digest[:6]))
            digest, hash_prefix = known_digest
            slot, duplicate = count_call(session, tool, digest, call_id)
            count = slot.count
            if duplicate:
                # rare: the exact writer, with the slot's tool and hash
                tally.duplicates += 1
                verdict = brake.slot_verdict(slot, session, call_id, True)
                if verdict.denied:
                    denied += 1
                else:
                    passed += 1
                if want_deny if verdict.denied else want_pass:
                    record = ToolCall(tool, None, session, call_id, number)
                    out.write(verdict_record(record, verdict, file))
                continue
            session_json = strings.get(session)
            if session_json is None:
                session_json = t.string(session)
            call_json = b"" if call_id is None else dumps(call_id)
            if count >= max_repeats:
                denied += 1
                if want_deny:
                    line_out = deny_id % (
                        number,
                        known[1],
                        session_json,
                        call_json,
                        count,
                        hash_prefix,
                        known[2],
                        count,
                        deny_mid,
                        hash_prefix,
                    )
                    if call_id is None:  # no id: drop the empty field (a JSON-encoded
                        # string cannot contain '"callId":,', so only the field matches)
                        line_out = line_out.replace(b'"callId":,', b"", 1)
                    append(line_out)
            else:
                passed += 1
                if want_pass:
                    line_out = pass_id % (
                        number,
                        known[1],
                        session_json,
                        call_json,
                        count,
                        hash_prefix,  # the slot holds this digest: not a duplicate
                    )
                    if call_id is None:
                        line_out = line_out.replace(b'"callId":,', b"", 1)
                    append(line_out)
    finally:
        gc.set_threshold(*thresholds)
        tally.passed += passed
        tally.denied += denied
