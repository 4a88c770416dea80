"""filter's session table under a policy, in C: ``streak.policy_step`` without a dict.

Under a policy ``filter``'s fast path spent most of a call in ``policy_step`` (3.6 to
5 µs: the rules, then a ``PolicySlot`` and a ``Decision`` of 16 and 14 fields made for
every call). ``CompactPolicyTable`` counts in the C reader's ``SessionSlots`` made with
the policy's rules (``_policy_slots.h``): the same step (the duplicate rule, the
streak, the call's tool rule, then cycle, window, stop and warn, in that order) over
a compact entry per session, answering ``policy_call`` with an int (a duplicate, a
line the exact writer writes, or the key of the verdict line's template) so the hot
loop makes no Python object for the decision. ``count_call`` and ``get`` build the
``PolicySlot`` ``policy_step`` would have returned, from ``policy_state``, for every
other reader of the table (the exact path's records, duplicates, a template's first
line).

Which policies: ``c_rules`` decides once per policy, at the start, so a run's output
never depends on the input: the C step covers every rule a policy without results and
user turns can have (no progress mode, no ``[same_error]``, no ``[same_result]``, no
``reset_on_user_turn``: those read records ``filter``'s fast path does not read, and
keep the dict), within the sizes ``policy/load.py`` allows (``[window] calls`` 2..64,
``[cycles] max_period`` 2..16) and numbers within +-2**62. Anything else counts in
``core/table.py``'s dict through ``policy_step``, the statement this copies;
``tests/test_policy_table.py`` holds the two equal state for state (drawn policies and
sequences, evictions included) and ``tests/test_fastpath_policy.py`` through
``filter``'s bytes.
"""

from __future__ import annotations

from ..core.streak import Decision, PolicySlot, Slot, tool_rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.brake import LoopBrake
    from ..core.policy.model import Policy

__all__ = ["AVAILABLE", "CompactPolicyTable", "c_rules", "use_policy_table"]

try:  # optional: in the C reader, built when a C compiler was there at install
    from ._event_scan import SessionSlots

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised where the extension is not built
    AVAILABLE = False
    SessionSlots = object  # type: ignore[assignment, misc]  # a base only: none is made

_BOUND = 1 << 62  # the C step's numbers are int64, every one within +-2**62
_MAX_WINDOW = 64  # _policy_slots.h's POLICY_MAX_WINDOW
_MAX_PERIOD = 16  # _policy_slots.h's POLICY_MAX_PERIOD
_RULES = ("streak", "cycle", "window", "stop")  # RULE_STREAK.. in _policy_slots.h
_DENIED, _EXEMPT, _WARNED = 1, 2, 4  # PF_DENIED.. in _policy_slots.h
DUPLICATE = -2
"""``policy_call``'s answer for a duplicate: the session's state is the counted call's."""
EXACT = -1
"""``policy_call``'s answer for a call whose verdict line no template writes."""


def _bounded(*numbers: int | None) -> bool:
    return all(n is None or (type(n) is int and -_BOUND < n < _BOUND) for n in numbers)


def c_rules(policy: Policy, max_repeats: int) -> tuple[int, int, int, int, int] | None:
    """The rules the C step applies for ``policy`` (``SessionSlots``' ``policy``:
    window calls and max_repeats, cycles' max_period and max_repeats, stop's
    after_denials; 0, and -1 for stop, where the policy lacks the section), or None
    where ``policy_step`` must count (the module's docstring says which policies)."""
    window, cycles, stop = policy.window, policy.cycles, policy.stop
    if (
        policy.reads_results
        or policy.reset_on_user_turn
        or (window is not None and not 2 <= window.calls <= _MAX_WINDOW)
        or (cycles is not None and not 2 <= cycles.max_period <= _MAX_PERIOD)
        or not _bounded(max_repeats, policy.warn_at)
        or not all(_bounded(rule.max_repeats, rule.warn_at) for rule in policy.tools)
        or (window is not None and not _bounded(window.max_repeats))
        or (cycles is not None and not _bounded(cycles.max_repeats))
        or (stop is not None and not _bounded(stop.after_denials))
    ):
        return None
    return (
        0 if window is None else window.calls,
        0 if window is None else window.max_repeats,
        0 if cycles is None else cycles.max_period,
        0 if cycles is None else cycles.max_repeats,
        -1 if stop is None else stop.after_denials,
    )


