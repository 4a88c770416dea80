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

An id counts once only while its call is open: from its first sighting until
its result or answer is seen. A front-end that sees the end of a call says so
(``call_ended``: ``LoopBrake.end_call``, ``Store.end_call``; a result paired by
``result_step`` ends its call too): the slot forgets the id (when it is still
the slot's), so a later call with the same id is a new call and is counted (a
client that reuses its JSON-RPC id after each answer, a model that numbers its
calls ``call_0`` every turn). Nothing else of the slot changes. A front-end
that never sees results (``filter`` on bare events, the hook without a
progress policy) never ends a call: there an id equal to the last counted id
is always a duplicate, the Node plugin's rule, byte for byte.

With a policy (``policy/``), ``policy_step`` is the rule: the same slot and the
same duplicate rule (``step`` counts), and then the rules, in this order, each
deciding or keeping its part of the counted call's state (each a section of
``policy_step`` named as below):

* ``tool_rule``: the call's limit is its first matching ``[[tools]]`` rule's,
  else the global one; an exempt call is never denied (it still ends any other
  streak);
* ``progress_rule`` (progress mode): the streak's results go on with it (the
  progress section below);
* ``streak_rule``, ``streak``: denied when its count reaches that limit;
* ``progress_max_rule``, ``progress_max`` (a call of a tool in the progress
  mode): else denied when the identical calls in a row, this one included,
  reach the ceiling (``identical_calls``: counted as ``step`` counts, results
  never restart it), its rule's or the global ``progress_max``, else
  ``DEFAULT_PROGRESS_MAX`` or the call's limit when that is higher
  (``Policy.progress_ceiling``);
* ``cycle_rule``, ``cycle`` (when ``[cycles]`` is on): else denied when it
  completes the ``max_repeats``-th consecutive repetition of a
  2..max_period-call cycle (``policy/cycles.py``);
* ``window_rule``, ``window`` (when ``[window]`` is on): else denied when its
  digest is seen ``max_repeats`` times (this call included) among the
  session's last ``calls`` counted calls (denied and exempt calls included):
  the window keeps those ``calls`` digests, nothing more;
* ``same_error_rule``, ``same_error`` (when ``[same_error]`` is on): else
  denied when the session's latest counted calls that ran, all of this call's
  tool and none of another tool's in between, returned the identical error
  ``after`` times in a row (the result's digest, as the progress mode hashes
  it, and an error flag; denied calls did not run and neither extend nor end
  the run; a call whose result was never seen ends it);
* ``same_result_rule``, ``same_result`` (when ``[same_result]`` is on): else
  denied when the session's latest counted calls that ran (of this call's
  tool, none of another tool's in between; of any tool with ``any_tool``)
  returned results with one digest ``after`` times in a row, whatever their
  arguments (the progress mode's digest, after ``result_ignore``). A tool whose
  rule says ``same_result = false`` (or ``exempt = true``) is never denied by it
  and its results are not read: with ``any_tool`` its calls neither extend nor
  end the run, for one tool they are another tool's. Denied calls did not run
  and neither extend nor end the run; a call whose result was never seen ends
  it. For one tool the denial holds until another tool is called (as
  ``same_error``); with ``any_tool`` nothing the agent calls would end the run,
  so the denial ends it and the next call starts a new one;
* ``stop_rule``, ``stop`` (when ``[stop]`` is on): a denied call that makes
  ``after_denials`` denials in a row in the session is a stop; a passing call
  resets that count;
* ``warn_rule``, ``warn_at`` (when the call's rule or the policy gives one): a
  call that passes, is not exempt and whose streak count has reached
  ``warn_at`` is warned (``Decision.warn_at``): it runs, and the model is told
  it is looping. A ``warn_at`` at or above the call's limit never warns (the
  deny comes first).

A call whose rule has ``args_ignore`` was hashed by its front-end without those
argument paths (``Policy.args_digest``): the rule above counts that policy hash,
and the decision says so (``Decision.policy_hash``), so no verdict passes it off
as the plugin's hash.

A duplicate returns the previous slot, whose decision is the counted call's.
Without a policy ``step`` is used, unchanged.

A user turn (``reset_on_user_turn = true``; ``ends_on_user_turn`` says whether
it applies): when the user speaks in a session, the session's whole state ends,
as ``state reset --session`` ends it: its streak, its cycle window, its
consecutive denials (a stop's count) and its results. The next call of the
session is its first (count 1), and a call id seen before the turn is no
duplicate of it. Only that session key: a subagent's streak
(``<session>/<agent>``) is a session of its own and runs on. Without the key a
user turn changes nothing at all.

The progress mode (``progress = true``, globally or for the rule of the call's
tool) lets results restart a streak: identical calls whose results keep
changing are polling, not a loop. ``result_step`` is its rule, pure like
``policy_step``:

* a result pairs with the session's latest counted call when its call id equals
  that call's, or when it has no call id; any other result is ignored (the
  caller counts it) and changes nothing. A paired result ends its call (the
  slot forgets its id, ``call_ended``), so a second result with that id is
  ignored;
* the result of a call the brake denied is kept nowhere: the call did not run,
  so what came back is the denial itself (the proxy's answer, the agent's
  tool_result carrying the deny reason), never progress;
* the ``PolicySlot`` keeps the digest of the latest call's result and of the
  latest result seen for an earlier call of the streak (with how many earlier
  calls had one: all identical, or the streak would have restarted);
* when the latest call's result differs from that earlier digest, the streak
  restarts: the latest call counts as 1, so the next identical call is 2. The
  latest call's own decision stands (a duplicate of it, seen before its
  result, got it); the restart shows at the next call. Equal, or no result at all: the counting
  is exactly ``step``'s;
