"""The fast path of ``loop-brake filter --format events``: the same bytes out, less work.

Exactness first: every verdict line written here is byte-identical to what the
exact path (``formats.events.parse`` -> ``judge`` -> ``verdict_record`` ->
``json_line``) writes, and every hash equals ``canonical.call_digest``. The fast
path takes a line only when it can be sure, and hands it to the exact path
otherwise:

* The optional C reader (``_event_scan.c``, built where a compiler was found) is
  asked first: it answers only for a line it proves whole (valid JSON, the common
  shape, arguments in a subset whose canonical form is the input sorted), and it
  is switched off for a while where it declines most lines. Otherwise:
* Lines are parsed with orjson (optional: without it everything goes the exact
  way). Anything orjson rejects (bad JSON, lone surrogates, literals beyond the
  double range, nesting past 1024) is re-read by ``canonical.parse_json``, so
  errors, and the values Python accepts where orjson does not, are the exact ones.
  So is a line that might nest deeper than parse_json reads (``too_deep``: orjson
  reads 1024 levels, parse_json gives up near 1000 with "nested too deep").
* The canonical form is ``orjson.dumps(args, OPT_SORT_KEYS | OPT_STRICT_INTEGER)``
  only when it provably equals ``canonical_json(args)``: ``fast_canonical.py``
  says when (strings, integers, floats, key order, nesting). Those checks look
  only at the output bytes, and the digest cache only ever holds bytes that
  passed them, so a line whose hashed bytes the cache holds skips them.
* Event fields: the common shape (``tool``, ``args``, ``sessionId`` strings,
  ``callId`` string) is read directly; other shapes through
  ``wire.event_line.decode``; a record that is not a clean call (an integer call
  id beyond 2**53 included: ``wire.fields.call_id_of`` refuses it) goes the exact way.
* Verdict lines are per-tool ``%`` templates (``fast_lines.py``); session keys and
  call ids in them are encoded by ``json.encoder.encode_basestring``, the string
  encoder of ``output.json_line`` itself (strings parsed by orjson hold no lone
  surrogate, so the strict UTF-8 encoding equals json_line's backslashreplace one);
  an integer call id by orjson, which writes it as Python does.

``tests/test_fastpath_node.py`` checks the canonical forms against Node.js and
``tests/test_fastpath.py`` checks whole verdict streams against the exact path.
"""

from __future__ import annotations

import gc
import os
from binascii import hexlify as _hexlify
from collections.abc import Iterator
from contextlib import contextmanager
from hashlib import sha256 as _sha256
from json.encoder import encode_basestring as encode_string
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolCall, line_too_long, verdict_record
from . import fast_canonical as _fc
from .fast_canonical import AVAILABLE, fast_canonical, is_exact, too_deep
from .fast_lines import CACHE_LIMIT, MAX_KEY_BYTES, WINDOW, CacheSwitch, VerdictTemplates
from .output import LineWriter
from .pipeline import Tally, write_verdicts
from .reader import TOO_LONG, Source
from .shard import shard_of
from .wire.event_line import decode as decode_event

__all__ = ["AVAILABLE", "enabled", "fast_canonical", "filter_events", "relaxed_gc"]

try:  # optional: built from _event_scan.c when a C compiler was there at install
    from ._event_scan import SHA_INSTRUCTIONS as _SHA_INSTRUCTIONS
    from ._event_scan import scan_event as _scan_event
except ImportError:  # pragma: no cover - exercised where the extension is not built
    _scan_event = None

if AVAILABLE:
    _dumps = _fc.dumps
    _loads = _fc.loads
    _DecodeError = _fc.DecodeError
    _EncodeError = _fc.EncodeError
    _OPTIONS = _fc.OPTIONS


def enabled() -> bool:
    """orjson is installed and ``LOOP_BRAKE_EXACT`` is not set (to compare the paths)."""
    return AVAILABLE and not os.environ.get("LOOP_BRAKE_EXACT")


