"""``streak.policy_step`` as it was written before issue 41 (a mutable call, each rule a
function of it, run in the order of ``RULES``): kept as a reference that the faster
``policy_step`` of ``core/streak.py`` must equal, state for state
(``tests/test_policy_step_before.py``). Not imported by the package."""

from __future__ import annotations

from typing import Any

from loop_brake_cli.core.policy.model import Policy
from loop_brake_cli.core.streak import (
    Decision,
    PolicySlot,
    Slot,
    identical_calls,
    is_denied,
    same_result_run,
    step,
)

_PASS = Decision(False, "streak", None, 0)  # a counted call's decision before its rules


class _Call:
    """One counted call under a policy while its rules decide (``policy_step``): what the
    call is (its slot, tool, digest), what the previous state was, what its tool's rule
    gives it, the decision so far and the parts of the next state each rule keeps.
    Mutable and private: a rule reads what earlier rules wrote and writes its own part."""

    __slots__ = (
        "prev",
        "restarted",
        "slot",
        "tool",
        "digest",
        "max_repeats",
        "policy",
        "limit",
        "exempt",
        "match",
        "policy_hash",
        "progress",
        "warn_at",
        "decision",
        "earlier",
        "earlier_results",
        "recent",
        "recent_tools",
        "runs",
        "seen",
        "error_digest",
        "errors",
        "awaiting",
        "progress_max",
        "same_exempt",
        "identical",
        "same_digest",
        "sames",
        "same_awaiting",
    )

    def __init__(
        self,
        prev: PolicySlot | None,
        restarted: bool,
        slot: Slot,
        digest: bytes,
        max_repeats: int,
        policy: Policy,
    ) -> None:
        self.prev, self.restarted, self.slot = prev, restarted, slot
        self.tool, self.digest = slot.tool, digest
        self.max_repeats, self.policy = max_repeats, policy
        self.limit, self.exempt, self.policy_hash = max_repeats, False, False
        self.match: str | None = None  # the tool pattern of the rule that applies
        self.progress, self.warn_at = policy.progress, policy.warn_at
        self.decision = _PASS
        self.earlier: bytes | None = None
        self.earlier_results = 0
        self.recent: tuple[bytes, ...] = ()
        self.recent_tools: tuple[str, ...] = ()
        self.runs: tuple[int, ...] = ()
        self.seen: tuple[bytes, ...] = ()
        self.error_digest: bytes | None = None
        self.errors = 0
        self.awaiting = False
        self.progress_max = policy.progress_max
        self.same_exempt = False
        self.identical = 0
        self.same_digest: bytes | None = None
        self.sames = 0
        self.same_awaiting = False

    def deny(self, rule: str, limit: int, **fields: Any) -> None:
        """The call is denied by ``rule`` (its limit ``limit``)."""
        self.decision = self.decision._replace(denied=True, rule=rule, limit=limit, **fields)

    @property
    def open(self) -> bool:
        """Not denied yet and not exempt: a later rule may still deny it."""
        return not self.decision.denied and not self.exempt

    def state(self) -> PolicySlot:
        return PolicySlot(
            self.slot,
            self.decision,
            self.recent,
            self.recent_tools,
            self.runs,
            self.earlier,
            self.earlier_results,
            None,
            self.seen,
            self.error_digest,
            self.errors,
            self.awaiting,
            0 if self.identical == self.slot.count else self.identical,
            self.same_digest,
            self.sames,
            self.same_awaiting,
        )


def tool_rule(call: _Call) -> None:
    """The call's limit: its first matching ``[[tools]]`` rule's, else the global one; an
    exempt call is never denied. The rule may also set ``progress``, ``warn_at``,
    ``progress_max``, ``same_result`` and ``args_ignore`` (the call was counted on a
    policy hash)."""
    found = call.policy.rule_for(call.tool)
    if found is None:
        return
    rule, call.match = found
    call.exempt = rule.exempt
    call.same_exempt = rule.exempt or rule.same_result is False
    if rule.progress_max is not None:
        call.progress_max = rule.progress_max
    call.policy_hash = bool(rule.ignore_paths)
    if rule.max_repeats is not None:
        call.limit = rule.max_repeats
    if rule.progress is not None:
        call.progress = rule.progress
    if rule.warn_at is not None:
        call.warn_at = rule.warn_at


def progress_rule(call: _Call) -> None:
    """Progress mode: the streak goes on, so its results go on with it (the latest call's
    result becomes an earlier one; after a restart, the only earlier one)."""
    prev = call.prev
    if not call.progress or call.slot.count <= 1 or prev is None:
        return
    if call.restarted:
        call.earlier, call.earlier_results = prev.latest_result, 1
    elif prev.latest_result is not None:
        call.earlier, call.earlier_results = prev.latest_result, prev.earlier_results + 1
    else:
        call.earlier, call.earlier_results = prev.earlier_result, prev.earlier_results


def streak_rule(call: _Call) -> None:
    """``streak``: denied when its count reaches the call's limit (``is_denied``)."""
    if call.exempt:
        decision = Decision(False, "streak", None, call.max_repeats, exempt=True, match=call.match)
    else:
        denied = is_denied(call.slot.count, call.limit)
        decision = Decision(denied, "streak", call.limit, call.limit, match=call.match)
    if call.progress:
        decision = decision._replace(progress=True, results=call.earlier_results)
    if call.policy_hash:
        decision = decision._replace(policy_hash=True)
    call.decision = decision


