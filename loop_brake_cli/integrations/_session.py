"""What every framework integration shares: the brake it counts with, whose streak a
call belongs to, feeding a tool's result to the progress mode, and the stop.

A framework integration is a thin adapter: it finds the seam where the framework
runs a tool, and around it does exactly this (``SessionBrake`` holds the pieces)::

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]):
        self.seam = SessionBrake.of(brake, options, default_key=my_default, where="langchain")

    verdict = seam.judge(seam.session(ctx), tool_name, args, call_id)   # before the tool
    if verdict.stop:    ...end the run the framework's own way (see below)
    elif verdict.denied: ...hand the model verdict.message, do not run the tool
    else:
        result = run_the_tool()
        seam.feed(verdict, result)                                      # after the tool

The contract, which each integration documents in its own words:

* **The options** (``BrakeOptions``): every integration's constructor and ``attach``
  take ``brake`` (positional or keyword) and the keywords ``max_repeats``,
  ``policy`` and ``session_key``, gathered once here (``SessionBrake.of``; any other
  keyword is a ``TypeError``, as Python gives for an unknown parameter).
* **The brake** (``make_brake``): the ``LoopBrake`` the user passed (so a store or any
  other option of it passes through untouched), else a new one with ``max_repeats``,
  the explicit ``policy`` (None by default: an integration never reads
  ``.loop-brake.toml``, ``pyproject.toml`` or ``LOOP_BRAKE_POLICY`` unless given
  ``policy=DISCOVER``) and a bounded session table: ``max_sessions`` streaks, least
  recently used evicted first (``DEFAULT_MAX_SESSIONS``), so a long-running server
  keeps a bounded number of sessions whatever its traffic.
* **The session** (``SessionBrake.session``): the user's ``session_key(ctx)`` when given
  (a str; None falls back to the default; anything else is a ``TypeError`` naming the
  integration), else the integration's ``default_key(ctx)``. A default key is never
  shared by callers that do not share a conversation: it is the framework's own
  conversation or thread id, else an object of one run, connection or request
  (``scoped_key``). A server-wide key only when the user configures one.
* **Scoped keys** (``SessionBrake.scoped_key(obj)``): a key of its own for a live
  framework object (a run's usage record, a connection), whose streak is forgotten
  when the object is garbage-collected; ``release(key)`` forgets it earlier, when the
  integration knows the run or request ended.
* **Call ids** (``fresh_call_id``): where the framework gives no id of its own that is
  unique per call, a fresh one, so a result pairs with its own call and no id a client
  chooses can make two calls one.
* **Results** (``SessionBrake.feed``): every result of a call that ran goes to
  ``LoopBrake.observe_result`` as JSON (``to_json``); only under a policy's progress
  mode is anything kept (the 32-byte digest). A result that has no JSON form is not
  fed: the call then counts as one that reported no result (the seed's rule).
* **The end of a call** (``SessionBrake.end``): a call's id marks the same call only
  while it is open, from ``judge`` until its result (``feed`` ends it), its failure
  (the integration calls ``end``) or its denial (``judge`` ends it); then a call with
  the same id is a new call, counted. So a model that numbers its calls ``call_0``
  every turn is braked, while one call seen at two seams still counts once.
* **The stop** (``verdict.stop``, a policy's ``[stop]``): never just another denial.
  The integration ends the run the framework's own way (its abort exception, its end
  of run, its run cancellation); where the framework has none, ``stop_error`` is the
  ``LoopBrakeStop`` to raise. ``denial_fields`` (``_denial``) is the denial as data.

Nothing here reads or keeps a tool's arguments or results beyond their digests.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypedDict

from ..core.brake import LoopBrake, LoopBrakeStop
from ..core.verdicts import Verdict

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "BrakeOptions",
    "SessionBrake",
    "brake_of",
    "fresh_call_id",
    "make_brake",
    "stop_error",
    "to_json",
]

DEFAULT_MAX_SESSIONS = 1024
"""Streaks an integration's own brake keeps at most (least recently used evicted)."""

_numbers = itertools.count(1)
_call_numbers = itertools.count(1)