* a denial by the streak rule under progress says how many results of the
  streak were identical (``Decision.results``).

The same-error rule reads results through ``result_step`` too (an ``error``
flag beside the digest): a call it let run waits for its result
(``PolicySlot.awaiting``); an error extends the run when its digest equals
the run's, else starts one at 1; any other result ends it. The same-result
rule likewise (``PolicySlot.same_awaiting``): any result extends its run when
its digest equals the run's, else starts one at 1 (``same_result_after``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ._namedtuple import NamedTuple


if TYPE_CHECKING:
    from .policy.model import Policy

__all__ = [
    "Decision",
    "PolicySlot",
    "Slot",
    "ToolPlan",
    "call_ended",
    "ends_on_user_turn",
    "identical_calls",
    "is_denied",
    "policy_step",
    "result_step",
    "same_result_after",
    "same_result_run",
    "step",
]


class Slot(NamedTuple):
    """A session's streak after a call; immutable, so a store can keep or drop it."""

    digest: bytes
    count: int  # type: ignore[assignment]  # the field hides tuple.count, never called
    call_id: Any
    tool: str


def step(prev: Slot | None, tool: str, digest: bytes, call_id: Any = None) -> tuple[Slot, bool]:
    """The session's slot after one call, and whether the call was a duplicate.

    Pure: the caller stores the returned slot (a duplicate returns ``prev`` itself).
    """
    if prev is not None:
        # unpacked, not read by name: 3.11 does not specialise a named tuple's attributes
        prev_digest, prev_count, prev_call_id, _ = prev
        if call_id is not None and call_id == prev_call_id:
            return prev, True
        if prev_digest == digest:
            return _new_slot(Slot, (digest, prev_count + 1, call_id, tool)), False
    return _new_slot(Slot, (digest, 1, call_id, tool)), False


_new_slot = tuple.__new__  # Slot's fields in order, without its Python-level __new__


def call_ended(prev: Any, call_id: Any) -> Any:
    """The session's state (a ``Slot`` or a ``PolicySlot``, or None) once the call
    ``call_id`` ended (its result or answer was seen): the slot's id forgotten when it
    is that call's, so the id may count again. Pure: anything else returns ``prev``
    itself (no id, no session, another call's id: a later call already replaced it)."""
    if prev is None or call_id is None:
        return prev
    if isinstance(prev, PolicySlot):
        slot = prev.slot
        if slot.call_id is None or call_id != slot.call_id:
            return prev
        return prev._replace(slot=slot._replace(call_id=None))
    if prev.call_id is None or call_id != prev.call_id:
        return prev
    return prev._replace(call_id=None)


