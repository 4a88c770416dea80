"""Reading a policy file: TOML in, a validated ``Policy`` out, every mistake located.

The file is parsed by the standard library's ``tomllib`` (``tomli`` on Python
3.10); since a TOML parser gives values but not their positions, each key and
table header is located by a line scan of the same text (``_Locator``), so an
error reads ``policy.toml:7:1: unknown key "max_repeat" (did you mean
max_repeats?)``. Errors (every one is collected, then ``PolicyError`` is raised)
make the file unusable; warnings (a rule shadowed by an earlier one) do not.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..canonical import js_string
from ..progress import DEFAULT_IGNORE, pattern_error
from ..small_file import SmallFileError, read_small_file
from ..toml_reader import tomllib
from .model import (
    CycleRule,
    Policy,
    SameErrorRule,
    SameResultRule,
    StopRule,
    ToolRule,
    WindowRule,
)

__all__ = [
    "MAX_PERIOD",
    "MAX_POLICY_BYTES",
    "MAX_WINDOW",
    "PolicyError",
    "Problem",
    "check_policy",
    "load_policy",
    "parse_policy",
    "read_policy_bytes",
]

MAX_PERIOD = 16
"""The longest cycle ``[cycles] max_period`` may ask for (memory per session grows with it)."""

MAX_WINDOW = 64
"""The most calls ``[window] calls`` may keep (each session holds that many 32-byte digests)."""

MAX_SAME_ERROR = 1000
"""The largest ``[same_error] after`` (a bound, so a typo of a few more digits is caught)."""

MAX_SAME_RESULT = 1000
"""The largest ``[same_result] after`` (as ``[same_error]``'s)."""

MAX_PROGRESS_MAX = 10000
"""The largest ``progress_max`` (a bound, so a typo of a few more digits is caught)."""

TOP_KEYS = (
    "tools",
    "cycles",
    "stop",
    "progress",
    "result_ignore",
    "result_ignore_defaults",
    "reset_on_user_turn",
    "window",
    "same_error",
    "warn_at",
    "progress_max",
    "same_result",
)
RULE_KEYS = (
    "match",
    "max_repeats",
    "exempt",
    "progress",
    "warn_at",
    "args_ignore",
    "progress_max",
    "same_result",
)
CYCLE_KEYS = ("max_period", "max_repeats")
STOP_KEYS = ("after_denials",)
WINDOW_KEYS = ("calls", "max_repeats")
SAME_ERROR_KEYS = ("after",)
SAME_RESULT_KEYS = ("after", "any_tool")
PYPROJECT_TABLE = "tool.loop-brake"


@dataclass(frozen=True, slots=True)
class Problem:
    """One located mistake; ``line``/``column`` are 1-based, None when unknown."""

    path: str
    line: int | None
    column: int | None
    message: str
    warning: bool = False

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        return f"{where}: {'warning: ' if self.warning else ''}{self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }


class PolicyError(ValueError):
    """An unusable policy file; ``problems`` are its located errors. ``unopened``: it could
    not be opened or read (an unreadable input, exit 3, not a mistake in it)."""

    def __init__(self, problems: list[Problem], unopened: bool = False) -> None:
        self.problems = problems
        self.unopened = unopened
        super().__init__("\n".join(str(problem) for problem in problems))


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(
    r"^(\s*)((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)


def _key_name(text: str) -> str:
    parts = [part.strip().strip("\"'") for part in text.split(".")]
    return ".".join(parts)


class _Locator:
    """Where each table and key of the policy starts, found by scanning lines.

    ``key(table, index, name)``: table is "" (top), "tools" (with the 0-based
    entry index), "cycles" or "stop"."""

    def __init__(self, text: str, prefix: str | None) -> None:
        self.lines = text.splitlines()
        self.keys: dict[tuple[str, int, str], tuple[int, int]] = {}
        self.tables: dict[tuple[str, int], int] = {}
        context: tuple[str, int] | None = ("", 0) if prefix is None else None
        tool_entries = -1
        for number, line in enumerate(text.splitlines(), 1):
            header = _HEADER.match(line)
            if header:
                name = _key_name(header.group(2))
                if prefix is not None:
                    if name != prefix and not name.startswith(prefix + "."):
                        context = None
                        continue
                    name = name[len(prefix) + 1 :]
                if header.group(1) == "[[" and name == "tools":
                    tool_entries += 1
                    context = ("tools", tool_entries)
                else:
                    context = (name, 0)
                self.tables.setdefault(context, number)
                continue
            key = _KEY.match(line)
            if key and context is not None:
                column = len(key.group(1)) + 1
                self.keys.setdefault(
                    (context[0], context[1], _key_name(key.group(2))), (number, column)
                )

    def key(self, table: str, index: int, name: str) -> tuple[int | None, int | None]:
        found = self.keys.get((table, index, name))
        if found is not None:
            return found
        if not table and (name, 0) in self.tables:  # a top-level key written as [name]
            return self.tables[(name, 0)], 1
        line = self.tables.get((table, index))
        return (line, 1) if line is not None else (None, None)

    def element(self, table: str, index: int, name: str, position: int) -> tuple[int, int] | None:
        """Where the ``position``-th element of the array assigned to a key starts (1-based
        line and column), found by reading the TOML array after the key's ``=``; None when
        it cannot be told (a multi-line string or an inline table before it: the caller
        points at the key)."""
        found = self.keys.get((table, index, name))
        if found is None:
            return None
        number, column = found
        line = self.lines[number - 1]
        at = line.find("=", column - 1)
        if at < 0:
            return None
        at += 1
        depth, seen = 0, -1
        while number <= len(self.lines):
            line = self.lines[number - 1]
            while at < len(line):
                char = line[at]
                if char == "#":
                    break
                if char == "[":
                    depth += 1
                elif char == "]":
                    depth -= 1
                    if depth <= 0:
                        return None
                elif char == "{" or (depth == 0 and not char.isspace()):
                    return None
                elif not char.isspace() and char != ",":
                    if depth == 1:  # an element starts: a string, a number, a boolean
                        seen += 1
                        if seen == position:
                            return number, at + 1
                    if char in "\"'":
                        end = _string_end(line, at)
                        if end is None:
                            return None
                        at = end
                    else:
                        while at + 1 < len(line) and line[at + 1] not in ",]#[ \t":
                            at += 1
                at += 1
            number, at = number + 1, 0
        return None


def _string_end(line: str, at: int) -> int | None:
    """The index of the closing quote of the one-line TOML string starting at ``line[at]``."""
    quote = line[at]
    if line.startswith(quote * 3, at):
        return None  # a multi-line string: not located
    at += 1
    while at < len(line):
        if line[at] == "\\" and quote == '"':
            at += 2
            continue
        if line[at] == quote:
            return at
        at += 1
    return None


class _Checker:
    def __init__(self, path: str, locator: _Locator) -> None:
        self.path = path
        self.locator = locator
        self.problems: list[Problem] = []

    def error(self, table: str, index: int, key: str, message: str, warning: bool = False) -> None:
        line, column = self.locator.key(table, index, key)
        self.problems.append(Problem(self.path, line, column, message, warning))

    def element_error(
        self, table: str, index: int, key: str, position: int, offset: int | None, message: str
    ) -> None:
        """An error in the ``position``-th string of an array: located at that string
        (and ``offset`` characters into its text, when it has no escape), else at the key."""
        found = self.locator.element(table, index, key, position)
        if found is None:
            self.error(table, index, key, message)
            return
        line, column = found
        text = self.locator.lines[line - 1]
        if offset is not None and "\\" not in text[column : column + offset + 1]:
            column += offset
        self.problems.append(Problem(self.path, line, column, message))

    def keys(
        self, table: str, index: int, values: dict[str, Any], allowed: tuple[str, ...]
    ) -> None:
        for key in values:
            if key in allowed:
                continue
            import difflib  # only for a mistake: the hook imports this module

            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(allowed)})"
            inside = {"": "", "tools": " in [[tools]]"}.get(table, f" in [{table}]")
            self.error(table, index, key, f'unknown key "{key}"{inside}{hint}')

    def integer(
        self,
        table: str,
        index: int,
        values: dict[str, Any],
        key: str,
        minimum: int,
        maximum: int | None = None,
    ) -> int | None:
        if key not in values:
            return None
        value = values[key]
        bound = f"of at least {minimum}" + (f" and at most {maximum}" if maximum else "")
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(table, index, key, f"{key} must be an integer {bound}, not {_show(value)}")
            return None
        if value < minimum or (maximum is not None and value > maximum):
            self.error(table, index, key, f"{key} must be an integer {bound}, not {value}")
            return None
        return value

    def boolean(self, table: str, index: int, values: dict[str, Any], key: str) -> bool | None:
        if key not in values:
            return None
        value = values[key]
        if not isinstance(value, bool):
            self.error(table, index, key, f"{key} must be true or false, not {_show(value)}")
            return None
        return value


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def parse_policy(text: str, path: str, prefix: str | None = None) -> tuple[Policy, list[Problem]]:
    """The policy in ``text`` and its warnings; ``PolicyError`` for any error.

    ``prefix``: the table holding the policy (``tool.loop-brake`` in pyproject.toml)."""
    toml = tomllib()
    if toml is None:
        raise PolicyError([Problem(path, None, None, "reading TOML needs Python 3.11+ or tomli")])
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        line, column = (int(found.group(1)), int(found.group(2))) if found else (None, None)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise PolicyError([Problem(path, line, column, f"not valid TOML: {message}")]) from None
    if prefix is not None:
        for part in prefix.split("."):
            document = document.get(part, {}) if isinstance(document, dict) else {}
    checker = _Checker(path, _Locator(text, prefix))
    policy = _build(document, path, checker)
    checker.problems.sort(key=lambda problem: (problem.line or 0, problem.column or 0))
    errors = [problem for problem in checker.problems if not problem.warning]
    if errors:
        raise PolicyError(errors)
    return policy, [problem for problem in checker.problems if problem.warning]