def scanner() -> Any:
    """The C reader of common event lines (``_event_scan.c``), or None: not built, or
    ``LOOP_BRAKE_PURE_PYTHON`` set (to compare the paths, and to measure)."""
    if os.environ.get("LOOP_BRAKE_PURE_PYTHON"):
        return None
    return _scan_event


NOT_BUILT = (
    "Python (the optional C reader was not built at install, usually for want of a C "
    "compiler: install gcc and the Python headers, then reinstall loop-brake-cli)"
)


def reader_name() -> str:
    """Which reader ``filter`` uses for event lines (``loop-brake --version``), and why."""
    if _scan_event is None:
        return NOT_BUILT
    if scanner() is None:
        return "Python (LOOP_BRAKE_PURE_PYTHON is set)"
    return f"C with {_SHA_INSTRUCTIONS}" if _SHA_INSTRUCTIONS else "C"


def _exact(line: bytes, number: int) -> Record:
    """What ``formats.events.parse`` yields for this line."""
    try:
        obj = parse_json(line)
    except JSONInputError as exc:
        return BadRecord(str(exc), number)
    return decode_event(obj, number)


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
    with relaxed_gc():
        _judge_lines(source, _Judge(brake, tally, out, wanted, file, shard))


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """Raise the cyclic GC thresholds for the run, and restore them after.

    Session slots are long-lived objects: with the default thresholds the cyclic
    GC rescans them over and over (29% of the time with 1,000,000 sessions).
    Young cycles are still collected. A slot is a named tuple, which the GC never
    untracks (it untracks exact tuples only), so on the way out everything still
    tracked is moved to the oldest generation (freeze, then unfreeze): otherwise
    the first collection under the restored thresholds scans every slot of the
    run once more (0.47 s with 1,000,000 sessions)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 50, 1000)
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.set_threshold(*thresholds)


class _Judge:
    """What the loop over lines needs besides the line: templates, caches, and the
    rare cases (exact path, duplicates, cache misses) as methods, so that the loop
    itself stays the common case with no call it can avoid."""

    def __init__(
        self,
        brake: LoopBrake,
        tally: Tally,
        out: LineWriter,
        wanted: set[str] | frozenset[str],
        file: str | None,
        shard: tuple[int, int] | None,
    ) -> None:
        self.brake, self.tally, self.out, self.wanted, self.file = brake, tally, out, wanted, file
        self.shard = shard
        self.templates = VerdictTemplates(brake.max_repeats, file)
        # tool -> [sha256 of ``tool + "\n"``, those bytes, its pass line, its deny line
        # (None until its first deny), the name itself: every slot of the tool shares it]
        self.tools: dict[str, list[Any]] = {}
        # hashed bytes -> (sha256, its 12-hex prefix as bytes): repeated calls are the norm
        self.digests: dict[bytes, tuple[bytes, bytes]] = {}
        # a hit saves the checks and sha256, a miss costs a look-up and a store
        self.digest_switch = CacheSwitch(self.digests, 1 / 3)
        # the text of an event line before its last member, ',"callId":"..."}' ->
        # (tool, session, digest, hash prefix, tool cache entry, session JSON); see
        # remember_line
        self.lines: dict[bytes, tuple[str, str, bytes, bytes, tuple, bytes]]
        self.lines = {}
        self.line_switch = CacheSwitch(self.lines, 1 / 4)
        # the C reader, switched off for a while when it declines most lines (a decline
        # costs the read up to where it gave up, then the orjson path reads the line)
        self.scan = scanner()
        self.scan_switch = CacheSwitch(None, 1 / 4)
        # session -> whether it belongs to this shard; None when not sharding
        self.in_shard: dict[str, bool] | None = None if shard is None else {}

    def exactly(self, record: Record) -> None:
        """Judge one record the exact way (``write_verdicts``), honouring the shard:
        errors belong to shard 0, calls to their session's shard."""
        shard = self.shard
        if shard is not None:
            if record.__class__ is BadRecord:
                if shard[0] != 0:
                    return
            elif shard_of(record.session, shard[1]) != shard[0]:  # type: ignore[union-attr]
                return
        write_verdicts((record,), self.brake, self.tally, self.out, self.wanted, self.file)

    def tool_miss(self, tool: str) -> list[Any]:
        """Fill the tool cache: a sha256 that has hashed ``tool + "\n"`` (a copy of it
        hashes a call: no concatenation, no digest look-up by name), those bytes, and
        the tool's pass line (its deny line waits for a deny: see ``deny_line``)."""
        tools = self.tools
        if len(tools) >= CACHE_LIMIT:
            tools.clear()
        head = (tool + "\n").encode("utf-8")  # tools reaching here hold no lone surrogate
        known = tools[tool] = [_sha256(head), head, self.templates.pass_line(tool), None, tool]
        return known

    def deny_line(self, known: list[Any]) -> bytes:
        """The deny line of a tool cache entry, built on its first deny."""
        line = known[3] = self.templates.deny_line(known[4])
        return line

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

    def remember_line(self, key: bytes, line: bytes, entry: tuple) -> None:
        """Remember what a line of the common shape gave, under its text up to its last
        member ``,"callId":"..."}`` (``key``), so that a later line with the same text
        and another call id is not parsed, dumped, checked or hashed again.

        Sound because ``line`` is valid JSON that parsed to a clean call, and ends
        ``,"callId":`` + one JSON string + ``}``: a raw ``,"`` cannot occur inside a
        string, so that ``callId`` is the top-level object's last member, and any line
        of the form ``key + ',"callId":' + string + '}'`` parses to the same object
        with only that member changed (the loop checks the string with orjson)."""
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

    def shard_miss(self, session: str) -> bool:
        """Fill the shard cache: whether this session's calls are judged here."""
        cache = self.in_shard
        assert cache is not None and self.shard is not None
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        index, count = self.shard
        keep = cache[session] = shard_of(session, count) == index
        return keep

    def duplicate(self, slot: Any, session: str, call_id: Any, tool: str, number: int) -> bool:
        """Write the verdict of a call already counted (same call id): rare, so the exact
        writer, with the slot's tool and hash. Returns whether it is a deny."""
        self.tally.duplicates += 1
        verdict = self.brake.slot_verdict(slot, session, call_id, True)
        if ("deny" if verdict.denied else "pass") in self.wanted:
            record = ToolCall(tool, None, session, call_id, number)
            self.out.write(verdict_record(record, verdict, self.file))
        return verdict.denied


