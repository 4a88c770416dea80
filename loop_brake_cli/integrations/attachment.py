"""Attach the brake to a tool registry, and dispose of it: the plugin's ``apply``.

dsh-loop-brake patches the harness's tool registry at two seams and returns its
``LoopBrake``; this is the same for any Python object with that shape::

    brake = attach(registry, max_repeats=3)   # the LoopBrake, to inspect or reset
    ...
    dispose(brake)                            # the registry exactly as it was found

* ``registry.register(definition, ...)`` is patched (mandatory): every definition
  registered from then on is registered as a braked copy (``decorate_tool``
  semantics; the caller's definition is left alone). A definition is a mapping
  with ``"name"`` and ``"execute"``, or an object with ``name`` and ``execute``.
* ``registry.execute(name, args, ...)`` is patched when the registry has one, which
  catches tools registered before ``attach``.

One call passing through both seams is counted once: by its call id (keyword
``call_id``), as in the plugin, and also when the host does not hand the id on
to the tool's own execute (the execute seam marks the call in flight, and the
braked execute it reaches does not count it again). The session is keyword
``session_id``, else keyword ``agent_id``, else ``attach``'s ``session_id``,
else ``"default"``.

Under a policy's ``warn_at`` (a ``brake`` given one), a warned call runs and its
str result comes back with the warning after it (``with_warning``), added once, at
the seam that counted the call; any other result is returned as it is.

``dispose`` puts back exactly what was there (an instance attribute is
restored, a patched class method is uncovered again) and forgets every streak.
Definitions registered while attached keep their braked execute, which turns
into a plain pass-through once disposed, so after ``dispose`` nothing is braked
even if a later patch still wraps ours.
"""

from __future__ import annotations

import contextvars
import functools
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ..core.brake import LoopBrake, LoopBrakeError, LoopBrakeStop, with_warning
from ..core.records import session_key
from ..core.verdicts import Verdict

__all__ = ["attach", "dispose"]

_MISSING = object()

# The call the execute seam is running: (attachment, session, tool, digest).
# A braked definition reached inside it with the same call does not count it again.
_IN_FLIGHT: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "loop_brake_in_flight", default=None
)

_ATTACHMENTS: weakref.WeakKeyDictionary[LoopBrake, list[_Attachment]] = weakref.WeakKeyDictionary()


class _Attachment:
    """One registry patched for one brake: what was there, and what we put there."""

    def __init__(self, registry: Any, brake: LoopBrake, session_id: str | None) -> None:
        self.registry = registry
        self.brake = brake
        self.session_id = session_id
        self.active = True
        self.saved: dict[str, Any] = {}
        self.installed: dict[str, Any] = {}

    def session(self, kwargs: Mapping[str, Any]) -> str:
        explicit = kwargs.get("session_id")
        if explicit is None and kwargs.get("agent_id") is None:
            explicit = self.session_id
        return session_key(explicit, kwargs.get("agent_id"))

    def count(
        self, tool: str, args: Any, kwargs: Mapping[str, Any]
    ) -> tuple[str, bytes, Verdict | None]:
        """Count one call at a seam; raise LoopBrakeError if it must not run. The
        verdict, or None for a call the execute seam counted (and tells of a warning)."""
        session = self.session(kwargs)
        digest = self.brake.digest(tool, {} if args is None else args)
        in_flight = _IN_FLIGHT.get()
        if in_flight is not None and in_flight[:4] == [self, session, tool, digest]:
            in_flight[:] = [None] * 4  # counted at the execute seam; match only once
            return session, digest, None
        verdict = self.brake.observe_threadsafe(session, tool, digest, kwargs.get("call_id"))
        if verdict.denied:
            raise LoopBrakeStop(verdict) if verdict.stop else LoopBrakeError(verdict)
        return session, digest, verdict

    def patch(self, name: str, wrapper: Callable[..., Any]) -> None:
        self.saved[name] = vars(self.registry).get(name, _MISSING)
        setattr(self.registry, name, wrapper)
        self.installed[name] = wrapper

    def restore(self) -> None:
        """Undo both patches; one covered by a later patch is left to pass through."""
        self.active = False
        for name, wrapper in reversed(list(self.installed.items())):
            if vars(self.registry).get(name, _MISSING) is not wrapper:
                continue  # patched again on top of us: ours is now a pass-through
            saved = self.saved[name]
            if saved is _MISSING:
                delattr(self.registry, name)
            else:
                setattr(self.registry, name, saved)
        self.installed.clear()


