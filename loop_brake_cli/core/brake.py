"""The in-memory brake of dsh-loop-brake: sessions, errors, wrappers.

The rule itself (count, reset, duplicate, deny) is ``streak.step``; the state it
counts into is a session table (``table``: this process's memory, optionally
LRU-bounded, or a shared store given as ``store=``, from ``stores/``: SQLite,
Redis); this module words each decision as a ``Verdict``, holds the one rule for a
store that fails (``LoopBrake.uncounted``), and raises ``LoopBrakeError``. What
a verdict says is ``verdicts``; which maxRepeats applies is ``limits``. Both are
re-exported here, the library's public face.
"""

from __future__ import annotations

import functools
import os
from _thread import allocate_lock
from collections.abc import Callable, Mapping, Sequence
from time import monotonic

from .canonical import PREFIX_LENGTH, call_digest
from .limits import resolve_max_repeats
from .records import DEFAULT_SESSION, session_key, subagent_session_key
from .streak import ends_on_user_turn
from .table import SessionTable, StoreError, memory_table, open_table
from .verdicts import CODE, PLUGIN, Verdict, verdict_of, verdict_of_policy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

    from .streak import PolicySlot, Slot

__all__ = [
    "DEFAULT_SESSION",
    "DISCOVER",
    "LoopBrake",
    "LoopBrakeError",
    "LoopBrakeStop",
    "decorate_tool",
    "session_key",
    "subagent_session_key",
    "with_warning",
    "wrap_execute",
]


class _Discover:
    def __repr__(self) -> str:
        return "DISCOVER"


DISCOVER: Any = _Discover()
"""``LoopBrake(policy=DISCOVER)``: the policy file found as the CLI finds it
(``LOOP_BRAKE_POLICY``, ``.loop-brake.toml`` / ``pyproject.toml`` upward, the user's
config), or none. An explicit opt-in: a library never changes its verdicts because of
a file in its working directory that nobody passed, so the default is no policy."""


def _resolve_policy(policy: Any) -> Any:
    """A Policy (or None) from what ``LoopBrake(policy=...)`` was given."""
    if policy is None:
        return None
    if policy is DISCOVER:
        from .policy import discover_policy

        return discover_policy()
    if isinstance(policy, (str, os.PathLike)):
        from .policy import load_policy

        return load_policy(os.fspath(policy))
    return policy


class LoopBrakeError(Exception):
    """Raised, never returned: a brake that can be ignored is not a brake."""

    code = CODE
    plugin = PLUGIN

    def __init__(self, verdict: Verdict) -> None:
        self.tool_name = verdict.tool_name
        self.count = verdict.count
        self.max_repeats = verdict.max_repeats
        self.hash_prefix = verdict.hash_prefix
        self.session_id = verdict.session_id
        self.verdict = verdict
        super().__init__(verdict.message)


class LoopBrakeStop(LoopBrakeError):
    """A policy's ``[stop]``: the agent's run must end, not just this call. A
    ``LoopBrakeError``, so code that catches every denial catches it too."""


