"""The fast path's second step in Python: prove a line's call and hash, or hand it over.

Where the C reader (``_event_scan.c``) is not built, or declines a line, this
answers the same question with the same tuple: ``(tool, session, call id, digest,
hash prefix, session JSON, call id JSON)`` for a line it is sure of, or None once
the exact path has judged the line (``exactly``). Being sure means:

* The line parses with orjson. Anything orjson rejects (bad JSON, lone surrogates,
  literals beyond the double range, nesting past 1024) is re-read by
  ``canonical.parse_json``, so errors, and the values Python accepts where orjson
  does not, are the exact ones. So is a line that might nest deeper than
  parse_json reads (``too_deep``: orjson reads 1024 levels, parse_json gives up
  near 1000 with "nested too deep").
* Its canonical form is ``orjson.dumps(args, OPT_SORT_KEYS | OPT_STRICT_INTEGER)``
  only when that provably equals ``canonical_json(args)``: ``fast_canonical.py``
  says when (strings, integers, floats, key order, nesting). Those checks look
  only at the output bytes, and the digest cache only ever holds bytes that
  passed them, so a line whose hashed bytes the cache holds skips them.
* Event fields: the common shape (``tool``, ``args``, ``sessionId`` strings,
  ``callId`` string) is read directly; other shapes through
  ``wire.event_line.decode``; a record that is not a clean call (an integer call
  id beyond 2**53 included: ``wire.fields.call_id_of`` refuses it) goes the exact way.
* Ids are written as ``output.json_line`` writes them: strings by
  ``json.encoder.encode_basestring``, its own string encoder (strings parsed by
  orjson hold no lone surrogate, so the strict UTF-8 encoding equals json_line's
  backslashreplace one); an integer call id by orjson, which writes it as Python does.

Two caches skip work on repeated lines: the line cache (a line's text up to its
call id -> what it proved) and the digest cache (hashed bytes -> digest); each
switches itself off for a while where it does not pay (``fast_lines.CacheSwitch``).
"""

from __future__ import annotations

from binascii import hexlify as _hexlify
from collections.abc import Callable
from hashlib import sha256 as _sha256
from json.encoder import encode_basestring as encode_string
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolCall
from . import fast_canonical as _fc
from .fast_canonical import AVAILABLE, LONG, is_exact, no_float, too_deep
from .fast_lines import CACHE_LIMIT, MAX_KEY_BYTES, WINDOW, CacheSwitch
from .wire.event_line import decode as decode_event

__all__ = ["Proven", "PythonProver"]

Proven = tuple[str, str, Any, bytes, bytes, bytes, bytes]
"""(tool, session, call id, digest, hash prefix, session JSON, call id JSON): what the
C reader's ``scan_event`` returns for a line it proves, and what the prover does."""

if AVAILABLE:
    _dumps = _fc.dumps
    _loads = _fc.loads
    _DecodeError = _fc.DecodeError
    _EncodeError = _fc.EncodeError
    _OPTIONS = _fc.OPTIONS


def exact_record(line: bytes, number: int) -> Record:
    """What ``formats.events.parse`` yields for this line."""
    try:
        obj = parse_json(line)
    except JSONInputError as exc:
        return BadRecord(str(exc), number)
    return decode_event(obj, number)


def _unusual_call(obj: dict[str, Any], number: int) -> tuple[str, Any, str, Any] | None:
    """Tool, args, session key and call id of an event in any other shape (aliases,
    agent ids, nulls), read by the exact decoder; None when the exact path must judge
    it: not a clean call (``wire.fields`` refuses an integer call id beyond 2**53)."""
    record = decode_event(obj, number)
    if record.__class__ is not ToolCall:
        return None
    return record.tool, record.args, record.session, record.call_id


def _ids_json(session: str, call_id: Any) -> tuple[bytes, bytes]:
    """The JSON of an unusual call's session key and call id (empty without an id)."""
    return encode_string(session).encode(), b"" if call_id is None else _dumps(call_id)