def attach(
    registry: Any,
    brake: LoopBrake | None = None,
    *,
    max_repeats: object = None,
    session_id: str | None = None,
) -> LoopBrake:
    """Brake every tool of ``registry`` at its ``register`` and ``execute`` seams.

    Returns the ``LoopBrake`` (a new one with ``max_repeats`` unless ``brake`` is
    given), so a host can inspect or reset it; ``dispose`` undoes the attachment.
    """
    if brake is not None and max_repeats is not None:
        raise ValueError("give either brake or max_repeats, not both")
    if not callable(getattr(registry, "register", None)):
        raise TypeError(f"{type(registry).__name__} has no register method to attach to")
    if not hasattr(registry, "__dict__"):
        raise TypeError(f"{type(registry).__name__} cannot be patched (no instance attributes)")
    brake = LoopBrake(max_repeats) if brake is None else brake
    attachment = _Attachment(registry, brake, session_id)
    attachment.patch("register", _braked_register(attachment, registry.register))
    execute = getattr(registry, "execute", None)
    if callable(execute):
        attachment.patch("execute", _braked_registry_execute(attachment, execute))
    _ATTACHMENTS.setdefault(brake, []).append(attachment)
    return brake


def dispose(target: Any) -> None:
    """Undo ``attach``: given the brake, every registry it is attached to; given a
    registry, every brake attached to it. Restores exactly what was found, and
    forgets the streaks of every brake disposed of. A second call does nothing."""
    if isinstance(target, LoopBrake):
        found = [(target, a) for a in _ATTACHMENTS.get(target, [])]
    else:
        found = [(b, a) for b, ats in _ATTACHMENTS.items() for a in ats if a.registry is target]
    for brake, attachment in reversed(found):
        attachment.restore()
        _ATTACHMENTS[brake].remove(attachment)
        brake.reset()


def _braked_register(attachment: _Attachment, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def register(definition: Any, *rest: Any, **kwargs: Any) -> Any:
        if attachment.active:
            definition = _braked_definition(attachment, definition)
        return original(definition, *rest, **kwargs)

    return register


def _braked_definition(attachment: _Attachment, definition: Any) -> Any:
    """A copy whose execute is braked; a definition without one is left as it is."""
    if isinstance(definition, Mapping):
        execute, name = definition.get("execute"), definition.get("name")
    else:
        execute, name = getattr(definition, "execute", None), getattr(definition, "name", None)
    if not callable(execute) or not isinstance(name, str):
        return definition
    braked = _braked_execute(attachment, name, execute)
    if isinstance(definition, Mapping):
        return {**definition, "execute": braked}
    import copy

    clone = copy.copy(definition)
    clone.execute = braked
    return clone


def _braked_execute(
    attachment: _Attachment, tool: str, fn: Callable[..., Any]
) -> Callable[..., Any]:
    """A definition's execute, ``fn(args, ...)``, braked for this attachment."""
    import inspect

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def braked_async(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
            if not attachment.active:
                return await fn(args, *rest, **kwargs)
            verdict = attachment.count(tool, args, kwargs)[2]
            return _told(await fn(args, *rest, **kwargs), verdict)

        return braked_async

    @functools.wraps(fn)
    def braked(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        if not attachment.active:
            return fn(args, *rest, **kwargs)
        verdict = attachment.count(tool, args, kwargs)[2]
        return _told(fn(args, *rest, **kwargs), verdict)

    return braked


def _braked_registry_execute(
    attachment: _Attachment, original: Callable[..., Any]
) -> Callable[..., Any]:
    """The registry's ``execute(name, args, ...)``, braked; marks the call in flight."""
    import inspect

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def execute_async(name: str, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
            if not attachment.active:
                return await original(name, args, *rest, **kwargs)
            session, digest, verdict = attachment.count(name, args, kwargs)
            token = _IN_FLIGHT.set([attachment, session, name, digest])
            try:
                return _told(await original(name, args, *rest, **kwargs), verdict)
            finally:
                _IN_FLIGHT.reset(token)

        return execute_async

    @functools.wraps(original)
    def execute(name: str, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        if not attachment.active:
            return original(name, args, *rest, **kwargs)
        session, digest, verdict = attachment.count(name, args, kwargs)
        token = _IN_FLIGHT.set([attachment, session, name, digest])
        try:
            return _told(original(name, args, *rest, **kwargs), verdict)
        finally:
            _IN_FLIGHT.reset(token)

    return execute


def _told(result: Any, verdict: Verdict | None) -> Any:
    """The result the model reads: a warned call's str result with the warning after
    it (``with_warning``), once, at the seam that counted the call."""
    return result if verdict is None else with_warning(result, verdict)