class LoopBrake:
    """The per-session streak counter: the rule (``streak``) applied through one session
    table (``table.SessionTable``), each call's verdict worded (``verdicts``).

    The table is this process's memory (``table.MemoryTable``), or a store shared
    with other processes and hosts (``store=``). ``max_sessions`` bounds memory for
    long-running consumers: the least recently used session is evicted and starts a
    new streak if it returns. Unbounded by default, as in the plugin. Each slot
    holds a 32-byte digest, not 64 hex chars.
    """

    def __init__(
        self,
        max_repeats: object = None,
        max_sessions: int | None = None,
        source: str | None = None,
        policy: Any = None,
        store: Any = None,
        fail_closed: bool = False,
        warn: Callable[[str], None] | None = None,
        session_idle: float | None = None,
    ) -> None:
        """``source`` names where an explicit ``max_repeats`` came from (for summaries).

        ``policy``: a ``policy.Policy``, a path to a policy file, None (the default: no
        policy), or ``DISCOVER`` (found as the CLI finds it). A bad file raises
        ``policy.PolicyError``. An empty policy is no policy.

        ``store``: count in a store shared with other processes and hosts instead of
        in memory: a session table (``stores.Store``) or a store URL (a path,
        ``sqlite:///path``, ``redis://``, ``rediss://``, ``unix://``, or any scheme
        registered with ``stores.register``). When the store fails, the call gets a
        verdict at once, not counted (``uncounted``): allowed, or denied with
        ``fail_closed``; ``warn`` (default: the ``loop_brake_cli`` logger) hears one
        line when the store fails and one when it answers again (how long it failed,
        how many calls it left uncounted), ``store_failures`` counts the calls
        decided without it and ``failure`` says why, until it answers.

        ``session_idle`` (seconds, with ``max_sessions``): ``expire`` forgets the
        sessions unused that long (a long-running server calls it now and then)."""
        self.max_repeats, self.max_repeats_source = resolve_max_repeats(max_repeats)
        if source is not None and max_repeats is not None:
            self.max_repeats_source = source
        if max_sessions is not None and max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if max_sessions is not None and store is not None:
            raise ValueError("max_sessions bounds memory; a store keeps its own sessions")
        self.max_sessions = max_sessions
        found = _resolve_policy(policy)
        self.policy_path: str | None = None if found is None else found.path
        self.policy = None if found is None or found.empty else found
        self.ignores_args = self.policy is not None and self.policy.ignores_args
        self.progress = self.policy is not None and self.policy.reads_results
        """Results are worth reading: they may restart streaks (the policy's progress
        mode) or make a run of identical errors (``[same_error]``)."""
        self.user_turns = ends_on_user_turn(self.policy)
        """A user turn ends its session's streaks (``reset_on_user_turn``): worth reading."""
        self._warn = warn or _log_warning
        if isinstance(store, (str, os.PathLike)):
            store = open_table(os.fspath(store), warn=self._warn)  # the store's notices too
        self.store: Any = store
        """The shared store counted through, or None: this process's memory."""
        if session_idle is not None and (store is not None or max_sessions is None):
            raise ValueError("session_idle needs max_sessions (and no store)")
        self.table: SessionTable = (
            memory_table(max_sessions, session_idle) if store is None else store
        )
        """Where every session's state lives: the one road from a call to its state."""
        self.fail_closed = fail_closed
        self.store_failures = 0
        """Calls decided without the store (it failed): allowed, or denied fail-closed."""
        self.failure: str | None = None
        """Why the store failed, while it fails (None once it answers)."""
        self._clock: Callable[[], float] = getattr(store, "clock", None) or monotonic
        """Times an outage (the store's own clock where it has one: a test moves it)."""
        self._outage: tuple[float, int] = (0.0, 0)
        """When the store started failing, and ``store_failures`` then."""
        self.counts: Any = None
        """Hears each verdict of the library's calls (``check`` and the attach seams:
        ``observe_threadsafe``) when metrics are exported (``telemetry.export_metrics``
        sets a ``telemetry.counts.CallCounts``); None: nothing counted."""
        self._lock = allocate_lock()
        """Held by the library's calls (``check``, ``observe_threadsafe``,
        ``observe_result``, ``end_call``, ``user_turn``, ``reset``): threads sharing a
        brake must not both read a slot and write count + 1. ``observe``, the CLI's
        one-thread hot path, does not take it."""

    def __len__(self) -> int:
        """Sessions held in this process's memory (0 with a store: it keeps its own)."""
        # a SessionTable need not have a length; without a store it is a memory table
        return 0 if self.store is not None else len(self.table)  # type: ignore[arg-type]

    @property
    def evictions(self) -> int:
        """Sessions evicted by ``max_sessions`` (least recently used first)."""
        return getattr(self.table, "evictions", 0)

    @property
    def expired(self) -> int:
        """Sessions forgotten after ``session_idle`` seconds unused."""
        return getattr(self.table, "expired", 0)

    def expire(self) -> int:
        """Forget the sessions unused for ``session_idle`` seconds; how many."""
        expire = getattr(self.table, "expire", None)
        return 0 if expire is None else expire()

    def check(
        self,
        tool_name: str,
        args: Any = None,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        call_id: Any = None,
    ) -> Verdict:
        """Count one call and return the verdict without raising."""
        digest = self.digest(tool_name, {} if args is None else args)
        session = session_key(session_id, agent_id)
        return self.observe_threadsafe(session, tool_name, digest, call_id)

    def observe_threadsafe(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> Verdict:
        """``observe`` holding the brake's lock: for callers that may share the brake
        between threads (``check``, the attach seams)."""
        with self._lock:
            verdict = self.observe(session, tool_name, digest, call_id)
        if self.counts is not None:
            self.counts.judged(verdict)
        return verdict

    def digest(self, tool_name: str, args: Any) -> bytes:
        """The digest a call is counted on: ``canonical.call_digest``, the contract's hash,
        unless the policy's rule for the tool has ``args_ignore`` (then a policy hash of
        the arguments without those paths: ``Policy.args_digest``)."""
        if self.ignores_args:
            # ignores_args is true only with a policy
            return self.policy.args_digest(tool_name, args)  # type: ignore[union-attr]
        return call_digest(tool_name, args)

    def enforce(
        self,
        tool_name: str,
        args: Any = None,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        call_id: Any = None,
    ) -> Verdict:
        """Count one call; raise LoopBrakeError if it must not run (``LoopBrakeStop``
        at a policy's stop)."""
        verdict = self.check(
            tool_name, args, session_id=session_id, agent_id=agent_id, call_id=call_id
        )
        if verdict.denied:
            raise LoopBrakeStop(verdict) if verdict.stop else LoopBrakeError(verdict)
        return verdict

    def observe(self, session: str, tool_name: str, digest: bytes, call_id: Any = None) -> Verdict:
        """Count a call whose digest is already known (the hot path of ``replay`` and of
        ``filter``'s exact path): one decision in the table, worded as a verdict; or, when
        the store fails, the call decided uncounted (``uncounted``)."""
        try:
            state, duplicate = self.table.count_call(
                session, tool_name, digest, call_id, self.max_repeats, self.policy
            )
        except StoreError as exc:
            return self.uncounted(exc, session, tool_name, digest, call_id)
        if self.failure is not None:
            self._store_answered()
        # the table gives a Slot without a policy, a PolicySlot with one (``count_call``)
        if self.policy is None:  # slot_verdict, inline: once per call of a replay
            return verdict_of(state, session, call_id, duplicate, self.max_repeats)  # type: ignore[arg-type]
        return verdict_of_policy(state, session, call_id, duplicate)  # type: ignore[arg-type]

    def observe_many(self, calls: Sequence[tuple[str, str, bytes, Any]]) -> list[Verdict]:
        """``observe`` for several calls already read, each ``(session, tool_name, digest,
        call_id)``: their verdicts are those of observing them one after the other, in
        their order. A table that counts several calls at once (``count_calls``: the
        Redis store, in one round trip) is asked once; each call it left undecided is
        decided uncounted (``uncounted``), as ``observe`` decides it."""
        count_calls = getattr(self.table, "count_calls", None)
        if count_calls is None:
            return [self.observe(*call) for call in calls]
        verdicts = []
        answers = count_calls(calls, self.max_repeats, self.policy)
        for (session, tool_name, digest, call_id), answer in zip(calls, answers, strict=True):
            if isinstance(answer, StoreError):
                verdicts.append(self.uncounted(answer, session, tool_name, digest, call_id))
                continue
            if self.failure is not None:
                self._store_answered()
            state, duplicate = answer
            verdicts.append(self.slot_verdict(state, session, call_id, duplicate))
        return verdicts

    def count_call(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[Slot | PolicySlot, bool]:
        """Count one call in the table without building a Verdict: the session's state
        after it and whether it was a duplicate (``table.SessionTable.count_call``).
        Store failures are raised (``StoreError``): ``observe`` is the fail-open road.
        (``filter``'s fast path asks ``self.table`` itself: one Python call fewer.)"""
        return self.table.count_call(
            session, tool_name, digest, call_id, self.max_repeats, self.policy
        )

    def slot_verdict(
        self, state: Slot | PolicySlot, session: str, call_id: Any, duplicate: bool
    ) -> Verdict:
        """The verdict a state stands for right after counting a call into it."""
        # a Slot without a policy, a PolicySlot with one (``count_call``)
        if self.policy is None:
            return verdict_of(state, session, call_id, duplicate, self.max_repeats)  # type: ignore[arg-type]
        return verdict_of_policy(state, session, call_id, duplicate)  # type: ignore[arg-type]

    def uncounted(
        self, exc: Exception, session: str, tool_name: str, digest: bytes, call_id: Any
    ) -> Verdict:
        """The one failure rule: a call the store could not count is decided at once,
        not counted (rule ``store``, count 0): allowed (the brake fails open), or denied
        with ``fail_closed``; said once (``_store_failed``)."""
        self._store_failed(exc)
        return Verdict(
            self.fail_closed,
            tool_name,
            session,
            0,
            self.max_repeats,
            digest[: PREFIX_LENGTH // 2].hex(),
            call_id,
            False,
            "store",
        )

    def _store_failed(self, exc: Exception) -> None:
        """Count a decision made without the store; say so once, when it starts failing."""
        if self.failure is None:
            self._outage = (self._clock(), self.store_failures)
            self._warn(f"{exc}; calls are {self._how()} and not counted until it answers")
        self.store_failures += 1
        self.failure = str(exc)

    def store_failed(self, exc: Exception) -> None:
        """A store failure met outside ``observe`` (a front-end that asks the table in a
        worker thread, ``mcp_gateway.store_calls``): counted and said as ``observe``'s."""
        self._store_failed(exc)

    def store_answered(self) -> None:
        """The store answered a front-end that asked it outside ``observe``: a failure
        said before is over (one line), as when ``observe`` hears it answer."""
        if self.failure is not None:
            self._store_answered()

    def _how(self) -> str:
        return "denied (fail-closed)" if self.fail_closed else "allowed (fail-open)"

    def _store_answered(self) -> None:
        """Say once that the outage ended: how long it lasted (from the first call it
        failed to the first it answered) and how many calls it left uncounted."""
        self.failure = None
        began, before = self._outage
        calls = self.store_failures - before
        self._warn(
            f"store {self.table.label} answers again after {self._clock() - began:.1f} s: "
            f"{calls} call{'' if calls == 1 else 's'} {'was' if calls == 1 else 'were'} "
            f"{self._how()} and not counted meanwhile"
        )

    def _ask(self, work: Callable[[], Any], failed: Any) -> Any:
        """``work()`` on the table under the brake's lock; a store failure is said once
        (``_store_failed``) and answered by ``failed``, never raised."""
        try:
            with self._lock:
                answer = work()
        except StoreError as exc:
            self._store_failed(exc)
            return failed
        if self.failure is not None:
            self._store_answered()
        return answer

    def observe_result(
        self,
        session: str,
        call_id: Any = None,
        result: Any = None,
        digest: bytes | None = None,
        error: bool | None = None,
    ) -> bool:
        """Pair a call's result with the session's latest call (``streak.result_step``):
        by call id, or without one; returns whether it paired (False: ignored, or the
        store failed). A paired result ends its call: its id may count again
        (``end_call``).

        ``result`` is the parsed JSON value, hashed with the policy's ignore patterns
        (``progress.result_digest``) and then forgotten; ``digest`` a 32-byte digest the
        host computed instead. ``error``: whether the call failed (None: as
        ``progress.result_error`` reads ``result``). Without the progress mode or the
        same-error rule nothing is read or kept: False (a front-end that sees the
        result ends the call with ``end_call``)."""
        policy, table = self.policy, self.table
        if not self.progress or policy is None:  # (progress is only set with a policy)
            return False
        if error is None:
            from .progress import result_error

            error = result_error(result)
        if digest is None:
            from .progress import result_digest

            digest = result_digest(result, policy.result_ignore)
        return self._ask(
            lambda: table.observe_result(session, call_id, digest, policy, error), False
        )

    def end_call(self, session: str, call_id: Any) -> bool:
        """The call ``call_id`` of ``session`` ended (its result or answer was seen): a
        later call with the same id is a new call and is counted (``streak.call_ended``).
        Returns whether the session's latest call was that call (False: nothing to
        forget, no id, a later call replaced it, or the store failed: then the id stays
        a duplicate until another call replaces it, as the plugin counts)."""
        if call_id is None:
            return False
        return self._ask(lambda: self.table.end_call(session, call_id), False)

    def user_turn(self, session: str) -> bool:
        """The user spoke in ``session``: under a policy with ``reset_on_user_turn`` the
        session's state ends (``streak``'s docstring), in the store too, so every process
        sharing it starts the session over; returns whether it did. Without that key
        nothing changes. A store failure is a store failure (``warn``), never raised."""
        if not self.user_turns:
            return False
        return self._ask(lambda: self.table.reset(session) >= 0, False)

    def reset(self, session: str | None = None) -> int:
        """Forget one session's streak, or all of them (in the store, for every process
        that shares it); how many were removed. A store failure is raised (``StoreError``)."""
        with self._lock:
            return self.table.reset(session)


def _log_warning(message: str) -> None:
    import logging

    logging.getLogger("loop_brake_cli").warning("%s", message)


def wrap_execute(
    fn: Callable[..., Any],
    brake: LoopBrake,
    *,
    tool: str,
    session_id: str | None = None,
) -> Callable[..., Any]:
    """Brake one execute function: ``fn(args, ...)``. A denied call's body never runs.

    The first positional argument is the tool's arguments; keyword ``call_id``
    (if the host passes one) de-duplicates a call seen at two seams. A call the
    policy's ``warn_at`` warns runs, and a str result comes back with the warning
    after it (``with_warning``): the text the host hands the model. Any other
    result is returned as it is.
    """
    import inspect  # only the wrappers need it; the hook's start-up should not pay for it

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def braked_async(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
            verdict = brake.enforce(
                tool, args, session_id=session_id, call_id=kwargs.get("call_id")
            )
            return with_warning(await fn(args, *rest, **kwargs), verdict)

        return braked_async

    @functools.wraps(fn)
    def braked(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        verdict = brake.enforce(tool, args, session_id=session_id, call_id=kwargs.get("call_id"))
        return with_warning(fn(args, *rest, **kwargs), verdict)

    return braked


def with_warning(result: Any, verdict: Verdict) -> Any:
    """A warned call's str result with two line ends and the warning after it (the
    warning alone for an empty one); any other result, or a call not warned, as it is.
    A duplicate (its call id counted at another seam) is left as it is: the seam that
    counted it tells, so a call passing two seams is warned once."""
    warning = verdict.warning
    if warning is None or verdict.duplicate or not isinstance(result, str):
        return result
    return f"{result}\n\n{warning}" if result else warning


def decorate_tool(definition: Any, brake: LoopBrake, session_id: str | None = None) -> Any:
    """A braked copy of a tool definition (a mapping or an object with ``name`` and
    ``execute``); the original is left untouched."""
    if isinstance(definition, Mapping):
        copy = dict(definition)
        copy["execute"] = wrap_execute(
            definition["execute"], brake, tool=definition["name"], session_id=session_id
        )
        return copy
    import copy as copy_module

    clone = copy_module.copy(definition)
    clone.execute = wrap_execute(
        definition.execute, brake, tool=definition.name, session_id=session_id
    )
    return clone