def _build(document: dict[str, Any], path: str, checker: _Checker) -> Policy:
    checker.keys("", 0, document, TOP_KEYS)
    rules = _rules(document.get("tools", []), checker)
    cycles = None
    if (table := _table(document, "cycles", CYCLE_KEYS, checker)) is not None:
        period = checker.integer("cycles", 0, table, "max_period", 2, MAX_PERIOD)
        repeats = checker.integer("cycles", 0, table, "max_repeats", 2)
        # a key left out takes the documented default (CycleRule's): slotted dataclasses
        # keep defaults in __init__ only, not as class attributes
        given = {"max_period": period, "max_repeats": repeats}
        cycles = CycleRule(**{key: value for key, value in given.items() if value is not None})
    stop = None
    if (table := _table(document, "stop", STOP_KEYS, checker)) is not None:
        if "after_denials" not in table and set(table) <= set(STOP_KEYS):
            checker.error("stop", 0, "", "[stop] needs after_denials (an integer >= 1)")
        after = checker.integer("stop", 0, table, "after_denials", 1)
        if after is not None:
            stop = StopRule(after)
    window = _window(document, checker)
    same_error = None
    if (table := _table(document, "same_error", SAME_ERROR_KEYS, checker)) is not None:
        if "after" not in table and set(table) <= set(SAME_ERROR_KEYS):
            checker.error("same_error", 0, "", "[same_error] needs after (an integer >= 1)")
        after = checker.integer("same_error", 0, table, "after", 1, MAX_SAME_ERROR)
        if after is not None:
            same_error = SameErrorRule(after)
    same_result = _same_result(document, checker)
    _shadowed(rules, checker)
    warn_at = checker.integer("", 0, document, "warn_at", 1)
    _warn_limits(warn_at, rules, checker)
    progress = checker.boolean("", 0, document, "progress") or False
    ignore = _result_ignore(document, checker)
    if not progress and not any(rule.progress for rule in rules):
        if same_error is None and same_result is None:
            for key in ("result_ignore", "result_ignore_defaults"):
                if key in document:
                    checker.error(
                        "", 0, key, f"{key} has no effect without progress = true", warning=True
                    )
    progress_max = checker.integer("", 0, document, "progress_max", 2, MAX_PROGRESS_MAX)
    _progress_limits(progress, progress_max, rules, checker)
    if same_result is None:
        for rule in rules:
            if rule.same_result is not None:
                checker.error(
                    "tools",
                    rule.index,
                    "same_result",
                    "same_result has no effect without [same_result]",
                    warning=True,
                )
    reset = checker.boolean("", 0, document, "reset_on_user_turn") or False
    return Policy(
        tuple(rules),
        cycles,
        stop,
        path,
        progress,
        ignore,
        reset_on_user_turn=reset,
        window=window,
        same_error=same_error,
        warn_at=warn_at,
        progress_max=progress_max,
        same_result=same_result,
    )