def progress_max_rule(call: _Call) -> None:
    """``progress_max``: the identical calls in a row go on, whatever the results; a
    call of a tool in the progress mode is denied when they reach its ceiling."""
    call.identical = identical_calls(call.prev, call.digest)
    if call.progress and call.open:
        ceiling = call.policy.progress_ceiling(call.progress_max, call.limit)
        if call.identical >= ceiling:
            call.deny("progress_max", ceiling, repeats=call.identical)


def cycle_rule(call: _Call) -> None:
    """``cycle``: the window of recent calls goes on; the call that completes the
    ``max_repeats``-th consecutive repetition of a 2..max_period-call cycle is denied."""
    cycles = call.policy.cycles
    if cycles is None:
        return
    from loop_brake_cli.core.policy.cycles import advance, find_cycle

    prev = call.prev
    if prev is not None:
        call.recent, call.recent_tools, call.runs = prev.recent, prev.recent_tools, prev.runs
    call.recent, call.recent_tools, call.runs = advance(
        call.recent, call.recent_tools, call.runs, call.digest, call.tool, cycles.max_period
    )
    if call.open:
        found = find_cycle(
            call.recent, call.recent_tools, call.runs, cycles.max_repeats, call.policy.is_exempt
        )
        if found is not None:
            period, repeats = found
            call.deny("cycle", cycles.max_repeats, period=period, repeats=repeats)


def window_rule(call: _Call) -> None:
    """``window``: the last ``calls`` digests go on; denied when this call's digest is
    among them ``max_repeats`` times."""
    window = call.policy.window
    if window is None:
        return
    prev = call.prev
    call.seen = (() if prev is None else prev.seen[1 - window.calls :]) + (call.digest,)
    if call.open:
        times = call.seen.count(call.digest)
        if times >= window.max_repeats:
            call.deny("window", window.max_repeats, window=window.calls, repeats=times)


def same_error_rule(call: _Call) -> None:
    """``same_error``: the run of identical errors goes on while the session's calls are
    this tool's and their results were seen; denied at ``after`` in a row. A call let
    run awaits its result (``result_step``)."""
    same_error = call.policy.same_error
    if same_error is None:
        return
    prev = call.prev
    if prev is not None and not prev.awaiting and prev.slot.tool == call.tool:
        call.error_digest, call.errors = prev.error_digest, prev.errors  # the run goes on
    if call.open and call.errors >= same_error.after:
        call.deny("same_error", same_error.after, repeats=call.errors)
    call.awaiting = not call.decision.denied


def same_result_rule(call: _Call) -> None:
    """``same_result``: the run of identical results goes on while the session's calls
    ran and their results were seen (one tool's, or any tool's); denied at ``after`` in
    a row. A call let run awaits its result (``result_step``)."""
    same_result = call.policy.same_result
    if same_result is None:
        return
    any_tool = same_result.any_tool
    call.same_digest, call.sames = same_result_run(call.prev, call.tool, call.same_exempt, any_tool)
    if call.open and not call.same_exempt and call.sames >= same_result.after:
        call.deny("same_result", same_result.after, repeats=call.sames)
        if any_tool:  # nothing the agent calls would end it: the denial does
            call.same_digest, call.sames = None, 0
    call.same_awaiting = not call.decision.denied and not call.same_exempt


def stop_rule(call: _Call) -> None:
    """``stop``: a denied call counts the session's denials in a row; at
    ``after_denials`` it is a stop. A passing call ends the run of denials."""
    if not call.decision.denied:
        return
    denials = (call.prev.decision.denials if call.prev is not None else 0) + 1
    stop = call.policy.stop
    if stop is not None and denials >= stop.after_denials:
        call.decision = call.decision._replace(
            rule="stop", limit=stop.after_denials, denials=denials
        )
    else:
        call.decision = call.decision._replace(denials=denials)


def warn_rule(call: _Call) -> None:
    """``warn_at``: a call that passes, is not exempt and whose streak count reached
    ``warn_at`` runs, warned."""
    if call.warn_at is not None and call.open and call.slot.count >= call.warn_at:
        call.decision = call.decision._replace(warn_at=call.warn_at)


RULES = (
    tool_rule,
    progress_rule,
    streak_rule,
    progress_max_rule,
    cycle_rule,
    window_rule,
    same_error_rule,
    same_result_rule,
    stop_rule,
    warn_rule,
)
"""The policy's rules, in the order they decide a counted call (``policy_step``)."""


def policy_step(
    prev: PolicySlot | None,
    tool: str,
    digest: bytes,
    call_id: Any,
    max_repeats: int,
    policy: Policy,
) -> tuple[PolicySlot, bool]:
    """The session's state after one call under ``policy``, and whether the call was a
    duplicate. Pure, like ``step`` (which does the counting, from 1 again after a
    progress restart); then each of ``RULES``, in order, decides."""
    base = None if prev is None else prev.slot
    restarted = prev is not None and prev.restarts
    if restarted:
        base = base._replace(count=1)  # type: ignore[union-attr]  # restarted: prev is set
    slot, duplicate = step(base, tool, digest, call_id)
    if duplicate:
        assert prev is not None
        return prev, True
    call = _Call(prev, restarted, slot, digest, max_repeats, policy)
    for rule in RULES:
        rule(call)
    return call.state(), False
