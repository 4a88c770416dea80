"""The streak rule of dsh-loop-brake, stated once.

Every front-end (``LoopBrake`` in memory, the hook's SQLite store, and through
them ``filter``, ``replay``, the hook and the MCP proxy) counts a call by
calling ``step`` and denies by ``is_denied``; nothing else restates the rule.

Per session there is one slot: the digest of the current streak, its count,
and the id and tool name of the last call counted into it.

* the first call of a session starts a streak at 1;
* a call whose call id equals the slot's (not None) is the same call seen twice
  by the host: it is not counted, the slot is unchanged, and it is a duplicate
  whatever its digest;
* otherwise the same digest extends the streak by 1, and any other digest
  starts a new streak at 1;
* a call is denied when its count reaches ``max_repeats`` (denied calls count).

With a policy (``policy/``), ``policy_step`` is the rule: the same slot and the
same duplicate rule, and then, in this order, one decision per counted call:

* the call's limit is its first matching ``[[tools]]`` rule's, else the global
  one; an exempt call is never denied (it still ends any other streak);
* ``streak``: denied when its count reaches that limit;
* ``cycle`` (when ``[cycles]`` is on): else denied when it completes the
  ``max_repeats``-th consecutive repetition of a 2..max_period-call cycle
  (``policy/cycles.py``);
* ``stop`` (when ``[stop]`` is on): a denied call that makes
  ``after_denials`` denials in a row in the session is a stop; a passing call
  resets that count.

A duplicate returns the previous slot, whose decision is the counted call's.
Without a policy ``step`` is used, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .policy.model import Policy

__all__ = ["Decision", "PolicySlot", "Slot", "is_denied", "policy_step", "step"]


class Slot(NamedTuple):
    """A session's streak after a call; immutable, so a store can keep or drop it."""

    digest: bytes
    count: int
    call_id: Any
    tool: str


def step(prev: Slot | None, tool: str, digest: bytes, call_id: Any = None) -> tuple[Slot, bool]:
    """The session's slot after one call, and whether the call was a duplicate.

    Pure: the caller stores the returned slot (a duplicate returns ``prev`` itself).
    """
    if prev is not None:
        if call_id is not None and call_id == prev.call_id:
            return prev, True
        if prev.digest == digest:
            return Slot(digest, prev.count + 1, call_id, tool), False
    return Slot(digest, 1, call_id, tool), False


def is_denied(count: int, max_repeats: int) -> bool:
    """The call that brings a streak to ``max_repeats`` is denied, and every later one."""
    return count >= max_repeats


class Decision(NamedTuple):
    """What ``policy_step`` decided for the call counted into a ``PolicySlot``.

    ``max_repeats`` is the streak limit that applied to the call (its tool rule's,
    else the global one); ``limit`` the limit of the rule named by ``rule``
    (None for an exempt call); ``period``/``repeats`` describe a cycle denial;
    ``denials`` the consecutive denials in the session, this call included."""

    denied: bool
    rule: str
    limit: int | None
    max_repeats: int
    exempt: bool = False
    match: str | None = None
    period: int = 0
    repeats: int = 0
    denials: int = 0


class PolicySlot(NamedTuple):
    """A session's state under a policy: the streak slot, the cycle window (empty
    unless cycles are on), the consecutive denials and the last call's decision."""

    slot: Slot
    decision: Decision
    recent: tuple[bytes, ...] = ()
    recent_tools: tuple[str, ...] = ()
    runs: tuple[int, ...] = ()


def policy_step(
    prev: PolicySlot | None,
    tool: str,
    digest: bytes,
    call_id: Any,
    max_repeats: int,
    policy: Policy,
) -> tuple[PolicySlot, bool]:
    """The session's state after one call under ``policy``, and whether the call was a
    duplicate. Pure, like ``step`` (which does the counting)."""
    slot, duplicate = step(None if prev is None else prev.slot, tool, digest, call_id)
    if duplicate:
        assert prev is not None
        return prev, True
    found = policy.rule_for(tool)
    limit, exempt, match = max_repeats, False, None
    if found is not None:
        rule, match = found
        exempt = rule.exempt
        if rule.max_repeats is not None:
            limit = rule.max_repeats
    recent: tuple[bytes, ...] = ()
    recent_tools: tuple[str, ...] = ()
    runs: tuple[int, ...] = ()
    cycles = policy.cycles
    if cycles is not None:
        from .policy.cycles import advance, find_cycle

        if prev is not None:
            recent, recent_tools, runs = prev.recent, prev.recent_tools, prev.runs
        recent, recent_tools, runs = advance(
            recent, recent_tools, runs, digest, tool, cycles.max_period
        )
    if exempt:
        decision = Decision(False, "streak", None, max_repeats, exempt=True, match=match)
    elif is_denied(slot.count, limit):
        decision = Decision(True, "streak", limit, limit, match=match)
    else:
        decision = Decision(False, "streak", limit, limit, match=match)
        if cycles is not None:
            found_cycle = find_cycle(
                recent, recent_tools, runs, cycles.max_repeats, policy.is_exempt
            )
            if found_cycle is not None:
                period, repeats = found_cycle
                decision = Decision(
                    True, "cycle", cycles.max_repeats, limit, False, match, period, repeats
                )
    if decision.denied:
        denials = (prev.decision.denials if prev is not None else 0) + 1
        stop = policy.stop
        if stop is not None and denials >= stop.after_denials:
            decision = decision._replace(rule="stop", limit=stop.after_denials, denials=denials)
        else:
            decision = decision._replace(denials=denials)
    return PolicySlot(slot, decision, recent, recent_tools, runs), False