def _same_result(document: dict[str, Any], checker: _Checker) -> SameResultRule | None:
    """``[same_result]``: ``after`` required (1..MAX_SAME_RESULT), ``any_tool`` a boolean."""
    table = _table(document, "same_result", SAME_RESULT_KEYS, checker)
    if table is None:
        return None
    if "after" not in table and set(table) <= set(SAME_RESULT_KEYS):
        checker.error("same_result", 0, "", "[same_result] needs after (an integer >= 1)")
    after = checker.integer("same_result", 0, table, "after", 1, MAX_SAME_RESULT)
    any_tool = checker.boolean("same_result", 0, table, "any_tool")
    if after is None:
        return None
    return SameResultRule(after, bool(any_tool))


def _progress_limits(
    progress: bool, progress_max: int | None, rules: list[ToolRule], checker: _Checker
) -> None:
    """``progress_max`` must be above the streak limit it sits over: a rule's own
    ``progress_max`` not above its own ``max_repeats`` is an error (the ceiling would
    deny every run the progress mode exists to let through); the global one not above
    a rule's ``max_repeats`` is a warning for that rule. A ceiling where no tool is in
    the progress mode has no effect (a warning)."""
    for rule in rules:
        in_progress = rule.progress if rule.progress is not None else progress
        if rule.progress_max is not None and not in_progress:
            checker.error(
                "tools",
                rule.index,
                "progress_max",
                "progress_max has no effect: this rule's tools are not in the progress mode "
                "(progress = true)",
                warning=True,
            )
        if rule.max_repeats is None or not in_progress:
            continue
        if rule.progress_max is not None and rule.progress_max <= rule.max_repeats:
            checker.error(
                "tools",
                rule.index,
                "progress_max",
                f"progress_max ({rule.progress_max}) must be above this rule's max_repeats "
                f"({rule.max_repeats}): the ceiling would deny its calls before their "
                "limit, whatever their results",
            )
        elif (
            rule.progress_max is None
            and progress_max is not None
            and progress_max <= rule.max_repeats
        ):
            checker.error(
                "tools",
                rule.index,
                "max_repeats",
                f"the global progress_max ({progress_max}) is not above this rule's "
                f"max_repeats ({rule.max_repeats}): its calls are denied at the ceiling "
                "before their limit (give the rule its own progress_max)",
                warning=True,
            )
    if progress_max is not None and not progress and not any(rule.progress for rule in rules):
        checker.error(
            "",
            0,
            "progress_max",
            "progress_max has no effect without progress = true",
            warning=True,
        )


