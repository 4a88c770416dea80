"""``replay --suggest-policy``: the suggested rules as a TOML policy, each with its evidence.

The file is a policy ``check-config --policy`` accepts as it is (comments, then one
``[[tools]]`` table per tool that gets a rule), and that nothing applies until the
user names it (``--policy FILE``) or saves it where policies are found. Every rule
is preceded by the figures that made it; the evidence that made no rule is listed
after the rules, each line saying why, so nothing is decided out of sight. What is
printed: tool names (as TOML strings, glob characters bracketed so the rule
matches that tool alone), counts, and argument paths that
``analysis/suggest.printable`` lets through; never an argument value.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence

from ..analysis.suggest import Side, Suggestion, ToolStreaks

__all__ = ["policy_toml"]

WIDTH = 88


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes, ASCII only, are TOML's)."""
    return json.dumps(text, ensure_ascii=True)


def _glob_literal(name: str) -> str:
    """``name`` as a glob that matches it alone: ``*``, ``?`` and ``[`` bracketed."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in name)


def _comment(text: str, first: str = "# ", rest: str = "#   ") -> list[str]:
    """Wrapped at spaces only: a path or name longer than the width stays whole (one
    split in two could not be copied from the file)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


_PLURALS = {"streak": "streaks", "run of calls": "runs of calls"}


def _side(outcome: str, side: Side, what: str) -> str:
    found = side.streaks
    assert found is not None
    runs = (
        f"{_plural(side.runs, 'run')} of unknown outcome"
        if outcome == "unknown"
        else _plural(side.runs, f"{outcome} run")
    )
    return (
        f"{runs} ({_plural(found.streaks, what, _PLURALS[what])}, "
        f"the longest {_plural(found.longest, 'call')})"
    )


def _sides(sides: dict[str, Side], what: str, first: str) -> str:
    order = [first] + [o for o in ("resolved", "failed", "unknown") if o != first]
    parts = [_side(o, sides[o], what) for o in order if o in sides]
    if len(parts) == 1:
        return parts[0]
    return parts[0] + "; also in " + " and ".join(parts[1:])


def _rule_evidence(
    item: Suggestion, max_repeats: int, first_streak: str, first_near: str
) -> list[str]:
    notes = []
    side = item.streaks.get(first_streak)
    if (item.progress or item.max_repeats is not None) and side is not None:
        found = side.streaks
        assert isinstance(found, ToolStreaks)
        text = (
            f"{_string(item.tool)}: identical calls in a row reach maxRepeats {max_repeats} "
            f"in {_sides(item.streaks, 'streak', first_streak)}."
        )
        if item.progress:
            text += (
                f" Their results changed inside each of those {_plural(found.streaks, 'streak')}: "
                "the progress mode lets a call repeat while its result changes."
            )
        else:
            if found.unresulted == found.streaks:
                seen = "No results were recorded to compare"
            else:
                untold = ""
                if found.unresulted:
                    untold = f" ({found.unresulted:,} without two results to compare)"
                seen = f"Their results changed inside {found.changing:,} of them{untold}"
            text += (
                f" {seen}; a limit above the longest, {item.max_repeats}, lets those runs through."
            )
        notes.append(text)
    if item.args_ignore:
        notes.append(
            f"{_string(item.tool)}: calls the same but for {', '.join(item.args_ignore)} "
            f"(numbers, times or ids) repeat in {_sides(item.near, 'run of calls', first_near)}"
            ": counted without those paths, they are one call repeated, the loop the exact "
            "hash cannot see."
        )
    return notes


def _other_evidence(item: Suggestion, max_repeats: int, labelled: bool) -> list[str]:
    """What this tool's evidence showed that made no rule, and why."""
    notes = []
    if item.streaks and not (item.progress or item.max_repeats is not None):
        why = (
            "in no resolved run: the brake stops them as it is"
            if labelled
            else "no outcomes, so a streak may be a loop as well as a success (--outcomes)"
        )
        notes.append(
            f"{_string(item.tool)}: identical calls reach maxRepeats {max_repeats} in "
            f"{_sides(item.streaks, 'streak', 'resolved' if labelled else 'unknown')}; {why}."
        )
    if item.not_suggested is not None:
        notes.append(
            f"{_string(item.tool)}: no {item.not_suggested}: "
            f"{_sides(item.near, 'run of calls', 'resolved')}."
        )
    if item.textual:
        notes.append(
            f"{_string(item.tool)}: {_plural(item.textual, 'run')} of calls the same but for "
            "a path whose values are text or objects (a command, a file, a query): a "
            "different call each time, not noise."
        )
    if item.withheld:
        notes.append(
            f"{_string(item.tool)}: {_plural(item.withheld, 'run')} of calls the same but "
            "for a path whose member names do not look like schema names (a key that may "
            "be data): not shown."
        )
    return notes


def policy_toml(
    suggestions: Sequence[Suggestion],
    *,
    runs: int,
    max_repeats: int,
    outcomes: str | None,
    resolved: int = 0,
    failed: int = 0,
    unmatched: int = 0,
) -> str:
    """The policy file's text: a header, each rule after its evidence, then the
    evidence that made no rule."""
    lines = _comment(
        f"Suggested by `loop-brake replay --suggest-policy` from {_plural(runs, 'run')} "
        f"(maxRepeats {max_repeats})."
    )
    if outcomes is None:
        lines += _comment(
            "Outcomes: none given, so no run is known to have succeeded: only progress and "
            "args_ignore are suggested (--outcomes FILE weighs resolved runs against failed ones)."
        )
    else:
        left = f"; {_plural(unmatched, 'run')} with no outcome left out" if unmatched else ""
        lines += _comment(
            f"Outcomes: {outcomes}: {_plural(resolved, 'resolved run')}, "
            f"{_plural(failed, 'failed run')}{left}."
        )
    lines += _comment(
        "Nothing here applies until you use this file (--policy FILE, or save it as "
        ".loop-brake.toml): read each rule's evidence, then keep it or drop it. Tool "
        "arguments are never shown: only tool names, counts, and argument paths whose "
        "member names look like schema names."
    )
    labelled = outcomes is not None
    first_streak = "resolved" if labelled else "unknown"
    first_near = "failed" if labelled else "unknown"
    rules = 0
    for item in suggestions:
        keys: list[str] = []
        if item.max_repeats is not None:
            keys.append(f"max_repeats = {item.max_repeats}")
        if item.progress:
            keys.append("progress = true")
        if item.args_ignore:
            keys.append(f"args_ignore = [{', '.join(_string(p) for p in item.args_ignore)}]")
        if not keys:
            continue
        rules += 1
        lines.append("")
        for note in _rule_evidence(item, max_repeats, first_streak, first_near):
            lines += _comment(note)
        lines += ["[[tools]]", f"match = {_string(_glob_literal(item.tool))}", *keys]
    if not rules:
        lines.append("")
        lines += _comment(
            "No rule: this file is a policy with no rules (the brake as without one)."
        )
    others = [note for item in suggestions for note in _other_evidence(item, max_repeats, labelled)]
    if others:
        lines.append("")
        lines += _comment("Evidence that made no rule:")
        for note in others:
            lines += _comment(note, "# - ", "#   ")
    return "\n".join(lines) + "\n"