def is_denied(count: int, max_repeats: int) -> bool:
    """The call that brings a streak to ``max_repeats`` is denied, and every later one."""
    return count >= max_repeats


def ends_on_user_turn(policy: Policy | None) -> bool:
    """Whether a user turn ends its session's state (module docstring) under ``policy``:
    the one test every front-end asks before it resets a session on a user turn."""
    return policy is not None and policy.reset_on_user_turn


class Decision(NamedTuple):
    """What ``policy_step`` decided for the call counted into a ``PolicySlot``.

    ``max_repeats`` is the streak limit that applied to the call (its tool rule's,
    else the global one); ``limit`` the limit of the rule named by ``rule``
    (None for an exempt call); ``period``/``repeats`` describe a cycle denial;
    ``denials`` the consecutive denials in the session, this call included;
    ``progress`` whether the call's results may restart its streak, and ``results``
    how many earlier calls of the streak had a result (all identical); ``warn_at``
    the threshold of a warned call (it passes, but the model is told), else None;
    ``policy_hash`` that the call was hashed without its rule's ``args_ignore`` paths."""

    denied: bool
    rule: str
    limit: int | None
    max_repeats: int
    exempt: bool = False
    match: str | None = None
    period: int = 0
    repeats: int = 0
    denials: int = 0
    progress: bool = False
    results: int = 0
    window: int = 0  # a window denial: the window's size (``repeats``: times seen in it)
    warn_at: int | None = None
    policy_hash: bool = False


class PolicySlot(NamedTuple):
    """A session's state under a policy: the streak slot, the cycle window (empty
    unless cycles are on), the consecutive denials and the last call's decision.

    Progress mode only (else None, 0, None): ``earlier_result`` the digest of the
    latest result seen for an earlier call of the streak, ``earlier_results`` how
    many earlier calls had one, ``latest_result`` the latest call's result.

    ``[window]`` only: ``seen``, the digests of the last ``calls`` counted calls.
    ``[same_error]`` only: ``errors`` identical errors in a row (``error_digest``)
    from calls of the latest call's tool, and ``awaiting``: the latest call ran
    under the rule and its result has not been seen yet.

    ``identical``: the identical calls in a row when results restarted the streak's
    count (``identical_calls``), else 0 (the same as ``slot.count``).
    ``[same_result]`` only: ``sames`` results in a row with the digest
    ``same_digest``, and ``same_awaiting``, as ``awaiting``."""

    slot: Slot
    decision: Decision
    recent: tuple[bytes, ...] = ()
    recent_tools: tuple[str, ...] = ()
    runs: tuple[int, ...] = ()
    earlier_result: bytes | None = None
    earlier_results: int = 0
    latest_result: bytes | None = None
    seen: tuple[bytes, ...] = ()
    error_digest: bytes | None = None
    errors: int = 0
    awaiting: bool = False
    identical: int = 0
    same_digest: bytes | None = None
    sames: int = 0
    same_awaiting: bool = False

    @property
    def restarts(self) -> bool:
        """The latest call's result differs from the streak's earlier one: the next
        call counts as if the latest call had been the first of its streak."""
        return (
            self.latest_result is not None
            and self.earlier_result is not None
            and self.latest_result != self.earlier_result
        )


def identical_calls(prev: PolicySlot | None, digest: bytes) -> int:
    """The identical calls in a row that a counted call with ``digest`` makes, itself
    included: ``step``'s count without the progress mode's restarts (a changed result
    restarts ``slot.count``, never this). What ``progress_max`` is compared with."""
    if prev is None or prev.slot.digest != digest:
        return 1
    return (prev.identical or prev.slot.count) + 1


