"""What a decision says: the ``Verdict``, and the plugin's texts, each stated once.

``streak`` decides; this module turns the resulting slot into a ``Verdict`` and
words it. The denial text is the plugin's, byte for byte; the fast path splits
``DENY_TEMPLATE`` rather than spelling it again. Never the arguments: tool
names, counts and hash prefixes only.
"""

from __future__ import annotations

from .canonical import hash_prefix, js_string
from .streak import PolicySlot, Slot, is_denied

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ._namedtuple import NamedTuple

__all__ = [
    "CODE",
    "CYCLE_TEMPLATE",
    "DENY_TEMPLATE",
    "PLUGIN",
    "POLICY_HASH_TEMPLATE",
    "PROGRESS_MAX_TEMPLATE",
    "PROGRESS_TEMPLATE",
    "SAME_ERROR_TEMPLATE",
    "SAME_RESULT_TEMPLATE",
    "STOP_TEMPLATE",
    "STORE_FAILED_TEMPLATE",
    "Verdict",
    "WARN_TEMPLATE",
    "WINDOW_TEMPLATE",
    "cycle_message",
    "deny_message",
    "progress_message",
    "verdict_of",
    "verdict_of_policy",
    "warn_message",
]

PLUGIN = "dsh-loop-brake"
CODE = "LOOP_BRAKE"

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

PROGRESS_TEMPLATE = (
    "loop brake: tool {tool} called {count} times in a row with identical arguments "
    "and {results} (call {prefix}\u2026, limit {limit}); the call was denied before it ran.\n"
    "Change the arguments, call a different tool, or stop."
)
"""A streak denial in the progress mode: the results did not change either."""

PROGRESS_MAX_TEMPLATE = (
    "loop brake: tool {tool} called {calls} times in a row with identical arguments, "
    "its results changing (call {prefix}\u2026, progress_max {limit}); the call was denied "
    "before it ran.\n"
    "A poll this long is not converging: change the approach, call a different tool, or stop."
)
"""A denial at the progress mode's ceiling (policy ``progress_max``): identical calls
whose results kept changing, too many in a row."""

WINDOW_TEMPLATE = (
    "loop brake: tool {tool} called {repeats} times with identical arguments within the "
    "last {window} calls (call {prefix}\u2026, limit {limit}); the call was denied before it "
    "ran.\nChange the arguments, call a different tool, or stop."
)
"""A window denial (policy ``[window]``): the same call again and again, other calls between."""

SAME_ERROR_TEMPLATE = (
    "loop brake: tool {tool} returned the same error {repeats} times in a row "
    "(limit {limit}); this call (call {prefix}\u2026) was denied before it ran.\n"
    "Read the error and change the approach, call a different tool, or stop."
)
"""A same-error denial (policy ``[same_error]``): never the error itself, only how often."""

SAME_RESULT_TEMPLATE = (
    "loop brake: {repeats} calls in a row returned the same result, whatever their "
    "arguments (limit {limit}); this call to tool {tool} (call {prefix}\u2026) was denied "
    "before it ran.\n"
    "Asking again will not change the answer: use it, change the approach, or stop."
)
"""A same-result denial (policy ``[same_result]``): never the result itself, only how often."""

WARN_TEMPLATE = (
    "loop brake: warning: tool {tool} called {count} times in a row with identical arguments "
    "(call {prefix}\u2026, warn at {warn_at}, limit {limit}); this call runs, but a streak "
    "of {limit} identical calls is denied.\n"
    "Change the arguments, call a different tool, or stop if you are not making progress."
)
"""A warning (policy ``warn_at``): said to the model beside an allowed call's result,
in each front-end's own channel; never the arguments."""

POLICY_HASH_TEMPLATE = (
    "loop brake: tool {tool} called {count} times in a row with arguments identical "
    "once the policy's args_ignore paths are removed (policy hash {prefix}\u2026, "
    "limit {limit}); the call was denied before it ran.\n"
    "Change the arguments, call a different tool, or stop."
)
"""A streak denial of a tool whose rule has ``args_ignore``: the prefix is a policy
hash (not the plugin's hash of the call), and the text says so."""

STORE_FAILED_TEMPLATE = (
    "loop brake: the streak store could not be asked, so the brake could not decide; "
    "the call was denied because the brake fails closed.\n"
    "Try again later, or ask the user to check the store."
)
"""A denial by ``--fail-closed`` when the shared store failed (rule ``store``): the
call was not counted; why the store failed is said once on stderr, never here."""


def deny_message(tool_name: str, count: int, max_repeats: int, prefix: str) -> str:
    """The plugin's denial text; never the arguments.

    The tool name is written as JSON.stringify writes it (a lone surrogate as
    ``\\udxxx``), so the text equals the plugin's for every tool name.
    """
    return DENY_TEMPLATE.format(
        tool=js_string(tool_name), count=count, prefix=prefix, limit=max_repeats
    )