def _window(document: dict[str, Any], checker: _Checker) -> WindowRule | None:
    """``[window]``: both keys required, 2 <= max_repeats <= calls <= MAX_WINDOW."""
    table = _table(document, "window", WINDOW_KEYS, checker)
    if table is None:
        return None
    for key in WINDOW_KEYS:
        if key not in table and set(table) <= set(WINDOW_KEYS):
            checker.error("window", 0, "", f"[window] needs {key} (an integer >= 2)")
    calls = checker.integer("window", 0, table, "calls", 2, MAX_WINDOW)
    repeats = checker.integer("window", 0, table, "max_repeats", 2, MAX_WINDOW)
    if calls is None or repeats is None:
        return None
    if repeats > calls:
        checker.error(
            "window",
            0,
            "max_repeats",
            f"max_repeats ({repeats}) must be at most calls ({calls}): "
            "a call cannot be seen more often than the window holds calls",
        )
        return None
    return WindowRule(calls, repeats)


def _warn_limits(warn_at: int | None, rules: list[ToolRule], checker: _Checker) -> None:
    """A rule's own ``warn_at`` must be below its own ``max_repeats`` (an error: the
    warning could never be given); the global ``warn_at`` at or above a rule's
    ``max_repeats`` (that rule's tools are denied before they would be warned) is a
    warning. The global maxRepeats is not in the file (``-m``, the environment): a
    ``warn_at`` at or above it only means no call is ever warned."""
    for rule in rules:
        if rule.max_repeats is None:
            continue
        if rule.warn_at is not None and rule.warn_at >= rule.max_repeats:
            checker.error(
                "tools",
                rule.index,
                "warn_at",
                f"warn_at ({rule.warn_at}) must be below this rule's max_repeats "
                f"({rule.max_repeats}): its calls are denied before they would be warned",
            )
        elif rule.warn_at is None and warn_at is not None and warn_at >= rule.max_repeats:
            checker.error(
                "tools",
                rule.index,
                "max_repeats",
                f"the global warn_at ({warn_at}) is not below this rule's max_repeats "
                f"({rule.max_repeats}): its tools are never warned (give the rule its own "
                "warn_at)",
                warning=True,
            )