class BrakeOptions(TypedDict, total=False):
    """The keywords every integration takes beside ``brake`` (``**options:
    Unpack[BrakeOptions]``): ``max_repeats`` and ``policy`` for a brake of its own
    (``make_brake``), ``session_key`` the user's key function (``SessionBrake.session``)."""

    max_repeats: object
    policy: Any
    session_key: Callable[[Any], str | None] | None


def make_brake(
    brake: LoopBrake | None,
    max_repeats: object = None,
    *,
    policy: Any = None,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
) -> LoopBrake:
    """The given ``brake``, else a new bounded one: never both.

    ``policy``: a ``policy.Policy``, a path, ``brake.DISCOVER`` (found as the CLI finds
    it: the explicit opt-in), or None (the default: no policy). ``max_sessions=None``
    is an unbounded table (the user's choice, never the default)."""
    if brake is not None:
        if max_repeats is not None or policy is not None:
            raise ValueError("give either brake or max_repeats/policy, not both")
        return brake
    return LoopBrake(max_repeats, max_sessions=max_sessions, policy=policy)


def brake_of(brake: LoopBrake | None, options: Mapping[str, Any], where: str) -> LoopBrake:
    """``make_brake`` from an integration's ``brake`` and ``options`` (``BrakeOptions``);
    an unknown keyword is a ``TypeError`` naming it and the integration."""
    unknown = sorted(set(options) - BrakeOptions.__annotations__.keys())
    if unknown:
        raise TypeError(
            f"loop_brake_cli.integrations.{where}: unexpected keyword argument {unknown[0]!r}"
        )
    return make_brake(brake, options.get("max_repeats"), policy=options.get("policy"))


def fresh_call_id() -> str:
    """A call id no other call of this process has: ``lb#N``."""
    return f"lb#{next(_call_numbers)}"


def stop_error(verdict: Verdict) -> LoopBrakeStop:
    """The exception that ends a run at a policy's stop, where a framework has no
    stop of its own: a ``LoopBrakeError`` (so code that catches denials catches it)."""
    return LoopBrakeStop(verdict)


def to_json(result: Any) -> Any:
    """A tool's result as a JSON value for the progress digest; raises ``TypeError``
    or ``ValueError`` when it has none. JSON values pass as they are; other objects
    (pydantic models, dataclasses, a str or list subclass, which the canonical form
    refuses) through pydantic's JSON mode when pydantic is
    installed (every supported framework depends on it)."""
    if result is None or result.__class__ in (str, int, float, bool, list, dict):
        return result  # the exact types: a subclass (smolagents' AgentText) is converted
    try:
        from pydantic_core import to_jsonable_python
    except ImportError:  # pragma: no cover - every framework we support brings pydantic
        raise TypeError(f"{type(result).__name__} has no JSON form") from None
    return to_jsonable_python(result)


