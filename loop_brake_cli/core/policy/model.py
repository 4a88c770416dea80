"""A policy as data: per-tool rules, the cycle brake, the window, same-error and
same-result rules, the stop after denials, progress and its ceiling.

Built only by ``policy.load`` (which validates every value and locates every
mistake); plain frozen data that pickles (``replay -j`` sends it to workers).
``Policy.rule_for`` is the one statement of "first matching rule wins".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from ..canonical import call_digest
from ..progress import DEFAULT_IGNORE
from .args_paths import strip as _strip

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CycleRule",
    "Policy",
    "SameErrorRule",
    "SameResultRule",
    "StopRule",
    "ToolRule",
    "WindowRule",
    "glob_match",
]

DEFAULT_PROGRESS_MAX = 30
"""The ceiling of the progress mode when the policy names none: identical calls in a
row that are denied even while their results keep changing (the call that makes 30).
The longest real poll whose result changed in the workplace's transcripts and the
samples is 6 calls (Codex polling a build with ``write_stdin``, about 5 s a poll);
a runaway poll (OpenClaw's 62 ``date`` calls) is cut at 30. docs/policies.md, "A
ceiling under progress", has the evidence (``bench/poll_runs.py``)."""


def glob_match(name: str, pattern: str) -> bool:
    """A shell-style glob on the whole tool name, case-sensitive: ``*`` any run of
    characters (``/`` included), ``?`` one character, ``[seq]`` / ``[!seq]`` a set."""
    return fnmatchcase(name, pattern)


@dataclass(frozen=True, slots=True)
class ToolRule:
    """One ``[[tools]]`` entry: its globs, and a limit, ``exempt``, ``progress``
    (None: the policy's global ``progress``), ``warn_at`` (None: the global one),
    ``progress_max`` (None: the global ceiling) or ``same_result`` (False: the
    ``[same_result]`` rule neither denies these tools nor reads their results)."""

    patterns: tuple[str, ...]
    max_repeats: int | None = None
    exempt: bool = False
    index: int = 0  # 0-based position among the [[tools]] entries
    line: int | None = None  # where it starts in the file
    progress: bool | None = None
    warn_at: int | None = None  # None: the policy's global warn_at
    args_ignore: tuple[str, ...] = ()  # the paths as written (policy/args_paths.py)
    ignore_paths: tuple[tuple[str | int | None, ...], ...] = ()  # the same, parsed
    progress_max: int | None = None  # None: the policy's global ceiling
    same_result: bool | None = None  # False: exempt from [same_result]


@dataclass(frozen=True, slots=True)
class CycleRule:
    """``[cycles]``: deny the call that completes the ``max_repeats``-th consecutive
    repetition of a cycle of 2..``max_period`` calls (at least two distinct)."""

    max_period: int = 4
    max_repeats: int = 3


@dataclass(frozen=True, slots=True)
class WindowRule:
    """``[window]``: deny a call whose hash is seen ``max_repeats`` times (this call
    included) among the session's last ``calls`` counted calls."""

    calls: int
    max_repeats: int


@dataclass(frozen=True, slots=True)
class SameErrorRule:
    """``[same_error]``: after ``after`` consecutive calls of one tool whose results
    were the identical error, deny that tool's calls until another tool is called."""

    after: int


@dataclass(frozen=True, slots=True)
class SameResultRule:
    """``[same_result]``: after ``after`` consecutive calls whose results had one digest,
    whatever their arguments, deny the next call: of one tool (the run is that tool's
    calls), or, with ``any_tool``, of any tool (``streak``'s docstring states the run)."""

    after: int
    any_tool: bool = False


@dataclass(frozen=True, slots=True)
class StopRule:
    """``[stop]``: the ``after_denials``-th consecutive denial in a session is a stop."""

    after_denials: int


@dataclass(frozen=True)
class Policy:
    """A loaded policy file; ``path`` names it in summaries and ``--json``.

    ``progress``: the global switch of the progress mode (a rule may say otherwise
    for its tools); ``result_ignore``: the patterns a result is cleaned of before
    hashing (``progress.result_digest``), the defaults included unless replaced;
    ``reset_on_user_turn``: a user turn ends the session's streaks (``streak``'s
    docstring states what it ends); ``warn_at``: the global streak count from which
    an allowed call is warned (a rule may give its own), None for no warning;
    ``progress_max``: the global ceiling of the progress mode (a rule may give its
    own), None for the default (``progress_ceiling``)."""

    tools: tuple[ToolRule, ...] = ()
    cycles: CycleRule | None = None
    stop: StopRule | None = None
    path: str | None = None
    progress: bool = False
    result_ignore: tuple[str, ...] = DEFAULT_IGNORE
    reset_on_user_turn: bool = False
    window: WindowRule | None = None
    same_error: SameErrorRule | None = None
    warn_at: int | None = None
    progress_max: int | None = None
    same_result: SameResultRule | None = None
    _cache: dict[str, tuple[ToolRule, str] | None] = field(
        default_factory=dict, compare=False, repr=False
    )
    plans: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What each tool's calls get from their rule (``streak.tool_rule``), per tool name."""

    def is_exempt(self, tool: str) -> bool:
        """The first rule matching ``tool`` exempts it (a cycle through it is no loop)."""
        found = self.rule_for(tool)
        return found is not None and found[0].exempt

    @property
    def uses_progress(self) -> bool:
        """Some tool's streak can be restarted by a result: results are worth reading."""
        return self.progress or any(rule.progress for rule in self.tools)

    @property
    def reads_results(self) -> bool:
        """Results are fed to the brake: the progress mode, the same-error or the
        same-result rule."""
        return self.uses_progress or self.same_error is not None or self.same_result is not None

    def progress_ceiling(self, given: int | None, limit: int) -> int:
        """The ceiling of a call in the progress mode: ``given`` (its rule's
        ``progress_max``, else the global one), else the default, raised to the call's
        streak limit when that is higher (a limit of 50 already allows 49 identical
        calls whose results never change; a changing result gets as many)."""
        if given is not None:
            return given
        return max(DEFAULT_PROGRESS_MAX, limit)

    def same_result_exempt(self, tool: str) -> bool:
        """The first rule matching ``tool`` takes it out of ``[same_result]``
        (``same_result = false``, or ``exempt = true``): never denied by that rule, and
        its results neither extend nor end the run."""
        found = self.rule_for(tool)
        return found is not None and (found[0].exempt or found[0].same_result is False)

    @property
    def uses_warn(self) -> bool:
        """Some allowed call may be warned (``warn_at``, global or in a rule)."""
        return self.warn_at is not None or any(rule.warn_at is not None for rule in self.tools)

    @property
    def empty(self) -> bool:
        """No rule at all: the brake behaves exactly as without a policy."""
        return (
            not self.tools
            and self.cycles is None
            and self.stop is None
            and not self.progress
            and not self.reset_on_user_turn
            and self.window is None
            and self.same_error is None
            and self.same_result is None
            and self.warn_at is None
        )

    @property
    def ignores_args(self) -> bool:
        """Some rule removes argument paths before hashing (``args_ignore``): its tools'
        calls are counted on policy hashes (``args_digest``)."""
        return any(rule.ignore_paths for rule in self.tools)

    def args_digest(self, tool: str, args: Any, digest_of: Any = call_digest) -> bytes:
        """The digest a call is counted on: ``digest_of(tool, args)`` (the contract's
        hash), or, when the first rule matching ``tool`` has ``args_ignore``, the
        same of the arguments without those paths (a policy hash)."""
        found = self.rule_for(tool)
        if found is not None and found[0].ignore_paths:
            args = _strip(args, found[0].ignore_paths)
        return digest_of(tool, args)

    def rule_for(self, tool: str) -> tuple[ToolRule, str] | None:
        """The first ``[[tools]]`` rule whose glob matches ``tool``, with that glob.

        Cached per tool name (a session calls few distinct tools), bounded."""
        cache = self._cache
        try:
            return cache[tool]
        except KeyError:
            pass
        found = next(
            (
                (rule, pattern)
                for rule in self.tools
                for pattern in rule.patterns
                if glob_match(tool, pattern)
            ),
            None,
        )
        if len(cache) >= 4096:
            cache.clear()
        cache[tool] = found
        return found
