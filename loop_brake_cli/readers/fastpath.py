"""The fast path of ``loop-brake filter --format events``: the same bytes out, less work.

Exactness first: every verdict line written here is byte-identical to what the
exact path (``formats.events.parse`` -> ``judge`` -> ``verdict_record`` ->
``json_line``) writes, and every hash equals ``canonical.call_digest``. Each line
goes through four steps, all in ``_judge_lines``:

1. **read**: ``reader.Source.lines`` (located lines, the line limit, a flush of
   pending verdicts before each blocking read);
2. **prove** the call and its hash, or hand the line to the exact path: the
   optional C reader (``_event_scan.c``, built where a compiler was found) answers
   only for a line it proves whole (valid JSON, the common shape, arguments in a
   subset whose canonical form is the input sorted), and is switched off for a
   while where it declines most lines; otherwise ``prove.PythonProver`` (orjson,
   with the checks of ``fast_canonical``) gives the same answer or hands the line over;
3. **decide**: the brake's table counts the call (``count_call``: the one streak rule,
   ``core/streak.py``; in ``compact_table.CompactTable`` where the C reader is
   built, else in ``MemoryTable``);
4. **write**: a per-tool ``%`` template of the verdict line (``fast_lines.py``),
   appended to the output's pending lines (``output.LineWriter``).

The steps stay inline in one loop on purpose: one more Python call per line costs
about 2% (this loop split into a generator of sure calls and a consumer ran 2.4%
more instructions); every rare case (a cache miss, a duplicate call id, a shard
look-up, the exact path) is a method of ``_Judge``.

``tests/test_fastpath_node.py`` checks the canonical forms against Node.js and
``tests/test_fastpath.py`` checks whole verdict streams against the exact path.
"""

from __future__ import annotations

import os
from binascii import hexlify as _hexlify
from hashlib import sha256 as _sha256
from typing import Any

from ..core.brake import LoopBrake
from ..core.records import BadRecord, Record, ToolCall, line_too_long, verdict_record
from . import fast_canonical as _fc
from .fast_canonical import AVAILABLE, fast_canonical, fast_digest
from .fast_lines import CACHE_LIMIT, CacheSwitch, VerdictTemplates
from .gc_pace import relaxed_gc
from .output import LineWriter, json_line
from .pipeline import Tally, write_verdicts
from .policy_lines import template as policy_template
from .policy_table import DUPLICATE, CompactPolicyTable
from .prove import PythonProver, exact_record
from .reader import TOO_LONG, Source
from .shard import shard_of
from .wire.event_line import decode as decode_event

__all__ = [
    "AVAILABLE",
    "NOT_BUILT",
    "enabled",
    "fast_canonical",
    "filter_events",
    "reader_name",
    "takes",
]

from .c_reader import NOT_BUILT, reader_name
from .c_reader import policy_digest as _c_policy_digest
from .c_reader import scan_event as _scan_event


def enabled() -> bool:
    """orjson is installed and ``LOOP_BRAKE_EXACT`` is not set (to compare the paths)."""
    return AVAILABLE and not os.environ.get("LOOP_BRAKE_EXACT")


def scanner() -> Any:
    """The C reader of common event lines (``_event_scan.c``), or None: not built, or
    ``LOOP_BRAKE_PURE_PYTHON`` set (to compare the paths, and to measure)."""
    if os.environ.get("LOOP_BRAKE_PURE_PYTHON"):
        return None
    return _scan_event


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
    judge = _Judge(brake, tally, out, wanted, file, shard)
    with relaxed_gc():
        if brake.policy is None:
            _judge_lines(source, judge)
        else:
            _judge_policy_lines(source, judge)


