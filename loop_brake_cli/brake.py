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
from .streak import PolicySlot, Slot, is_denied, policy_step, step

__all__ = [
    "CODE",
    "DEFAULT_MAX_REPEATS",
    "CYCLE_TEMPLATE",
    "DENY_TEMPLATE",
    "DISCOVER",
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
    "STOP_TEMPLATE",
    "subagent_session_key",
    "verdict_of",
    "verdict_of_policy",
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


CYCLE_TEMPLATE = (
    "loop brake: calls {calls} repeated {repeats} times in a row "
    "(calls {prefixes}, limit {limit}); the call was denied before it ran.\n"
    "Change the arguments, call a different tool, or stop."
)
"""A cycle denial (policy ``[cycles]``): tool names and hash prefixes, in cycle order."""

STOP_TEMPLATE = (
    "loop brake: {denials} calls in a row were denied in this session (stop after {limit}); "
    "the last was tool {tool} (call {prefix}\u2026).\n"
    "Stop: report to the user what you were trying to do instead of retrying."
)
"""A stop (policy ``[stop]``): said to the agent, and as the stop reason where the
agent's hook protocol has one."""


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
    rule: str | None = None  # None: no policy (the seed's verdict, byte for byte)
    limit: int | None = None
    exempt: bool = False
    match: str | None = None
    cycle: tuple[tuple[str, str], ...] = ()  # (tool, hash prefix) of each call of the cycle
    cycle_repeats: int = 0
    denials: int = 0

    @property
    def stop(self) -> bool:
        return self.rule == "stop"

    @property
    def message(self) -> str:
        if self.rule == "stop":
            return STOP_TEMPLATE.format(
                denials=self.denials,
                limit=self.limit,
                tool=js_string(self.tool_name),
                prefix=self.hash_prefix,
            )
        if self.rule == "cycle":
            return cycle_message(self.cycle, self.cycle_repeats, self.limit or 0)
        return deny_message(self.tool_name, self.count, self.max_repeats, self.hash_prefix)


def cycle_message(cycle: tuple[tuple[str, str], ...], repeats: int, limit: int) -> str:
    """The cycle denial text: tool names (as JSON strings) and hash prefixes only."""
    return CYCLE_TEMPLATE.format(
        calls=", ".join(js_string(tool) for tool, _ in cycle),
        repeats=repeats,
        prefixes=", ".join(f"{prefix}\u2026" for _, prefix in cycle),
        limit=limit,
    )


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


def verdict_of_policy(state: PolicySlot, session: str, call_id: Any, duplicate: bool) -> Verdict:
    """The verdict for a call just counted into ``state`` (``streak.policy_step``'s result);
    a duplicate gets the counted call's decision."""
    slot, decision = state.slot, state.decision
    cycle: tuple[tuple[str, str], ...] = ()
    if decision.period:
        period = decision.period
        cycle = tuple(
            zip(
                state.recent_tools[-period:],
                (hash_prefix(digest) for digest in state.recent[-period:]),
                strict=True,
            )
        )
    return Verdict(
        denied=decision.denied,
        tool_name=slot.tool,
        session_id=session,
        count=slot.count,
        max_repeats=decision.max_repeats,
        hash_prefix=hash_prefix(slot.digest),
        call_id=call_id,
        duplicate=duplicate,
        rule=decision.rule,
        limit=decision.limit,
        exempt=decision.exempt,
        match=decision.match,
        cycle=cycle,
        cycle_repeats=decision.repeats,
        denials=decision.denials,
    )


class _Discover:
    def __repr__(self) -> str:
        return "DISCOVER"


DISCOVER: Any = _Discover()
"""``LoopBrake(policy=DISCOVER)`` (the default): the policy file found as the CLI finds
it (``LOOP_BRAKE_POLICY``, ``.loop-brake.toml`` / ``pyproject.toml`` upward, the user's
config), or none."""


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
        policy: Any = DISCOVER,
    ) -> None:
        """``source`` names where an explicit ``max_repeats`` came from (for summaries).

        ``policy``: a ``policy.Policy``, a path to a policy file, None (no policy), or
        ``DISCOVER`` (the default: found as the CLI finds it). A bad file raises
        ``policy.PolicyError``. An empty policy is no policy."""
        self.max_repeats, self.max_repeats_source = resolve_max_repeats(max_repeats)
        if source is not None and max_repeats is not None:
            self.max_repeats_source = source
        if max_sessions is not None and max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self.evictions = 0
        self._slots: OrderedDict[str, Any] | dict[str, Any] = OrderedDict() if max_sessions else {}
        found = _resolve_policy(policy)
        self.policy_path: str | None = None if found is None else found.path
        self.policy = None if found is None or found.empty else found
        if self.policy is not None:  # chosen once: the seed's path keeps its speed
            self.count_call = self._count_policy  # type: ignore[method-assign]
            self.slot_verdict = self._policy_verdict  # type: ignore[method-assign]

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

    def _count_policy(
        self, session: str, tool_name: str, digest: bytes, call_id: Any = None
    ) -> tuple[PolicySlot, bool]:
        """``count_call`` under a policy: ``streak.policy_step`` instead of ``step``."""
        slots = self._slots
        prev = slots.get(session)
        state, duplicate = policy_step(
            prev, tool_name, digest, call_id, self.max_repeats, self.policy
        )
        if prev is None:
            slots[session] = state
            if self.max_sessions and len(slots) > self.max_sessions:
                slots.popitem(last=False)  # type: ignore[call-arg]
                self.evictions += 1
        else:
            if self.max_sessions:
                slots.move_to_end(session)  # type: ignore[union-attr]
            if not duplicate:
                slots[session] = state
        return state, duplicate

    def _policy_verdict(
        self, state: PolicySlot, session: str, call_id: Any, duplicate: bool
    ) -> Verdict:
        return verdict_of_policy(state, session, call_id, duplicate)

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