class Verdict(NamedTuple):
    """One decision. ``denied`` calls must not run.

    A named tuple: one is built for every call judged (replay builds hundreds of
    thousands), and a tuple is built in one step where a class sets 15 attributes."""

    denied: bool
    tool_name: str
    session_id: str
    count: int  # type: ignore[assignment]  # the field hides tuple.count, never called
    max_repeats: int
    hash_prefix: str
    call_id: Any = None
    duplicate: bool = False
    rule: str | None = None  # None: no policy (the seed's verdict, byte for byte); "store":
    # the shared store failed and the call was not counted (count 0; see LoopBrake)
    limit: int | None = None
    exempt: bool = False
    match: str | None = None
    cycle: tuple[tuple[str, str], ...] = ()  # (tool, hash prefix) of each call of the cycle
    cycle_repeats: int = 0
    denials: int = 0
    progress: bool = False  # the progress mode applied to the call's tool
    identical_results: int = 0  # results of the streak's earlier calls, all identical
    window: int = 0  # rule "window": the window's size (cycle_repeats: times seen in it;
    # rule "same_error": cycle_repeats is the identical errors in a row; "same_result":
    # the identical results in a row; "progress_max": the identical calls in a row)
    warn_at: int | None = None  # a warned call (policy warn_at): it runs, the model is told
    policy_hash: bool = False  # hashed without the rule's args_ignore paths (a policy hash)

    def __repr__(self) -> str:
        """The named tuple's repr, leaving out fields added after the seed's verdict while
        they hold their defaults: a verdict without them reads as it always did."""
        shown = [
            f"{name}={value!r}"
            for position, (name, value) in enumerate(zip(self._fields, self, strict=True))
            if position < _REPR_FIELDS or value != self._field_defaults[name]
        ]
        return f"Verdict({', '.join(shown)})"

    @property
    def stop(self) -> bool:
        return self.rule == "stop"

    @property
    def warned(self) -> bool:
        """The call runs, but the policy's ``warn_at`` says the model must be told."""
        return self.warn_at is not None

    @property
    def warning(self) -> str | None:
        """What a warned call tells the model (``warn_message``), else None."""
        if self.warn_at is None:
            return None
        text = warn_message(
            self.tool_name, self.count, self.warn_at, self.max_repeats, self.hash_prefix
        )
        return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text

    @property
    def message(self) -> str:
        if self.rule == "store":
            return STORE_FAILED_TEMPLATE
        if self.rule == "stop":
            text = STOP_TEMPLATE.format(
                denials=self.denials,
                limit=self.limit,
                tool=js_string(self.tool_name),
                prefix=self.hash_prefix,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.rule == "cycle":
            text = cycle_message(self.cycle, self.cycle_repeats, self.limit or 0)
            if self.policy_hash:  # the prefixes come after every tool name: the last ")"
                head, _, tail = text.rpartition(_BEFORE_IT_RAN)
                text = head + _CYCLE_POLICY_HASH + tail
            return text
        if self.rule == "window":
            text = WINDOW_TEMPLATE.format(
                tool=js_string(self.tool_name),
                repeats=self.cycle_repeats,
                window=self.window,
                prefix=self.hash_prefix,
                limit=self.limit,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.rule == "same_error":
            text = SAME_ERROR_TEMPLATE.format(
                tool=js_string(self.tool_name),
                repeats=self.cycle_repeats,
                prefix=self.hash_prefix,
                limit=self.limit,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.rule == "same_result":
            text = SAME_RESULT_TEMPLATE.format(
                tool=js_string(self.tool_name),
                repeats=self.cycle_repeats,
                prefix=self.hash_prefix,
                limit=self.limit,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.rule == "progress_max":
            text = PROGRESS_MAX_TEMPLATE.format(
                tool=js_string(self.tool_name),
                calls=self.cycle_repeats,
                prefix=self.hash_prefix,
                limit=self.limit,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.progress:
            text = progress_message(
                self.tool_name,
                self.count,
                self.max_repeats,
                self.hash_prefix,
                self.identical_results,
            )
            return _policy_hash_call(text, self.hash_prefix) if self.policy_hash else text
        if self.policy_hash:
            return POLICY_HASH_TEMPLATE.format(
                tool=js_string(self.tool_name),
                count=self.count,
                prefix=self.hash_prefix,
                limit=self.max_repeats,
            )
        return deny_message(self.tool_name, self.count, self.max_repeats, self.hash_prefix)


_REPR_FIELDS = 17  # Verdict's fields up to identical_results: always in its repr


def warn_message(tool_name: str, count: int, warn_at: int, max_repeats: int, prefix: str) -> str:
    """The warning of a call at or past ``warn_at``: tool name, counts, hash prefix."""
    return WARN_TEMPLATE.format(
        tool=js_string(tool_name), count=count, prefix=prefix, warn_at=warn_at, limit=max_repeats
    )


_BEFORE_IT_RAN = "); the call was denied before it ran."
_CYCLE_POLICY_HASH = (
    "; policy hashes for tools with args_ignore); the call was denied before it ran."
)


def _policy_hash_call(text: str, prefix: str) -> str:
    """A text whose call is named by a policy hash (progress, stop, window, same error,
    warning): "(call P…" becomes "(policy hash P…". The last occurrence: the tool name,
    written before it, may hold anything; the prefix, after it, is 12 hex digits."""
    call = f"(call {prefix}\u2026"
    head, found, tail = text.rpartition(call)
    return head + f"(policy hash {prefix}\u2026" + tail if found else text


def progress_message(
    tool_name: str, count: int, max_repeats: int, prefix: str, identical: int
) -> str:
    """The streak denial of the progress mode: how many results were identical (the
    streak's earlier calls that reported one); never a result."""
    if identical >= 2:
        results = f"the last {identical} results identical"
    else:
        results = "1 result reported" if identical == 1 else "no result reported"
    return PROGRESS_TEMPLATE.format(
        tool=js_string(tool_name), count=count, results=results, prefix=prefix, limit=max_repeats
    )


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
    reports; for any other call they are the call's own. (Replay's loop builds the
    same verdict faster: ``readers/fast_observe.py``.)"""
    return Verdict(
        is_denied(slot.count, max_repeats),
        slot.tool,
        session,
        slot.count,
        max_repeats,
        hash_prefix(slot.digest),
        call_id,
        duplicate,
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
        progress=decision.progress,
        identical_results=decision.results,
        window=decision.window,
        warn_at=decision.warn_at,
        policy_hash=decision.policy_hash,
    )