def same_result_run(
    prev: PolicySlot | None, tool: str, exempt: bool, any_tool: bool
) -> tuple[bytes | None, int]:
    """The run of identical results (its digest and length) a counted call of ``tool``
    finds: the previous state's, when its latest call's result was seen and (for one
    tool) that call was of ``tool``; else none. A call exempt from the rule carries the
    run only with ``any_tool`` (it is invisible there; for one tool it is another
    tool's call)."""
    if prev is None or prev.same_awaiting or not prev.sames:
        return None, 0
    if exempt:
        return (prev.same_digest, prev.sames) if any_tool else (None, 0)
    if any_tool or prev.slot.tool == tool:
        return prev.same_digest, prev.sames
    return None, 0


def same_result_after(state: PolicySlot, digest: bytes) -> tuple[bytes, int]:
    """The run of identical results once the awaited call's result (``digest``) is
    seen: one longer when it has the run's digest, else a new run of 1."""
    if state.sames and state.same_digest == digest:
        return digest, state.sames + 1
    return digest, 1


class ToolPlan(NamedTuple):
    """What the first ``[[tools]]`` rule matching a tool gives its calls (``tool_rule``):
    its limit (None: the global one), ``exempt``, the glob that matched, whether its
    calls are counted on a policy hash (``args_ignore``), the progress mode,
    ``warn_at`` and ``progress_max`` (the global ones unless the rule gives its own),
    and whether ``[same_result]`` leaves it out."""

    limit: int | None
    exempt: bool
    match: str | None
    policy_hash: bool
    progress: bool
    warn_at: int | None
    progress_max: int | None
    same_exempt: bool


def tool_rule(policy: Policy, tool: str) -> ToolPlan:
    """The call's limit: its first matching ``[[tools]]`` rule's, else the global one; an
    exempt call is never denied. The rule may also set ``progress``, ``warn_at``,
    ``progress_max``, ``same_result`` and ``args_ignore`` (the call was counted on a
    policy hash). Kept per tool name in the policy (``Policy.plans``, bounded), as
    ``Policy.rule_for`` keeps the rule."""
    plans = policy.plans
    plan = plans.get(tool)
    if plan is not None:
        return plan
    found = policy.rule_for(tool)
    if found is None:
        plan = _new_slot(
            ToolPlan,
            (None, False, None, False, policy.progress, policy.warn_at, policy.progress_max, False),
        )
    else:
        rule, match = found
        plan = _new_slot(
            ToolPlan,
            (
                rule.max_repeats,
                rule.exempt,
                match,
                bool(rule.ignore_paths),
                policy.progress if rule.progress is None else rule.progress,
                policy.warn_at if rule.warn_at is None else rule.warn_at,
                policy.progress_max if rule.progress_max is None else rule.progress_max,
                rule.exempt or rule.same_result is False,
            ),
        )
    if len(plans) >= 4096:
        plans.clear()
    plans[tool] = plan
    return plan


def progress_rule(prev: PolicySlot | None, restarted: bool, count: int) -> tuple[bytes | None, int]:
    """Progress mode: the streak goes on, so its results go on with it (the latest call's
    result becomes an earlier one; after a restart, the only earlier one). The earlier
    result and how many earlier calls had one."""
    if count <= 1 or prev is None:
        return None, 0
    if restarted:
        return prev.latest_result, 1
    if prev.latest_result is not None:
        return prev.latest_result, prev.earlier_results + 1
    return prev.earlier_result, prev.earlier_results


def cycle_rule(
    prev: PolicySlot | None, digest: bytes, tool: str, cycles: Any, is_exempt: Any, open_: bool
) -> tuple[tuple[bytes, ...], tuple[str, ...], tuple[int, ...], tuple[int, int] | None]:
    """``cycle``: the window of recent calls goes on; the call that completes the
    ``max_repeats``-th consecutive repetition of a 2..max_period-call cycle is denied
    (``open_``: no earlier rule denied or exempted it). The next window, and the
    (period, repetitions) of the cycle that denies it, else None."""
    window = _cycles or _cycle_window()
    if prev is None:
        recent, recent_tools, runs = window.advance((), (), (), digest, tool, cycles.max_period)
    else:
        recent, recent_tools, runs = window.advance(
            prev.recent, prev.recent_tools, prev.runs, digest, tool, cycles.max_period
        )
    found = None
    if open_:
        found = window.find_cycle(recent, recent_tools, runs, cycles.max_repeats, is_exempt)
    return recent, recent_tools, runs, found