def _unusual_call(obj: dict, number: int) -> tuple[str, Any, str, Any] | None:
    """Tool, args, session key and call id of an event in any other shape (aliases,
    agent ids, nulls), read by the exact decoder; None when the exact path must judge
    it: not a clean call (``wire.fields`` refuses an integer call id beyond 2**53)."""
    record = decode_event(obj, number)
    if record.__class__ is not ToolCall:
        return None
    return record.tool, record.args, record.session, record.call_id  # type: ignore[union-attr]


def _ids_json(session: str, call_id: Any) -> tuple[bytes, bytes]:
    """The JSON of an unusual call's session key and call id (empty without an id)."""
    return encode_string(session).encode(), b"" if call_id is None else _dumps(call_id)


def _judge_lines(source: Source, judge: _Judge) -> None:
    """The hot loop: parse, hash, count and write each line, handing every line it
    cannot be sure of to the exact path; the tally is updated even if writing fails.

    Per line it calls only builtins, orjson and ``count_call`` unless a cache misses
    or the line is unusual: every rare case is a function of its own, the common one
    stays inline on purpose. One more Python call per line costs about 2% (this loop
    split into a generator of sure calls and a consumer ran 2.4% more instructions)."""
    append = judge.out.pending().append  # flushed by the reader's on_wait
    exactly = judge.exactly
    count_call = judge.brake.count_call
    max_repeats = judge.brake.max_repeats
    want_pass = "pass" in judge.wanted
    want_deny = "deny" in judge.wanted
    loads, dumps, options = _loads, _dumps, _OPTIONS
    tools, tool_miss = judge.tools, judge.tool_miss
    get_digest, digest_miss = judge.digests.get, judge.digest_miss
    digests_from = 0  # the line from which the digest cache is used (see CacheSwitch)
    hexlify = _hexlify
    in_shard, shard_miss = judge.in_shard, judge.shard_miss
    get_line, remember_line, line_switch = judge.lines.get, judge.remember_line, judge.line_switch
    lines_from = 0  # the line from which the line cache is used
    scan, scan_switch = judge.scan, judge.scan_switch
    scan_from = 0 if scan is not None else 1 << 62  # the line from which it is asked
    passed = denied = 0
    try:
        for number, line in source.lines():
            if line is TOO_LONG:
                exactly(line_too_long(number, source.max_line_bytes))
                continue
            # the C reader proves the common line whole, or says None (see its header)
            if scan_from <= number:
                scanned = scan(line)
                if scanned is None:
                    scan_from = scan_switch.miss(number)
            else:
                scanned = None
            if scanned is not None:
                tool, session, call_id, digest, hash_prefix, session_json, call_json = scanned
                known = tools.get(tool)
                if known is None:
                    known = tool_miss(tool)
                tool = known[4]
            else:
                entry = key = None
                if lines_from <= number:  # the line cache (see _Judge.lines)
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
                    call_json = encode_string(call_id).encode()
                else:
                    try:
                        obj = loads(line)
                    except _DecodeError:
                        exactly(_exact(line, number))
                        continue
                    if obj.__class__ is not dict or (len(line) >= 1024 and too_deep(line)):
                        exactly(_exact(line, number))  # too deep: parse_json may refuse it
                        continue
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
                            exactly(_exact(line, number))
                            continue
                        tool, args, session, call_id = call
                        session_json, call_json = _ids_json(session, call_id)
                        key = None  # only the common shape is remembered
                    try:
                        canonical = dumps(args, option=options)
                    except _EncodeError:
                        exactly(_exact(line, number))
                        continue
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
                        # cheaper than find (whose arguments are parsed the slow way)
                        if (
                            canonical.replace(b".0", b"") is not canonical
                            or canonical.replace(b"e+", b"") is not canonical
                            or canonical.replace(b"e-", b"") is not canonical
                            or not canonical.isascii()
                        ) and not is_exact(canonical):
                            exactly(_exact(line, number))
                            continue
                        if hashed is not None:
                            digest, hash_prefix, digests_from = digest_miss(hashed, number)
                        else:
                            hasher = known[0].copy()
                            hasher.update(canonical)
                            digest = hasher.digest()
                            hash_prefix = hexlify(digest[:6])
                    if key is not None:
                        entry = (tool, session, digest, hash_prefix, known, session_json)
                        remember_line(key, line, entry)
            if in_shard is not None:
                keep = in_shard.get(session)
                if not (shard_miss(session) if keep is None else keep):
                    continue
            slot, duplicate = count_call(session, tool, digest, call_id)
            if duplicate:
                if judge.duplicate(slot, session, call_id, tool, number):
                    denied += 1
                else:
                    passed += 1
                continue
            count = slot[1]  # Slot.count by index: 3.11 does not specialise named-tuple fields
            if count >= max_repeats:
                denied += 1
                if not want_deny:
                    continue
                deny_line = known[3]
                if deny_line is None:
                    deny_line = judge.deny_line(known)
                line_out = deny_line % (
                    number,
                    session_json,
                    call_json,
                    count,
                    hash_prefix,
                    count,
                    hash_prefix,
                )
            else:
                passed += 1
                if not want_pass:
                    continue
                # the slot holds this digest: not a duplicate
                line_out = known[2] % (number, session_json, call_json, count, hash_prefix)
            if call_id is None:  # no id: drop the empty field (a JSON-encoded string
                # cannot contain '"callId":,', so only the field matches)
                line_out = line_out.replace(b'"callId":,', b"", 1)
            append(line_out)
    finally:
        judge.tally.passed += passed
        judge.tally.denied += denied
