"""The in-memory brake of dsh-loop-brake: sessions, verdicts, errors, wrappers.

The rule itself (count, reset, duplicate, deny) is ``streak.step``; this module
keeps one slot per session in memory (optionally LRU-bounded), turns a slot
into a ``Verdict``, resolves maxRepeats and raises ``LoopBrakeError``.
"""

from __future__ import annotations

import functools
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .canonical import call_digest, hash_prefix, js_string
from .streak import Slot, is_denied, step

__all__ = [
    "CODE",
    "DEFAULT_MAX_REPEATS",
    "DENY_TEMPLATE",
    "ENV_VAR",
    "InvalidMaxRepeatsError",
    "LoopBrake",
    "LoopBrakeError",
    "PLUGIN",
    "Verdict",
    "decorate_tool",
    "deny_message",
    "normalize_max_repeats",
    "resolve_max_repeats",
    "session_key",
    "subagent_session_key",
    "verdict_of",
    "wrap_execute",
]

DEFAULT_MAX_REPEATS = 3
ENV_VAR = "DSH_LOOP_BRAKE_MAX_REPEATS"
PLUGIN = "dsh-loop-brake"
CODE = "LOOP_BRAKE"
DEFAULT_SESSION = "default"


class InvalidMaxRepeatsError(ValueError):
    """A maxRepeats that the plugin would reject; names where the value came from."""

    def __init__(self, source: str, value: object, reason: str = "") -> None:
        self.source = source
        self.value = value
        shown = json.dumps(value, default=repr)
        detail = reason or "must be an integer of at least 1"
        super().__init__(f"invalid maxRepeats from {source}: {shown} ({detail})")


def normalize_max_repeats(value: object, source: str = "maxRepeats") -> int:
    """Accept an integer >= 1; an integral float such as 5.0 counts as 5.

    Booleans and strings are rejected even though JavaScript would coerce them:
    a config value of "5" is a mistake worth reporting, not guessing about.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidMaxRepeatsError(source, value, "must be an integer of at least 1")
    if isinstance(value, float) and not value.is_integer():
        raise InvalidMaxRepeatsError(source, value, "must be a whole number")
    if value < 1:
        raise InvalidMaxRepeatsError(source, value, "must be at least 1")
    return int(value)


def parse_env_max_repeats(raw: str) -> int | None:
    """The environment fallback: a base-10 integer, spaces allowed, empty = unset."""
    text = raw.strip()
    if not text:
        return None
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()):
        raise InvalidMaxRepeatsError(f"${ENV_VAR}", raw, "must be a base-10 integer of at least 1")
    return normalize_max_repeats(int(text), f"${ENV_VAR}")


def resolve_max_repeats(
    explicit: object = None, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """The value and a description of its source: explicit, environment, default."""
    if explicit is not None:
        return normalize_max_repeats(explicit, "--max-repeats"), "--max-repeats"
    environ = os.environ if env is None else env
    raw = environ.get(ENV_VAR)
    if raw is not None:
        value = parse_env_max_repeats(raw)
        if value is not None:
            return value, f"${ENV_VAR}"
    return DEFAULT_MAX_REPEATS, "default"


def session_key(session_id: str | None = None, agent_id: str | None = None) -> str:
    """The explicit session id, else the agent id, else "default"."""
    if session_id is not None:
        return session_id
    if agent_id is not None:
        return agent_id
    return DEFAULT_SESSION


def subagent_session_key(session_id: str, agent_id: str | None) -> str:
    """A subagent's own streak: the parent session joined with the agent id."""
    return session_id if agent_id is None else f"{session_id}/{agent_id}"


DENY_TEMPLATE = (
    "loop brake: tool {tool} called {count} times in a row with identical arguments "
    "(call {prefix}\u2026, limit {limit}); the call was denied before it ran.\n"
    "Change the arguments, call a different tool, or stop."
)
"""The plugin's denial text, the one statement of it (the fast path splits it)."""