def takes(brake: LoopBrake) -> bool:
    """Whether ``filter_events`` judges for this brake: in memory (a store decides each
    call itself), and a policy, if any, that reads neither results nor user turns
    (those records take the exact path's reader, ``formats.events``)."""
    return brake.store is None and not brake.progress and not brake.user_turns


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
        # the C reader, switched off for a while when it declines most lines (a decline
        # costs the read up to where it gave up, then the orjson path reads the line)
        self.scan = scanner()
        self.scan_switch = CacheSwitch(None, 1 / 4)
        # session -> whether it belongs to this shard; None when not sharding
        self.in_shard: dict[str, bool] | None = None if shard is None else {}
        # the prove step where the C reader is not built or declines a line
        self.prover = PythonProver(self.tools, self.tool_miss, self.exactly)
        # a call's digest -> its policy hash (the tool's rule has args_ignore)
        self.policy_digests: dict[bytes, bytes] = {}

    def exactly(self, record: Record) -> None:
        """Judge one record the exact way (``write_verdicts``), honouring the shard:
        errors belong to shard 0, calls to their session's shard."""
        shard = self.shard
        if shard is not None:
            if record.__class__ is BadRecord:
                if shard[0] != 0:
                    return
            # not a BadRecord: the record has a session
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
        policy = self.brake.policy
        if policy is not None:
            # under a policy: its verdict lines by (decision, count), or by the C step's
            # key; whether the tool's calls are counted on a policy hash (its rule's
            # args_ignore); the C step's plan of its calls (policy_table.py); the
            # argument names args_ignore leaves out when each path is ``$.name`` (the
            # C reader's policy_digest), else None
            found = policy.rule_for(tool)
            plan = getattr(self.brake.table, "plan", None)
            paths = () if found is None else found[0].ignore_paths
            names = None
            if all(len(path) == 1 and path[0].__class__ is str for path in paths):
                names = tuple(str(path[0]).encode("utf-8", "surrogatepass") for path in paths)
            known += [{}, bool(paths), None if plan is None else plan(tool), names]
        return known

    def deny_line(self, known: list[Any]) -> bytes:
        """The deny line of a tool cache entry, built on its first deny."""
        line = known[3] = self.templates.deny_line(known[4])
        return line

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

    def policy_exactly(
        self, state: Any, session: str, call_id: Any, tool: str, number: int, duplicate: bool
    ) -> None:
        """Write and tally a verdict under a policy the exact way (``write_verdicts``'s
        writer and ``Tally.add``): a duplicate, or a line no template writes."""
        verdict = self.brake.slot_verdict(state, session, call_id, duplicate)
        record = ToolCall(tool, None, session, call_id, number)
        self.tally.add(record, verdict)
        wanted = self.wanted
        if (
            ("deny" if verdict.denied else "pass") in wanted
            or (verdict.stop and "stop" in wanted)
            or (verdict.warned and "warn" in wanted)
        ):
            self.out.write(verdict_record(record, verdict, self.file))

    def policy_line(
        self,
        known: list[Any],
        key: Any,
        state: Any,
        session: str,
        call_id: Any,
        number: int,
        ids: tuple[bytes, bytes, bytes],
    ) -> None:
        """A key (a (decision, count), or the C step's int) of a tool met for the first
        time: make its template
        (``policy_lines.template``), keep it if it writes this call's exact line, and
        write and tally this call the exact way. ``ids``: session JSON, call id JSON,
        hash prefix."""
        tool = known[4]
        made = policy_template(tool, state, self.file)
        exact = json_line(
            verdict_record(
                ToolCall(tool, None, session, call_id, number),
                self.brake.slot_verdict(state, session, call_id, False),
                self.file,
            )
        )
        if made is not None:
            session_json, call_json, prefix = ids
            line = made % (number, session_json, call_json, prefix, prefix, prefix)
            if call_id is None:
                line = line.replace(b'"callId":,', b"", 1)
            if line != exact:  # pragma: no cover - the marks are built to make it equal
                made = None
        decision = state[1]
        wanted = self.wanted
        templates = known[5]
        if len(templates) >= CACHE_LIMIT:
            templates.clear()
        templates[key] = (
            made,
            decision.denied,
            decision.warn_at is not None,
            ("deny" if decision.denied else "pass") in wanted
            or (decision.rule == "stop" and "stop" in wanted)
            or (decision.warn_at is not None and "warn" in wanted),
        )
        self.policy_exactly(state, session, call_id, tool, number, False)

    def policy_digest(
        self, line: bytes, number: int, known: list[Any], digest: bytes
    ) -> bytes | None:
        """The policy hash of a call whose tool's rule has ``args_ignore``
        (``Policy.args_digest``): by the C reader where every path is ``$.name`` and it
        reads the line (``policy_digest``: the canonical arguments it hashed, those
        members left out), else by ``fast_digest`` from the line's arguments; None when
        the line must take the exact path. Kept by the call's own digest: equal digests,
        equal canonical arguments, equal arguments once the paths are removed."""
        digests = self.policy_digests
        names = known[8]
        found = None
        if names is not None and self.scan is not None and _c_policy_digest is not None:
            found = _c_policy_digest(line, known[1], names)
        if found is None:
            try:
                args = decode_event(_fc.loads(line), number).args  # type: ignore[union-attr]  # a call
            except (_fc.DecodeError, AttributeError):  # pragma: no cover - the line was proven
                return None
            policy = self.brake.policy
            found = policy.args_digest(known[4], args, fast_digest)  # type: ignore[union-attr]  # a policy
        if len(digests) >= CACHE_LIMIT:
            digests.clear()
        digests[digest] = found
        return found