def _result_ignore(document: dict[str, Any], checker: _Checker) -> tuple[str, ...]:
    """The patterns results are cleaned of: the defaults (unless
    ``result_ignore_defaults = false``), then ``result_ignore``; each must compile."""
    keep = checker.boolean("", 0, document, "result_ignore_defaults")
    patterns = DEFAULT_IGNORE if keep is not False else ()
    raw = document.get("result_ignore", [])
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        checker.error(
            "", 0, "result_ignore", "result_ignore must be an array of regular expressions"
        )
        return patterns
    for position, pattern in enumerate(raw):
        problem = pattern_error(pattern)
        if problem is not None:
            checker.error(
                "",
                0,
                "result_ignore",
                f"result_ignore[{position}] {problem}",
            )
    return patterns + tuple(raw)


def _table(
    document: dict[str, Any], name: str, allowed: tuple[str, ...], checker: _Checker
) -> dict[str, Any] | None:
    """``[name]`` with its keys checked, or None: absent, or not a table (said)."""
    if name not in document:
        return None
    table = document[name]
    if not isinstance(table, dict):
        checker.error("", 0, name, f"{name} must be a table ([{name}]), not {_show(table)}")
        return None
    checker.keys(name, 0, table, allowed)
    return table


def _rules(entries: Any, checker: _Checker) -> list[ToolRule]:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        checker.error("", 0, "tools", "tools must be an array of tables ([[tools]] entries)")
        return []
    rules = []
    for index, entry in enumerate(entries):
        checker.keys("tools", index, entry, RULE_KEYS)
        raw = entry.get("match")
        patterns: tuple[str, ...] = ()
        if raw is None:
            checker.error(
                "tools", index, "", "a [[tools]] rule needs match (a glob or a list of globs)"
            )
        elif isinstance(raw, str):
            patterns = (raw,)
        elif isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
            patterns = tuple(raw)
        else:
            checker.error(
                "tools", index, "match", "match must be a glob or a non-empty list of globs"
            )
        if any(not pattern for pattern in patterns):
            checker.error("tools", index, "match", "match holds an empty glob")
        limit = checker.integer("tools", index, entry, "max_repeats", 1)
        exempt = entry.get("exempt", False)
        if not isinstance(exempt, bool):
            checker.error(
                "tools", index, "exempt", f"exempt must be true or false, not {_show(exempt)}"
            )
            exempt = False
        progress = checker.boolean("tools", index, entry, "progress")
        warn_at = checker.integer("tools", index, entry, "warn_at", 1)
        if exempt and "warn_at" in entry:
            checker.error("tools", index, "warn_at", "an exempt rule is never denied: drop warn_at")
        texts, paths = _args_ignore(entry, index, checker)
        progress_max = checker.integer("tools", index, entry, "progress_max", 2, MAX_PROGRESS_MAX)
        same_result = checker.boolean("tools", index, entry, "same_result")
        for key in ("progress_max", "same_result"):
            if exempt and key in entry:
                checker.error("tools", index, key, f"an exempt rule is never denied: drop {key}")
        if exempt and "args_ignore" in entry:
            checker.error(
                "tools", index, "args_ignore", "an exempt rule is never denied: drop args_ignore"
            )
        if exempt and "max_repeats" in entry:
            checker.error(
                "tools", index, "max_repeats", "an exempt rule is never denied: drop max_repeats"
            )
        elif exempt and progress:
            checker.error(
                "tools", index, "progress", "an exempt rule is never denied: drop progress"
            )
        elif (
            not exempt
            and "max_repeats" not in entry
            and "progress" not in entry
            and "warn_at" not in entry
            and "args_ignore" not in entry
            and "progress_max" not in entry
            and "same_result" not in entry
            and set(entry) <= set(RULE_KEYS)
        ):
            checker.error(
                "tools",
                index,
                "",
                "a [[tools]] rule needs max_repeats or exempt = true, or progress, warn_at, "
                "args_ignore, progress_max or same_result",
            )
        line = checker.locator.tables.get(("tools", index))
        rules.append(
            ToolRule(
                patterns,
                limit,
                exempt,
                index,
                line,
                progress,
                warn_at=warn_at,
                args_ignore=texts,
                ignore_paths=paths,
                progress_max=progress_max,
                same_result=same_result,
            )
        )
    return rules