class SessionBrake:
    """One integration's brake, session rule and result feed (see the module's contract).

    ``where`` names the integration in errors (``"langchain"``); ``session_key`` is the
    user's key function or None; ``default_key(ctx)`` the integration's own rule."""

    def __init__(
        self,
        brake: LoopBrake,
        *,
        session_key: Callable[[Any], str | None] | None,
        default_key: Callable[[Any], str],
        where: str,
        to_json: Callable[[Any], Any] = to_json,
    ) -> None:
        self.brake = brake
        self.session_key = session_key
        self.default_key = default_key
        self.where = where
        self.to_json = to_json
        self._scoped: dict[int, tuple[weakref.ref[Any], str]] = {}
        # Frameworks run one turn's parallel tool calls in threads (LangGraph's sync
        # ToolNode, smolagents): a session's read-count-write must not interleave, or
        # counts are lost and a loop is never denied.
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls,
        brake: LoopBrake | None,
        options: Mapping[str, Any],
        *,
        default_key: Callable[[Any], str],
        where: str,
        to_json: Callable[[Any], Any] = to_json,
    ) -> SessionBrake:
        """The seam of an integration built with the user's ``brake`` and ``options``
        (``BrakeOptions``, checked by ``brake_of``)."""
        return cls(
            brake_of(brake, options, where),
            session_key=options.get("session_key"),
            default_key=default_key,
            where=where,
            to_json=to_json,
        )

    def session(self, ctx: Any) -> str:
        """The user's key for ``ctx`` when it gives one, else the integration's default."""
        if self.session_key is not None:
            key = self.session_key(ctx)
            if key is not None:
                if key.__class__ is not str or not key:
                    raise TypeError(
                        f"loop_brake_cli.integrations.{self.where}: session_key returned "
                        f"{type(key).__name__ if key.__class__ is not str else 'an empty str'}; "
                        "it must return a non-empty str, or None for the default session"
                    )
                return key
        return self.default_key(ctx)

    def scoped_key(self, obj: Any, prefix: str) -> str:
        """A key of ``obj``'s own (``prefix#N``) while it lives; its streak is forgotten
        when ``obj`` is collected. ``obj`` must accept weak references."""
        ident = id(obj)
        entry = self._scoped.get(ident)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        key = f"{prefix}#{next(_numbers)}"
        ref = weakref.ref(obj, lambda _ref, ident=ident, key=key: self._forget(ident, key))
        self._scoped[ident] = (ref, key)
        return key

    def _forget(self, ident: int, key: str) -> None:
        entry = self._scoped.get(ident)
        if entry is not None and entry[1] == key:
            del self._scoped[ident]
        self.release(key)

    def release(self, key: str) -> None:
        """Forget one session's streak now (its run or request ended)."""
        self.brake.reset(key)

    def judge(self, session: str, tool: str, args: Any, call_id: Any = None) -> Verdict:
        """Count one call (``LoopBrake.check``); the caller acts on the verdict. Safe
        from several threads at once. A denied call ends here: the denial is its answer,
        so its id may count again (``end``)."""
        with self._lock:
            verdict = self.brake.check(tool, args, session_id=session, call_id=call_id)
            if verdict.denied and not verdict.duplicate and call_id is not None:
                self.brake.end_call(session, call_id)
        return verdict

    def end(self, verdict: Verdict) -> None:
        """The call ended (its result came back, or it failed): its id no longer marks
        a duplicate, so a later call with that id is a new call, counted
        (``LoopBrake.end_call``; a model that numbers its calls ``call_0`` every turn).
        A duplicate (the call seen at a second seam) is left to the seam that counted
        it. Ending a call twice is harmless."""
        if not verdict.duplicate:
            self.end_call(verdict.session_id, verdict.call_id)

    @contextmanager
    def running(self, verdict: Verdict) -> Iterator[None]:
        """Around a call that runs: it ends on the way out (``end``), with its result or
        with the exception it raised, so no failure leaves its id marking a duplicate."""
        try:
            yield
        finally:
            self.end(verdict)

    def end_call(self, session: str, call_id: Any) -> None:
        """``end`` where the framework tells of the call's end apart from its verdict (a
        second hook after the tool): the session and call id it was judged with."""
        if call_id is not None:
            with self._lock:
                self.brake.end_call(session, call_id)

    def feed(self, verdict: Verdict, result: Any) -> bool:
        """The call's result came back: give it to the progress mode, and end the call
        (``end``); whether it paired. Only a call that ran (a passed verdict) has a
        result; without the progress mode, or for a result with no JSON form, nothing
        is read."""
        if verdict.denied:
            return False
        paired = self._observe(verdict.session_id, verdict.call_id, result)
        self.end(verdict)
        return paired

    def feed_call(self, session: str, call_id: Any, result: Any) -> bool:
        """``feed`` where the framework hands the result over apart from the verdict
        (a second hook after the tool): the session and call id the call was judged with."""
        paired = self._observe(session, call_id, result)
        self.end_call(session, call_id)
        return paired

    def _observe(self, session: str, call_id: Any, result: Any) -> bool:
        if not self.brake.progress:
            return False
        try:
            value = self.to_json(result)
            with self._lock:
                return self.brake.observe_result(session, call_id, value)
        except (TypeError, ValueError):
            return False  # no JSON form: the call reported no result