_cycles: Any = None  # policy.cycles, imported on the first call under [cycles]


def _cycle_window() -> Any:
    """``policy/cycles.py``, imported once (not at start-up: most runs have no cycles)."""
    global _cycles
    from .policy import cycles

    _cycles = cycles
    return cycles


def same_error_rule(
    prev: PolicySlot | None, tool: str, after: int, open_: bool
) -> tuple[bytes | None, int, bool]:
    """``same_error``: the run of identical errors goes on while the session's calls are
    this tool's and their results were seen; denied at ``after`` in a row (``open_``: no
    earlier rule denied or exempted it). The run's error digest, its length, and
    whether it denies."""
    if prev is not None and not prev.awaiting and prev.slot.tool == tool:
        error_digest, errors = prev.error_digest, prev.errors  # the run goes on
    else:
        error_digest, errors = None, 0
    return error_digest, errors, open_ and errors >= after


def same_result_rule(
    prev: PolicySlot | None, tool: str, same_exempt: bool, same_result: Any, open_: bool
) -> tuple[bytes | None, int, int | None]:
    """``same_result``: the run of identical results goes on while the session's calls
    ran and their results were seen (one tool's, or any tool's); denied at ``after`` in
    a row (``open_``: no earlier rule denied or exempted it). The run's digest and
    length (with ``any_tool`` a denial ends the run: nothing the agent calls would),
    and the identical results in a row that deny the call, else None."""
    any_tool = same_result.any_tool
    same_digest, sames = same_result_run(prev, tool, same_exempt, any_tool)
    if open_ and not same_exempt and sames >= same_result.after:
        if any_tool:
            return None, 0, sames
        return same_digest, sames, sames
    return same_digest, sames, None


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
    progress restart); then each rule, in the order of the module's docstring, decides
    or keeps its part of the state: the call is denied by the first rule that denies
    it (a later rule may only make a denial a stop, or warn a call that passes).

    One function on purpose: it runs for every call of every front-end under a
    policy; each rule costs a few comparisons where the rule is on and one where it is
    off (``filter --policy``, ``bench/policy.py``). ``tests/policy_step_before.py`` is
    the same rules written one function each, and must give the same states."""
    base = None if prev is None else prev.slot
    restarted = prev is not None and prev.restarts
    if restarted:
        base = base._replace(count=1)  # type: ignore[union-attr]  # restarted: prev is set
    slot, duplicate = step(base, tool, digest, call_id)
    if duplicate:
        assert prev is not None
        return prev, True
    count = slot[1]  # by index: 3.11 does not specialise named-tuple fields
    # tool_rule: the limit, exemption and settings of the call's tool
    limit, exempt, match, policy_hash, progress, warn_at, progress_max, same_exempt = tool_rule(
        policy, tool
    )
    if limit is None:
        limit = max_repeats
    # progress_rule
    earlier: bytes | None = None
    earlier_results = 0
    if progress:
        earlier, earlier_results = progress_rule(prev, restarted, count)
    # streak_rule, ``streak``: denied when its count reaches the call's limit
    rule = "streak"
    if exempt:
        denied, rule_limit, call_limit = False, None, max_repeats
    else:
        denied, rule_limit, call_limit = is_denied(count, limit), limit, limit
    period = repeats = window_size = 0
    # progress_max_rule: the identical calls in a row go on, whatever the results
    identical = identical_calls(prev, digest)
    if progress and not denied and not exempt:
        ceiling = policy.progress_ceiling(progress_max, limit)
        if identical >= ceiling:
            denied, rule, rule_limit, repeats = True, "progress_max", ceiling, identical
    # cycle_rule
    cycles = policy.cycles
    if cycles is None:
        recent: tuple[bytes, ...] = ()
        recent_tools: tuple[str, ...] = ()
        runs: tuple[int, ...] = ()
    else:
        recent, recent_tools, runs, found = cycle_rule(
            prev, digest, tool, cycles, policy.is_exempt, not denied and not exempt
        )
        if found is not None:
            denied, rule, rule_limit = True, "cycle", cycles.max_repeats
            period, repeats = found
    # window_rule, ``window``: the last ``calls`` digests go on; denied when this
    # call's digest is among them ``max_repeats`` times
    window = policy.window
    if window is None:
        seen: tuple[bytes, ...] = ()
    else:
        seen = (() if prev is None else prev.seen[1 - window.calls :]) + (digest,)
        if not denied and not exempt:
            times = seen.count(digest)
            if times >= window.max_repeats:
                denied, rule, rule_limit = True, "window", window.max_repeats
                window_size, repeats = window.calls, times
    # same_error_rule; a call let run awaits its result (``result_step``)
    same_error = policy.same_error
    error_digest: bytes | None = None
    errors = 0
    awaiting = False
    if same_error is not None:
        error_digest, errors, denies = same_error_rule(
            prev, tool, same_error.after, not denied and not exempt
        )
        if denies:
            denied, rule, rule_limit, repeats = True, "same_error", same_error.after, errors
        awaiting = not denied
    # same_result_rule; a call let run awaits its result (``result_step``)
    same_result = policy.same_result
    same_digest: bytes | None = None
    sames = 0
    same_awaiting = False
    if same_result is not None:
        same_digest, sames, denying = same_result_rule(
            prev, tool, same_exempt, same_result, not denied and not exempt
        )
        if denying is not None:
            denied, rule, rule_limit, repeats = True, "same_result", same_result.after, denying
        same_awaiting = not denied and not same_exempt
    # stop_rule, ``stop``: a denied call counts the session's denials in a row; at
    # ``after_denials`` it is a stop (a passing call ends the run of denials)
    denials = 0
    if denied:
        denials = (prev.decision.denials if prev is not None else 0) + 1
        stop = policy.stop
        if stop is not None and denials >= stop.after_denials:
            rule, rule_limit = "stop", stop.after_denials
    # warn_rule, ``warn_at``: a call that passes, is not exempt and whose streak count
    # reached ``warn_at`` runs, warned
    if warn_at is not None and (denied or exempt or count < warn_at):
        warn_at = None
    decision = _new_slot(
        Decision,
        (
            denied,
            rule,
            rule_limit,
            call_limit,
            exempt,
            match,
            period,
            repeats,
            denials,
            progress,
            earlier_results if progress else 0,
            window_size,
            warn_at,
            policy_hash,
        ),
    )
    state = (
        slot,
        decision,
        recent,
        recent_tools,
        runs,
        earlier,
        earlier_results,
        None,
        seen,
        error_digest,
        errors,
        awaiting,
        0 if identical == count else identical,
        same_digest,
        sames,
        same_awaiting,
    )
    return _new_slot(PolicySlot, state), False


def result_step(
    prev: PolicySlot | None, call_id: Any, digest: bytes, error: bool = False
) -> tuple[PolicySlot | None, bool]:
    """The session's state after a result arrives, and whether it paired with the
    session's latest call (by call id, or without one). Pure: an unpaired result
    returns ``prev`` itself, and so does a paired result with nothing to keep (its
    call has no id to forget, and its tool is not in progress mode or it was
    denied); a paired result ends its call (``call_ended``). ``error``:
    the result says the call failed (``progress.result_error``); only the
    same-error rule reads it."""
    if prev is None or (call_id is not None and call_id != prev.slot.call_id):
        return prev, False
    state = call_ended(prev, prev.slot.call_id)  # the paired call has ended
    if prev.awaiting:  # the first result of a call the same-error rule let run
        if not error:
            state = state._replace(awaiting=False, error_digest=None, errors=0)
        elif prev.errors and prev.error_digest == digest:
            state = state._replace(awaiting=False, errors=prev.errors + 1)
        else:
            state = state._replace(awaiting=False, error_digest=digest, errors=1)
    if prev.same_awaiting:  # the first result of a call the same-result rule let run
        same_digest, sames = same_result_after(prev, digest)
        state = state._replace(same_awaiting=False, same_digest=same_digest, sames=sames)
    decision = prev.decision
    if not decision.progress or decision.denied or prev.latest_result == digest:
        return state, True
    return state._replace(latest_result=digest), True