def deny_message(tool_name: str, count: int, max_repeats: int, prefix: str) -> str:
    """The plugin's denial text; never the arguments.

    The tool name is written as JSON.stringify writes it (a lone surrogate as
    ``\\udxxx``), so the text equals the plugin's for every tool name.
    """
    return DENY_TEMPLATE.format(
        tool=js_string(tool_name), count=count, prefix=prefix, limit=max_repeats
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """One decision. ``denied`` calls must not run."""

    denied: bool
    tool_name: str
    session_id: str
    count: int
    max_repeats: int
    hash_prefix: str
    call_id: Any = None
    duplicate: bool = False

    @property
    def message(self) -> str:
        return deny_message(self.tool_name, self.count, self.max_repeats, self.hash_prefix)


def verdict_of(
    slot: Slot, session: str, call_id: Any, duplicate: bool, max_repeats: int
) -> Verdict:
    """The verdict for a call just counted into ``slot`` (``streak.step``'s result).

    The slot's tool and digest are the counted call's, which is what a duplicate
    reports; for any other call they are the call's own."""
    return Verdict(
        denied=is_denied(slot.count, max_repeats),
        tool_name=slot.tool,
        session_id=session,
        count=slot.count,
        max_repeats=max_repeats,
        hash_prefix=hash_prefix(slot.digest),
        call_id=call_id,
        duplicate=duplicate,
    )


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
    ) -> None:
        """``source`` names where an explicit ``max_repeats`` came from (for summaries)."""
        self.max_repeats, self.max_repeats_source = resolve_max_repeats(max_repeats)
        if source is not None and max_repeats is not None:
            self.max_repeats_source = source
        if max_sessions is not None and max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self.evictions = 0
        self._slots: OrderedDict[str, Slot] | dict[str, Slot] = (
            OrderedDict() if max_sessions else {}
        )

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
        digest = call_digest(tool_name, {} if args is None else args)
        return self.observe(session_key(session_id, agent_id), tool_name, digest, call_id)

    def enforce(
        self,
        tool_name: str,
        args: Any = None,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        call_id: Any = None,
    ) -> Verdict:
        """Count one call; raise LoopBrakeError if it must not run."""
        verdict = self.check(
            tool_name, args, session_id=session_id, agent_id=agent_id, call_id=call_id
        )
        if verdict.denied:
            raise LoopBrakeError(verdict)
        return verdict

    def observe(self, session: str, tool_name: str, digest: bytes, call_id: Any = None) -> Verdict:
        """Count a call whose digest is already known (the hot path of the CLI)."""
        slot, duplicate = self.count_call(session, tool_name, digest, call_id)
        return self.slot_verdict(slot, session, call_id, duplicate)

    def slot_verdict(self, slot: Slot, session: str, call_id: Any, duplicate: bool) -> Verdict:
        """The verdict a slot stands for right after counting a call into it."""
        return verdict_of(slot, session, call_id, duplicate, self.max_repeats)

    def count_call(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[Slot, bool]:
        """Count one call with ``streak.step`` and keep the session's new slot.

        The counting behind observe(), without building a Verdict (fastpath.py)."""
        slots = self._slots
        prev = slots.get(session)
        slot, duplicate = step(prev, tool_name, digest, call_id)
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
        return slot, duplicate

    def reset(self, session: str | None = None) -> None:
        """Forget one session's streak, or all of them."""
        if session is None:
            self._slots.clear()
        else:
            self._slots.pop(session, None)


def wrap_execute(
    fn: Callable[..., Any],
    brake: LoopBrake,
    *,
    tool: str,
    session_id: str | None = None,
) -> Callable[..., Any]:
    """Brake one execute function: ``fn(args, ...)``. A denied call's body never runs.

    The first positional argument is the tool's arguments; keyword ``call_id``
    (if the host passes one) de-duplicates a call seen at two seams.
    """
    import inspect  # only the wrappers need it; the hook's start-up should not pay for it

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def braked_async(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
            brake.enforce(tool, args, session_id=session_id, call_id=kwargs.get("call_id"))
            return await fn(args, *rest, **kwargs)

        return braked_async

    @functools.wraps(fn)
    def braked(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        brake.enforce(tool, args, session_id=session_id, call_id=kwargs.get("call_id"))
        return fn(args, *rest, **kwargs)

    return braked


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
