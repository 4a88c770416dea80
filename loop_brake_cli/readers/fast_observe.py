"""What ``judge`` (replay, and filter's exact path) does faster than the specification,
apart from it: each trick here has an exact statement in the core it must equal
(``tests/test_fast_observe.py`` holds both to it) and the measurement that pays for it.

* ``observe_for(brake)``: a brake in memory without a policy (replay's common case)
  counts through its table and builds the verdict with ``tuple.__new__``, skipping
  ``LoopBrake.observe``'s frame and the named tuple's Python-level ``__new__``: the
  same verdict as ``LoopBrake.observe`` (``verdicts.verdict_of``). It saves 0.39 us a
  call, 1.40x on counting and wording 100,000 calls (``python bench/fast_observe.py``,
  CPU time, interleaved rounds; Python 3.11 on this 2-core machine).
* ``plain_records``/``digest_for``: a stream an adapter marks as holding only plain
  JSON values (read by ``parse_json`` or orjson) is hashed with
  ``fast_canonical.fast_digest`` (orjson and its canonical-form proof) instead of
  ``canonical.call_digest`` (the pure-Python contract): 3.09 us a call less, 6.16x
  (``bench/fast_observe.py``). The generator is marked, not each call: an ``id()``
  and a dict entry per call cost about 2,000 instructions a call of a replay.
  (orjson would also serialise values ``canonical_json`` rejects, such as UUIDs and
  enums, so arguments of unknown origin take ``call_digest``.)
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import PREFIX_LENGTH, call_digest
from ..core.records import Record
from ..core.verdicts import Verdict

__all__ = ["digest_for", "observe_for", "plain_records"]

RecordStream = Generator[Record, None, None]

_PLAIN_CODE: set[object] = set()
"""The code objects of the generators whose calls' arguments are plain JSON values."""

_PREFIX_BYTES = PREFIX_LENGTH // 2
_new_verdict = tuple.__new__  # Verdict's fields in order, with no Python-level __new__


def plain_records(records: RecordStream) -> RecordStream:
    """Mark a generator of records (returned as is) whose calls' arguments are plain
    JSON values from parse_json or orjson, as every generator of its function's gives:
    the adapter's promise that lets ``judge`` hash them the fast way (``digest_for``).
    Only where ``fast_canonical.AVAILABLE`` (orjson is installed)."""
    _PLAIN_CODE.add(records.gi_code)  # type: ignore[attr-defined]  # not in typing.Generator
    return records


def digest_for(records: object) -> Callable[[str, object], bytes]:
    """How ``judge`` hashes the calls of ``records``: ``fast_digest`` for a stream
    marked by ``plain_records``, else the contract's ``call_digest``."""
    if getattr(records, "gi_code", None) in _PLAIN_CODE:
        from .fast_canonical import fast_digest

        return fast_digest
    return call_digest


def observe_for(brake: LoopBrake) -> Callable[[str, str, bytes, Any], Verdict]:
    """``brake.observe``, or for a brake in memory without a policy the same count and
    verdict built in one Python call (module docstring)."""
    if brake.store is not None or brake.policy is not None:
        return brake.observe
    count_call = brake.table.count_call
    max_repeats = brake.max_repeats

    def observe(session: str, tool: str, digest: bytes, call_id: Any = None) -> Verdict:
        slot, duplicate = count_call(session, tool, digest, call_id)
        # unpacked: 3.11 does not specialise named tuples; a Slot, as there is no policy
        digest, count, _, tool = slot  # type: ignore[misc]
        return _new_verdict(
            Verdict,
            (
                count >= max_repeats,  # streak.is_denied
                tool,
                session,
                count,
                max_repeats,
                digest[:_PREFIX_BYTES].hex(),  # canonical.hash_prefix of the slot's digest
                call_id,
                duplicate,
                None,
                None,
                False,
                None,
                (),
                0,
                0,
                False,
                0,
                0,
                None,
                False,
            ),
        )

    return observe