def _judge_lines(source: Source, judge: _Judge) -> None:
    """The hot loop: read, prove, decide and write each line (see the module's
    docstring), handing every line it cannot be sure of to the exact path; the
    tally is updated even if writing fails."""
    append = judge.out.pending().append  # flushed by the reader's on_wait
    exactly = judge.exactly
    count_call = judge.brake.table.count_call  # the memory table: no store, no policy here
    max_repeats = judge.brake.max_repeats
    want_pass = "pass" in judge.wanted
    want_deny = "deny" in judge.wanted
    tools, tool_miss = judge.tools, judge.tool_miss
    in_shard, shard_miss = judge.in_shard, judge.shard_miss
    prove = judge.prover.function()
    scan, scan_switch = judge.scan, judge.scan_switch
    scan_from = 0 if scan is not None else 1 << 62  # the line from which it is asked
    passed = denied = 0
    try:
        # 1. read
        for number, line in source.lines():
            if line is TOO_LONG:
                exactly(line_too_long(number, source.max_line_bytes))
                continue
            # 2. prove: the C reader proves the common line whole or says None (see its
            # header); then the Python prover proves it or has the exact path judge it
            if scan_from <= number:
                proven = scan(line)
                if proven is None:
                    scan_from = scan_switch.miss(number)
                    proven = prove(line, number)
            else:
                proven = prove(line, number)
            if proven is None:
                continue
            tool, session, call_id, digest, hash_prefix, session_json, call_json = proven
            known = tools.get(tool)
            if known is None:
                known = tool_miss(tool)
            tool = known[4]
            if in_shard is not None:
                keep = in_shard.get(session)
                if not (shard_miss(session) if keep is None else keep):
                    continue
            # 3. decide
            slot, duplicate = count_call(session, tool, digest, call_id)
            if duplicate:
                if judge.duplicate(slot, session, call_id, tool, number):
                    denied += 1
                else:
                    passed += 1
                continue
            count = slot[1]  # Slot.count by index: 3.11 does not specialise named-tuple fields
            # 4. write
            if count >= max_repeats:  # type: ignore[operator]  # a Slot: no policy here
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