class PythonProver:
    """The prover's caches, and ``function()``: the prover itself, a closure over
    them (a closure's variables are read as fast as a loop's locals; attributes of
    ``self`` are not, and this runs for every line the C reader does not take)."""

    def __init__(
        self,
        tools: dict[str, list[Any]],
        tool_miss: Callable[[str], list[Any]],
        exactly: Callable[[Record], None],
    ) -> None:
        self.tools, self.tool_miss, self.exactly = tools, tool_miss, exactly
        # hashed bytes -> (sha256, its 12-hex prefix as bytes): repeated calls are the norm
        self.digests: dict[bytes, tuple[bytes, bytes]] = {}
        # a hit saves the checks and sha256, a miss costs a look-up and a store
        self.digest_switch = CacheSwitch(self.digests, 1 / 3)
        # the text of an event line before its last member, ',"callId":"..."}' ->
        # (tool, session, digest, hash prefix, tool cache entry, session JSON); see
        # remember_line
        self.lines: dict[bytes, tuple[str, str, bytes, bytes, list[Any], bytes]] = {}
        self.line_switch = CacheSwitch(self.lines, 1 / 4)

    def digest_miss(self, hashed: bytes, number: int) -> tuple[bytes, bytes, int]:
        """sha256 of bytes that passed the checks, its prefix as hex, and the line from
        which the digest cache is used again (it remembers the digest while it pays)."""
        digest = _sha256(hashed).digest()
        prefix = _hexlify(digest[:6])
        digests = self.digests
        if len(digests) >= CACHE_LIMIT:
            digests.clear()
        digests[hashed] = (digest, prefix)
        switch = self.digest_switch
        switch.misses += 1  # CacheSwitch.miss, one call less
        if switch.misses < WINDOW:
            return digest, prefix, number
        return digest, prefix, switch.judge(number)

    def remember_line(
        self, key: bytes, line: bytes, entry: tuple[str, str, bytes, bytes, list[Any], bytes]
    ) -> None:
        """Remember what a line of the common shape gave, under its text up to its last
        member ``,"callId":"..."}`` (``key``), so that a later line with the same text
        and another call id is not parsed, dumped, checked or hashed again.

        Sound because ``line`` is valid JSON that parsed to a clean call, and ends
        ``,"callId":`` + one JSON string + ``}``: a raw ``,"`` cannot occur inside a
        string, so that ``callId`` is the top-level object's last member, and any line
        of the form ``key + ',"callId":' + string + '}'`` parses to the same object
        with only that member changed (the prover checks the string with orjson)."""
        try:
            call_id = _loads(line[len(key) + 10 : -1])
        except _DecodeError:
            return  # not one string: another member follows the call id
        if call_id.__class__ is not str:  # pragma: no cover - it starts with '"'
            return
        lines = self.lines
        if len(lines) >= CACHE_LIMIT:
            lines.clear()
        lines[key] = entry

    def function(self) -> Callable[[bytes, int], Proven | None]:
        """The prover: per line it calls only builtins and orjson unless a cache misses
        or the line is unusual (every rare case is a function of its own)."""
        exactly = self.exactly
        loads, dumps, options = _loads, _dumps, _OPTIONS
        tools, tool_miss = self.tools, self.tool_miss
        get_digest, digest_miss = self.digests.get, self.digest_miss
        get_line, remember_line, line_switch = self.lines.get, self.remember_line, self.line_switch
        hexlify = _hexlify
        digests_from = 0  # the line from which the digest cache is used (see CacheSwitch)
        lines_from = 0  # the line from which the line cache is used

        def prove(line: bytes, number: int) -> Proven | None:
            nonlocal digests_from, lines_from
            tool: Any  # a str from the line cache; as parsed until checked below
            session: Any
            known: list[Any] | None
            entry = key = None
            if lines_from <= number:  # the line cache (see PythonProver.lines)
                cut = line.rfind(b',"callId":"')
                if 0 < cut <= MAX_KEY_BYTES and line[-1] == 125:  # ends in '}'
                    key = line[:cut]
                    entry = get_line(key)
                    if entry is not None:
                        try:
                            call_id = loads(line[cut + 10 : -1])
                        except _DecodeError:
                            entry = key = None
                if entry is None:
                    lines_from = line_switch.miss(number)
            if entry is not None:
                tool, session, digest, hash_prefix, known, session_json = entry
                return (
                    tool,
                    session,
                    call_id,
                    digest,
                    hash_prefix,
                    session_json,
                    (encode_string(call_id).encode()),
                )
            try:
                obj = loads(line)
            except _DecodeError:
                exactly(exact_record(line, number))
                return None
            if obj.__class__ is not dict or (len(line) >= 1024 and too_deep(line)):
                exactly(exact_record(line, number))  # too deep: parse_json may refuse it
                return None
            tool = obj.get("tool")  # no bound method kept: LOAD_METHOD is cheaper
            args = obj.get("args")
            session = obj.get("sessionId")
            call_id = obj.get("callId")
            if (
                tool.__class__ is str
                and args is not None
                and session.__class__ is str
                and call_id.__class__ is str
                and "agentId" not in obj
                and "agent_id" not in obj
            ):
                # json_line's own string encoder: cheaper here than orjson's dumps
                session_json = encode_string(session).encode()
                call_json = encode_string(call_id).encode()
            else:
                call = _unusual_call(obj, number)
                if call is None:
                    exactly(exact_record(line, number))
                    return None
                tool, args, session, call_id = call
                session_json, call_json = _ids_json(session, call_id)
                key = None  # only the common shape is remembered
            try:
                canonical = dumps(args, option=options)
            except _EncodeError:
                exactly(exact_record(line, number))
                return None
            known = tools.get(tool)
            if known is None:
                known = tool_miss(tool)
            tool = known[4]
            # bytes in the digest cache passed the checks below: equal bytes, equal result
            if digests_from <= number and len(canonical) <= MAX_KEY_BYTES:
                hashed = known[1] + canonical
                got = get_digest(hashed)
            else:
                hashed = None
                got = None
            if got is not None:
                digest, hash_prefix = got
            else:
                # b.replace(x, b"") is b itself when x does not occur: one look each,
                # cheaper than find (whose arguments are parsed the slow way); output
                # too long for the digest cache is first proved from its value
                # (fast_canonical.no_float: cheaper than the looks over long bytes)
                if (
                    (len(canonical) <= LONG or not no_float(args, len(canonical) >> 6))
                    and (
                        canonical.replace(b".0", b"") is not canonical
                        or canonical.replace(b"e+", b"") is not canonical
                        or canonical.replace(b"e-", b"") is not canonical
                        or not canonical.isascii()
                    )
                    and not is_exact(canonical)
                ):
                    exactly(exact_record(line, number))
                    return None
                if hashed is not None:
                    digest, hash_prefix, digests_from = digest_miss(hashed, number)
                else:
                    hasher = known[0].copy()
                    hasher.update(canonical)
                    digest = hasher.digest()
                    hash_prefix = hexlify(digest[:6])
            if key is not None:
                remember_line(key, line, (tool, session, digest, hash_prefix, known, session_json))
            return tool, session, call_id, digest, hash_prefix, session_json, call_json

        return prove