def _args_ignore(
    entry: dict[str, Any], index: int, checker: _Checker
) -> tuple[tuple[str, ...], tuple[tuple[str | int | None, ...], ...]]:
    """A rule's ``args_ignore``: its paths as written and parsed (``policy/args_paths.py``);
    every bad one located at its string in the file."""
    if "args_ignore" not in entry:
        return (), ()
    from .args_paths import MAX_ARGS_IGNORE, PathError, parse_path

    raw = entry["args_ignore"]
    if not isinstance(raw, list) or not raw:
        what = "an empty array" if isinstance(raw, list) else _show(raw)
        checker.error(
            "tools",
            index,
            "args_ignore",
            f'args_ignore must be a non-empty array of JSON paths ("$.timestamp"), not {what}',
        )
        return (), ()
    if len(raw) > MAX_ARGS_IGNORE:
        checker.error(
            "tools",
            index,
            "args_ignore",
            f"args_ignore names {len(raw)} paths; at most {MAX_ARGS_IGNORE} are allowed",
        )
        return (), ()
    texts, paths = [], []
    for position, text in enumerate(raw):
        if not isinstance(text, str):
            checker.element_error(
                "tools",
                index,
                "args_ignore",
                position,
                None,
                f"args_ignore[{position}] must be a string (a JSON path), not {_show(text)}",
            )
            continue
        try:
            path = parse_path(text)
        except PathError as exc:
            checker.element_error(
                "tools",
                index,
                "args_ignore",
                position,
                exc.position,  # the path's character: that many columns after the quote
                f"args_ignore[{position}] {js_string(text)} {exc.reason}"
                + ("" if exc.position is None else f" (character {exc.position})"),
            )
            continue
        if text in texts:
            checker.element_error(
                "tools",
                index,
                "args_ignore",
                position,
                None,
                f"args_ignore[{position}] {js_string(text)} is named twice",
            )
            continue
        texts.append(text)
        paths.append(path)
    return tuple(texts), tuple(paths)


def _covers(earlier: str, later: str) -> bool:
    """Whether every name ``later`` matches is matched by ``earlier`` (sound, not complete:
    ``earlier`` may use only ``*`` as a wildcard, ``later`` no ``[...]`` set)."""
    if earlier == later:
        return True
    if "?" in earlier or "[" in earlier or "[" in later:
        return False
    from .model import glob_match

    return glob_match(later, earlier)


def _shadowed(rules: list[ToolRule], checker: _Checker) -> None:
    for position, rule in enumerate(rules):
        if not rule.patterns:
            continue
        earlier = [(r, p) for r in rules[:position] for p in r.patterns]
        covering = []
        for pattern in rule.patterns:
            by = next((r for r, p in earlier if _covers(p, pattern)), None)
            if by is None:
                break
            covering.append(by)
        else:
            first = min(covering, key=lambda r: r.index)
            where = f"line {first.line}" if first.line else f"rule {first.index + 1}"
            checker.error(
                "tools",
                position,
                "match",
                f"this rule can never match: the earlier rule at {where} "
                f"({', '.join(first.patterns)}) matches every tool it names",
                warning=True,
            )


MAX_POLICY_BYTES = 1 << 20
"""The largest policy file read (1 MiB; real ones are a few hundred bytes). The hook
reads the policy before every tool call, so a path naming ``/dev/zero`` or a huge
file must be a prompt error, never an unbounded read."""


def read_policy_bytes(path: str, limit: int = MAX_POLICY_BYTES) -> bytes:
    """The bytes of the policy file at ``path`` (``small_file.read_small_file``), else
    ``PolicyError`` naming the file."""
    try:
        return read_small_file(path, "policy file", limit)
    except SmallFileError as exc:
        unopened = exc.unreadable or os.path.isdir(path)  # a directory is no file to read
        raise PolicyError([Problem(path, None, None, str(exc))], unopened) from None


def load_policy(path: str) -> Policy:
    """Read and validate one policy file (a ``pyproject.toml`` is read at
    ``[tool.loop-brake]``); ``PolicyError`` with located errors, or for a file that
    cannot be read."""
    return check_policy(path)[0]


def check_policy(path: str) -> tuple[Policy, list[Problem]]:
    """The policy and its warnings (check-config); ``PolicyError`` for any error."""
    data = read_policy_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PolicyError([Problem(path, line, None, "not UTF-8")]) from None
    prefix = (
        PYPROJECT_TABLE if path.replace("\\", "/").rsplit("/", 1)[-1] == "pyproject.toml" else None
    )
    return parse_policy(text, path, prefix)