class CompactPolicyTable(SessionSlots):
    """A ``core.table.SessionTable`` in this process's memory for one policy and
    maxRepeats: the C ``SessionSlots`` made with the policy's rules (``policy_call``,
    ``policy_state``, ``end_call``, ``reset``, ``len``, ``evictions``, ``sessions``)
    and the interface's ``count_call`` and ``get`` answering ``PolicySlot``s. Not
    locked (``LoopBrake`` holds its lock around the library's calls)."""

    __slots__ = ("policy", "max_repeats", "_plans")
    label = "memory"
    policy: Policy
    max_repeats: int
    _plans: dict[str, tuple[int, bool, int | None]]

    def __new__(
        cls, policy: Policy, max_repeats: int, max_sessions: int | None = None
    ) -> CompactPolicyTable:
        rules = c_rules(policy, max_repeats)
        if rules is None:
            raise ValueError("the C step does not cover this policy: count with policy_step")
        table = super().__new__(cls, Slot, max_sessions, rules)
        table.policy, table.max_repeats = policy, max_repeats
        table._plans = {}
        return table

    def plan(self, tool: str) -> tuple[int, bool, int | None]:
        """What ``policy_call`` takes of the call's tool rule (``streak.tool_rule``): the
        limit of its calls (``Decision.max_repeats``), exempt, warn_at."""
        plans = self._plans
        found = plans.get(tool)
        if found is None:
            limit, exempt, _, _, _, warn_at, _, _ = tool_rule(self.policy, tool)
            if exempt or limit is None:
                limit = self.max_repeats
            if len(plans) >= 4096:
                plans.clear()
            found = plans[tool] = (limit, exempt, warn_at)
        return found

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Policy | None = None,
        now: float | None = None,
    ) -> tuple[Any, bool]:
        """Count one call (``policy_step``'s rules, in C) and answer its ``PolicySlot``."""
        if policy is not self.policy or max_repeats != self.max_repeats:
            raise ValueError("this table counts its own policy and maxRepeats only")
        answer = self.policy_call(session, tool, digest, call_id, self.plan(tool))
        return self.get(session), answer == DUPLICATE

    def get(self, session: str) -> PolicySlot | None:
        """The session's state, as ``policy_step`` made it; None for a session not held."""
        raw = self.policy_state(session)
        if raw is None:
            return None
        (digest, count, call_id, tool, flags, rule, rule_limit, call_limit, warn_at,
         period, repeats, denials, window_on, digests, tools, runs) = raw  # fmt: skip
        policy = self.policy
        _, exempt, match, policy_hash, _, _, _, _ = tool_rule(policy, tool)
        window, cycles = policy.window, policy.cycles
        decision = Decision(
            bool(flags & _DENIED),
            _RULES[rule],
            None if flags & _EXEMPT else rule_limit,
            call_limit,
            bool(flags & _EXEMPT),
            match,
            period,
            repeats,
            denials,
            False,
            0,
            window.calls if window_on and window is not None else 0,
            warn_at if flags & _WARNED else None,
            policy_hash,
        )
        cut = 0 if cycles is None else -cycles.max_period
        return PolicySlot(
            Slot(digest, count, call_id, tool),
            decision,
            digests[cut:] if cycles is not None else (),
            tools[cut:] if cycles is not None else (),
            runs,
            seen=() if window is None else digests[-window.calls :],
        )

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Policy,
        error: bool = False,
        now: float | None = None,
    ) -> bool:
        """Results matter only to policies this table does not take (``c_rules``)."""
        raise ValueError("the compact policy table reads no results: count with policy_step")

    def close(self) -> None:
        """Nothing to release: the sessions stay until ``reset``."""


def use_policy_table(brake: LoopBrake) -> bool:
    """Count ``brake``'s calls in a ``CompactPolicyTable`` when the brake has a policy
    the C step covers (``c_rules``) and would count in memory (no store), on a brake
    that holds no session yet; ``compact_table.use_compact_table`` asks (the C reader
    built, neither ``LOOP_BRAKE_EXACT`` nor ``LOOP_BRAKE_PURE_PYTHON`` set). Returns
    whether it did."""
    policy = brake.policy
    if (
        not AVAILABLE
        or policy is None
        or brake.store is not None
        or len(brake)
        or c_rules(policy, brake.max_repeats) is None
    ):
        return False
    brake.table = CompactPolicyTable(policy, brake.max_repeats, brake.max_sessions)
    return True