def _judge_policy_lines(source: Source, judge: _Judge) -> None:
    """The hot loop under a policy: the same read and prove steps as ``_judge_lines``;
    a call of a tool with ``args_ignore`` is hashed without those paths (cached by its
    digest); the decision is the table's: in C where the table is
    ``policy_table.CompactPolicyTable`` (``policy_call``: an int, the key of the line),
    else ``streak.policy_step``, the one statement of the rules (the key is the
    (decision, count)); its line is the key's template (``policy_lines``), made and
    checked against the exact writer on first use. Duplicates and lines no template
    writes take the exact writer; the tally is updated even if writing fails."""
    append = judge.out.pending().append  # flushed by the reader's on_wait
    exactly = judge.exactly
    brake = judge.brake
    table: Any = brake.table
    count_call = table.count_call  # memory: no store here (takes)
    # the C step (policy_table.py), or None: policy_step in the dict
    compact = isinstance(table, CompactPolicyTable)
    policy_call = table.policy_call if compact else None
    state_of: Any = table.get if compact else None
    max_repeats, policy = brake.max_repeats, brake.policy
    tools, tool_miss = judge.tools, judge.tool_miss
    in_shard, shard_miss = judge.in_shard, judge.shard_miss
    policy_digests, policy_digest = judge.policy_digests, judge.policy_digest
    policy_line, policy_exactly = judge.policy_line, judge.policy_exactly
    hexlify = _hexlify
    prove = judge.prover.function()
    scan, scan_switch = judge.scan, judge.scan_switch
    scan_from = 0 if scan is not None else 1 << 62  # the line from which it is asked
    passed = denied = warned = 0
    try:
        # 1. read
        for number, line in source.lines():
            if line is TOO_LONG:
                exactly(line_too_long(number, source.max_line_bytes))
                continue
            # 2. prove (as _judge_lines)
            if scan_from <= number:
                proven = scan(line)
                if proven is None:
                    scan_from = scan_switch.miss(number)
                    proven = prove(line, number)
            else:
                proven = prove(line, number)
            if proven is None:
                continue
            tool, session, call_id, digest, hash_prefix, session_json, call_json = proven
            known = tools.get(tool)
            if known is None:
                known = tool_miss(tool)
            tool = known[4]
            if in_shard is not None:
                keep = in_shard.get(session)
                if not (shard_miss(session) if keep is None else keep):
                    continue
            if known[6]:  # counted on the policy hash: the arguments without args_ignore's paths
                found = policy_digests.get(digest)
                if found is None:
                    found = policy_digest(line, number, known, digest)
                    if found is None:  # pragma: no cover - the line was proven
                        exactly(exact_record(line, number))
                        continue
                digest = found
                hash_prefix = hexlify(digest[:6])
            # 3. decide: the policy's rules, in C (an int) or by streak.policy_step
            if policy_call is not None:
                key = policy_call(session, tool, digest, call_id, known[7])
                if key < 0:  # a duplicate, or a line for the exact writer (policy_table)
                    duplicate = key == DUPLICATE
                    policy_exactly(state_of(session), session, call_id, tool, number, duplicate)
                    continue
                state = None
            else:
                state, duplicate = count_call(session, tool, digest, call_id, max_repeats, policy)
                if duplicate:
                    policy_exactly(state, session, call_id, tool, number, True)
                    continue
                key = (state[1], state[0][1])  # (decision, count)
            # 4. write
            entry = known[5].get(key)
            if entry is None:
                policy_line(
                    known,
                    key,
                    state_of(session) if state is None else state,
                    session,
                    call_id,
                    number,
                    (session_json, call_json, hash_prefix),
                )
                continue
            made, is_denied, is_warned, wanted = entry
            if made is None:
                if state is None:
                    state = state_of(session)
                policy_exactly(state, session, call_id, tool, number, False)
                continue
            if is_denied:
                denied += 1
            else:
                passed += 1
                warned += is_warned
            if not wanted:
                continue
            line_out = made % (
                number,
                session_json,
                call_json,
                hash_prefix,
                hash_prefix,
                hash_prefix,
            )
            if call_id is None:  # no id: drop the empty field (as _judge_lines)
                line_out = line_out.replace(b'"callId":,', b"", 1)
            append(line_out)
    finally:
        judge.tally.passed += passed
        judge.tally.denied += denied
        judge.tally.warned += warned
