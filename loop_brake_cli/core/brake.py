"""The in-memory brake of dsh-loop-brake: sessions, errors, wrappers.

The rule itself (count, reset, duplicate, deny) is ``streak.step``; this module
keeps one slot per session in memory (optionally LRU-bounded), or counts in a
shared store (``stores/``: SQLite, Redis) given as ``store=``, and raises
``LoopBrakeError``. What a verdict says is ``verdicts``; which maxRepeats
applies is ``limits``. Both are re-exported here, the library's public face.
"""

from __future__ import annotations

import functools
import os
from _thread import allocate_lock
from collections import OrderedDict
from collections.abc import Callable, Mapping

from .canonical import PREFIX_LENGTH, call_digest
from .limits import resolve_max_repeats
from .records import DEFAULT_SESSION, session_key, subagent_session_key
from .streak import (
    PolicySlot,
    Slot,
    call_ended,
    ends_on_user_turn,
    policy_step,
    result_step,
    step,
)
from .verdicts import CODE, PLUGIN, Verdict, verdict_of, verdict_of_policy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

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
    """The per-session streak counter.

    ``max_sessions`` bounds memory for long-running consumers: the least recently
    used session is evicted and starts a new streak if it returns. Unbounded by
    default, as in the plugin. Each slot holds a 32-byte digest, not 64 hex chars.
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
    ) -> None:
        """``source`` names where an explicit ``max_repeats`` came from (for summaries).

        ``policy``: a ``policy.Policy``, a path to a policy file, None (the default: no
        policy), or ``DISCOVER`` (found as the CLI finds it). A bad file raises
        ``policy.PolicyError``. An empty policy is no policy.

        ``store``: count in a store shared with other processes and hosts instead of
        in memory: a ``stores.Store`` or a store URL (a path, ``sqlite:///path``,
        ``redis://``, ``rediss://``, ``unix://``; see ``stores.open_store``). When the
        store fails, the call gets a verdict at once, not counted (rule ``store``,
        count 0): allowed, or denied with ``fail_closed``; ``warn`` (default: the
        ``loop_brake_cli`` logger) hears one line when the store fails and one when it
        answers again, and ``store_failures`` counts the calls decided without it."""
        self.max_repeats, self.max_repeats_source = resolve_max_repeats(max_repeats)
        if source is not None and max_repeats is not None:
            self.max_repeats_source = source
        if max_sessions is not None and max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if max_sessions is not None and store is not None:
            raise ValueError("max_sessions bounds memory; a store keeps its own sessions")
        self.max_sessions = max_sessions
        self.evictions = 0
        self._slots: OrderedDict[str, Any] | dict[str, Any] = OrderedDict() if max_sessions else {}
        found = _resolve_policy(policy)
        self.policy_path: str | None = None if found is None else found.path
        self.policy = None if found is None or found.empty else found
        if max_sessions:
            self.count_call = self._count_bounded  # type: ignore[method-assign]
        if self.policy is not None:  # chosen once: the seed's path keeps its speed
            self.count_call = self._count_policy  # type: ignore[method-assign]
            self.slot_verdict = verdict_of_policy  # type: ignore[method-assign,assignment]
        if max_sessions or self.policy is not None:
            self.observe = self._observe_composed  # type: ignore[method-assign]
        self.ignores_args = self.policy is not None and self.policy.ignores_args
        self.progress = self.policy is not None and self.policy.reads_results
        """Results are worth reading: they may restart streaks (the policy's progress
        mode) or make a run of identical errors (``[same_error]``)."""
        self.user_turns = ends_on_user_turn(self.policy)
        """A user turn ends its session's streaks (``reset_on_user_turn``): worth reading."""
        self.store: Any = None
        self.fail_closed = fail_closed
        self.store_failures = 0
        """Calls decided without the store (it failed): allowed, or denied fail-closed."""
        self._store_down = False
        self._warn = warn or _log_warning
        self._lock = allocate_lock()
        """Held by the library's calls (``check``, ``observe_threadsafe``,
        ``observe_result``, ``user_turn``, ``reset``): threads sharing a brake must not
        both read a slot and write count + 1. ``observe``, the CLI's one-thread hot
        path, does not take it."""
        if store is not None:
            if isinstance(store, (str, os.PathLike)):
                from ..stores import open_store

                store = open_store(os.fspath(store))
            self.store = store
            self.observe = self._observe_store  # type: ignore[method-assign]

    def __len__(self) -> int:
        return len(self._slots)

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
            return self.observe(session, tool_name, digest, call_id)

    def digest(self, tool_name: str, args: Any) -> bytes:
        """The digest a call is counted on: ``canonical.call_digest``, the contract's hash,
        unless the policy's rule for the tool has ``args_ignore`` (then a policy hash of
        the arguments without those paths: ``Policy.args_digest``)."""
        if self.ignores_args:
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
        """Count a call whose digest is already known (the hot path of the CLI).

        The unbounded seed's: ``count_call`` and ``slot_verdict`` written out, since
        replay calls this once per call (two Python calls fewer); a bound or a policy
        picks ``_observe_composed`` at construction."""
        slots = self._slots
        slot, duplicate = step(slots.get(session), tool_name, digest, call_id)
        if not duplicate:  # a duplicate keeps the old slot
            slots[session] = slot
        return verdict_of(slot, session, call_id, duplicate, self.max_repeats)

    def _observe_composed(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> Verdict:
        """``observe`` with the ``count_call`` and ``slot_verdict`` chosen at construction."""
        slot, duplicate = self.count_call(session, tool_name, digest, call_id)
        return self.slot_verdict(slot, session, call_id, duplicate)

    def _observe_store(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> Verdict:
        """``observe`` through the store: one atomic decision there, or a store failure's
        verdict (``_store_failed``)."""
        from ..stores import StoreError

        try:
            verdict = self.store.count_call(
                session, tool_name, digest, call_id, self.max_repeats, policy=self.policy
            )
        except StoreError as exc:
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
        self._store_answered()
        return verdict

    def _store_failed(self, exc: Exception) -> None:
        """Count a decision made without the store; say so once, when it starts failing."""
        self.store_failures += 1
        if not self._store_down:
            self._store_down = True
            how = "denied (fail-closed)" if self.fail_closed else "allowed (fail-open)"
            self._warn(f"{exc}; calls are {how} and not counted until it answers")

    def _store_answered(self) -> None:
        if self._store_down:
            self._store_down = False
            self._warn(
                f"store {self.store.label} answers again "
                f"({self.store_failures} calls so far were decided without it)"
            )

    def slot_verdict(self, slot: Slot, session: str, call_id: Any, duplicate: bool) -> Verdict:
        """The verdict a slot stands for right after counting a call into it."""
        return verdict_of(slot, session, call_id, duplicate, self.max_repeats)

    def count_call(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[Slot, bool]:
        """Count one call with ``streak.step`` and keep the session's new slot.

        The counting behind observe(), without building a Verdict (fastpath.py). This is
        the unbounded seed's (the hot path with a million sessions: it keeps inline what
        ``_keep`` does); a bound or a policy picks another at construction."""
        slots = self._slots
        prev = slots.get(session)
        slot, duplicate = step(prev, tool_name, digest, call_id)
        if not duplicate:  # a duplicate keeps the old slot
            slots[session] = slot
        return slot, duplicate

    def _count_bounded(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[Slot, bool]:
        """``count_call`` with ``max_sessions``: the slots are an LRU (``_keep``)."""
        prev = self._slots.get(session)
        slot, duplicate = step(prev, tool_name, digest, call_id)
        self._keep(session, prev, slot, duplicate)
        return slot, duplicate

    def _count_policy(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[PolicySlot, bool]:
        """``count_call`` under a policy: ``streak.policy_step`` instead of ``step``."""
        prev = self._slots.get(session)
        state, duplicate = policy_step(
            prev, tool_name, digest, call_id, self.max_repeats, self.policy
        )
        self._keep(session, prev, state, duplicate)
        return state, duplicate

    def observe_result(
        self,
        session: str,
        call_id: Any = None,
        result: Any = None,
        digest: bytes | None = None,
        error: bool | None = None,
    ) -> bool:
        """Pair a call's result with the session's latest call (``streak.result_step``):
        by call id, or without one; returns whether it paired (False: ignored). A paired
        result ends its call: its id may count again (``end_call``).

        ``result`` is the parsed JSON value, hashed with the policy's ignore patterns
        (``progress.result_digest``) and then forgotten; ``digest`` a 32-byte digest the
        host computed instead. ``error``: whether the call failed (None: as
        ``progress.result_error`` reads ``result``). Without the progress mode or the
        same-error rule nothing is read or kept: False (a front-end that sees the
        result ends the call with ``end_call``)."""
        if not self.progress:
            return False
        with self._lock:
            return self._observe_result(session, call_id, result, digest, error)

    def _observe_result(
        self, session: str, call_id: Any, result: Any, digest: bytes | None, error: bool | None
    ) -> bool:
        if error is None:
            from .progress import result_error

            error = result_error(result)
        if self.store is not None:
            return self._observe_result_store(session, call_id, result, digest, error)
        prev = self._slots.get(session)
        if prev is None:
            return False
        if digest is None:
            from .progress import result_digest

            digest = result_digest(result, self.policy.result_ignore)  # type: ignore[union-attr]
        state, paired = result_step(prev, call_id, digest, error)
        if state is not prev:
            self._slots[session] = state
        return paired

    def _observe_result_store(
        self, session: str, call_id: Any, result: Any, digest: bytes | None, error: bool
    ) -> bool:
        from ..stores import StoreError

        if digest is None:
            from .progress import result_digest

            digest = result_digest(result, self.policy.result_ignore)  # type: ignore[union-attr]
        try:
            paired = self.store.observe_result(session, call_id, digest, self.policy, error=error)
        except StoreError as exc:
            self._store_failed(exc)
            return False
        self._store_answered()
        return paired

    def end_call(self, session: str, call_id: Any) -> bool:
        """The call ``call_id`` of ``session`` ended (its result or answer was seen): a
        later call with the same id is a new call and is counted (``streak.call_ended``).
        Returns whether the session's latest call was that call (False: nothing to
        forget, no id, or a later call replaced it). Through the store when there is
        one; a store failure is a store failure (``warn``), never raised: the id then
        stays a duplicate until another call replaces it, as the plugin counts."""
        if call_id is None:
            return False
        if self.store is not None:
            from ..stores import StoreError

            try:
                ended = self.store.end_call(session, call_id)
            except StoreError as exc:
                self._store_failed(exc)
                return False
            self._store_answered()
            return ended
        with self._lock:
            prev = self._slots.get(session)
            state = call_ended(prev, call_id)
            if state is prev:
                return False
            self._slots[session] = state  # an end is not a use: the LRU order stays
            return True

    def _keep(
        self, session: str, prev: Slot | PolicySlot | None, slot: Slot | PolicySlot, duplicate: bool
    ) -> None:
        """Store a session's new slot (a duplicate keeps the old one), LRU-bounded."""
        slots = self._slots
        if prev is None:
            slots[session] = slot
            if self.max_sessions and len(slots) > self.max_sessions:
                slots.popitem(last=False)  # type: ignore[call-arg]
                self.evictions += 1
        else:
            if self.max_sessions:
                slots.move_to_end(session)  # type: ignore[union-attr]
            if not duplicate:
                slots[session] = slot

    def user_turn(self, session: str) -> bool:
        """The user spoke in ``session``: under a policy with ``reset_on_user_turn`` the
        session's state ends (``streak``'s docstring), in the store too, so every process
        sharing it starts the session over; returns whether it did. Without that key
        nothing changes. A store failure is a store failure (``warn``), never raised."""
        if not self.user_turns:
            return False
        if self.store is None:
            with self._lock:
                self._slots.pop(session, None)
            return True
        from ..stores import StoreError

        try:
            with self._lock:
                self.store.reset(session)
        except StoreError as exc:
            self._store_failed(exc)
            return False
        self._store_answered()
        return True

    def reset(self, session: str | None = None) -> None:
        """Forget one session's streak, or all of them (in the store, for every process
        that shares it)."""
        with self._lock:
            if self.store is not None:
                self.store.reset(session)
            elif session is None:
                self._slots.clear()
            else:
                self._slots.pop(session, None)


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
