"""``args_ignore``: the JSON paths a policy removes from a call's arguments before hashing.

Some loops repeat a call whose arguments differ only by noise (a timestamp, a
nonce, a request id, a cursor): the exact hash never sees two equal calls. A
``[[tools]]`` rule may name such argument paths; for the tools it matches, the
call is hashed as ``sha256(tool + "\\n" + canonical_json(arguments without those
paths))``, a *policy hash*: it is no longer the Node plugin's hash of the call,
and every verdict that counts one says so (``policyHash``). A tool whose rule
has no ``args_ignore`` is hashed exactly as before.

The paths are a small subset of JSONPath (RFC 9535), written from the root ``$``:

* ``.name``: an object member (letters, digits, ``_`` and ``-``; any other name is
  quoted: ``["x.y"]`` as a JSON string, or ``['x.y']`` with ``\\'`` and ``\\\\``);
* ``[N]``: an array element (0-based, no sign);
* ``[*]`` or ``.*``: every element of an array or every member of an object.

Not supported: recursive descent (``..``), filters (``[?...]``), slices
(``[1:3]``), unions (``[0,1]``), negative indices, and ``$`` alone.

What is removed: every value any of the rule's paths reaches in the arguments as
given (paths are matched against the original, then all their values removed
together: an object loses the member, an array the element, the elements after it
closing up). A path that reaches nothing (a missing member, an index past the end,
a member of an array, an element of an object) removes nothing. Arguments are
never changed in place: ``strip`` returns a new value sharing what it did not
touch. Core: no click, no rich.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_ARGS_IGNORE",
    "MAX_PATH_LENGTH",
    "MAX_PATH_STEPS",
    "WILDCARD",
    "PathError",
    "parse_path",
    "strip",
]

MAX_ARGS_IGNORE = 32
"""The most paths one rule may name (each call of its tools walks them all)."""
MAX_PATH_STEPS = 32
"""The most steps one path may take below ``$``."""
MAX_PATH_LENGTH = 512
"""The longest path text, in characters."""

WILDCARD = None
"""The step ``[*]`` / ``.*``; a member step is its name (str), an element step its index (int)."""


class PathError(ValueError):
    """A path outside the supported subset; ``position`` is the 1-based character."""

    def __init__(self, message: str, position: int | None = None) -> None:
        self.reason = message
        self.position = position
        super().__init__(message if position is None else f"{message} at character {position}")


def _name_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


def parse_path(text: str) -> tuple[str | int | None, ...]:
    """The steps of one path (see the module docstring), or ``PathError``."""
    if not text:
        raise PathError("is empty")
    if len(text) > MAX_PATH_LENGTH:
        raise PathError(f"is longer than {MAX_PATH_LENGTH} characters")
    if text[0] != "$":
        raise PathError('must start with "$" (the arguments)', 1)
    steps: list[str | int | None] = []
    at, end = 1, len(text)
    while at < end:
        char = text[at]
        if char == ".":
            at += 1
            if at < end and text[at] == ".":
                raise PathError('recursive descent ("..") is not supported', at)
            if at < end and text[at] == "*":
                steps.append(WILDCARD)
                at += 1
                continue
            start = at
            while at < end and _name_char(text[at]):
                at += 1
            if at == start:
                raise PathError(
                    'expected a member name after "." (quote other names: ["x.y"])', at + 1
                )
            steps.append(text[start:at])
        elif char == "[":
            step, at = _bracket(text, at)
            steps.append(step)
        else:
            raise PathError(f'unexpected "{char}" (expected "." or "[")', at + 1)
        if len(steps) > MAX_PATH_STEPS:
            raise PathError(f"has more than {MAX_PATH_STEPS} steps")
    if not steps:
        raise PathError('names the whole arguments: name a member or an element below "$"')
    return tuple(steps)


def _bracket(text: str, at: int) -> tuple[str | int | None, int]:
    """The step of the ``[...]`` starting at ``text[at]``, and where it ends."""
    start, end = at, len(text)
    at += 1
    if at >= end:
        raise PathError('unclosed "["', start + 1)
    char = text[at]
    if char == "*":
        step: str | int | None = WILDCARD
        at += 1
    elif char.isdigit():
        first = at
        while at < end and text[at].isdigit():
            at += 1
        digits = text[first:at]
        if not digits.isascii():
            raise PathError("an index is written with the digits 0-9", first + 1)
        if len(digits) > 1 and digits[0] == "0":
            raise PathError("an index has no leading zero", first + 1)
        if len(digits) > 9:
            raise PathError("an index has at most 9 digits", first + 1)
        step = int(digits)
    elif char in "\"'":
        step, at = _quoted(text, at)
    elif char == "-":
        raise PathError("negative indices are not supported", at + 1)
    elif char == "?":
        raise PathError("filters ([?...]) are not supported", at + 1)
    else:
        raise PathError('expected an index, "*" or a quoted name after "["', at + 1)
    if at >= end:
        raise PathError('unclosed "["', start + 1)
    if text[at] == ":":
        raise PathError("slices ([a:b]) are not supported", at + 1)
    if text[at] == ",":
        raise PathError("unions ([a,b]) are not supported", at + 1)
    if text[at] != "]":
        raise PathError('expected "]"', at + 1)
    return step, at + 1


def _quoted(text: str, at: int) -> tuple[str, int]:
    """A quoted member name starting at ``text[at]`` (its quote), and the index after it.
    Double quotes: a JSON string. Single quotes: ``\\'`` and ``\\\\`` are the escapes."""
    quote, start, end = text[at], at, len(text)
    at += 1
    while at < end and text[at] != quote:
        at += 2 if text[at] == "\\" else 1
    if at >= end:
        raise PathError("unclosed quoted name", start + 1)
    body = text[start + 1 : at]
    if quote == '"':
        from ..canonical import JSONInputError, parse_json

        try:
            name = parse_json('"' + body + '"')
        except JSONInputError:
            raise PathError("not a valid JSON string", start + 1) from None
    else:
        parts, i = [], 0
        while i < len(body):
            if body[i] == "\\":
                if i + 1 >= len(body) or body[i + 1] not in "'\\":
                    raise PathError("in '...', only \\' and \\\\ are escapes", start + 2 + i)
                parts.append(body[i + 1])
                i += 2
            else:
                parts.append(body[i])
                i += 1
        name = "".join(parts)
    return name, at + 1


def strip(value: Any, paths: tuple[tuple[str | int | None, ...], ...]) -> Any:
    """``value`` without what ``paths`` reach (see the module docstring); ``value`` itself
    when they reach nothing. Never changes ``value``."""
    if value.__class__ is dict:
        return _strip_object(value, paths)
    if value.__class__ is list or value.__class__ is tuple:
        return _strip_array(value, paths)
    return value


def _strip_object(value: dict[str, Any], paths: tuple[tuple[Any, ...], ...]) -> Any:
    removed: set[str] | None = None
    below: dict[str, list[tuple[Any, ...]]] | None = None
    for path in paths:
        step = path[0]
        if step is WILDCARD:
            keys: Any = value
        elif step.__class__ is str and step in value:
            keys = (step,)
        else:
            continue
        if len(path) == 1:
            removed = set(keys) if removed is None else removed.union(keys)
            continue
        if below is None:
            below = {}
        for key in keys:
            below.setdefault(key, []).append(path[1:])
    if below is not None:
        changed = {}
        for key, deeper in below.items():
            item = value[key]
            stripped = strip(item, tuple(deeper))
            if stripped is not item:
                changed[key] = stripped
        if changed:
            return {
                key: changed.get(key, item)
                for key, item in value.items()
                if removed is None or key not in removed
            }
    if removed is None:
        return value  # nothing reached: the same object, hashed as before
    return {key: item for key, item in value.items() if key not in removed}


def _strip_array(value: list[Any] | tuple[Any, ...], paths: tuple[tuple[Any, ...], ...]) -> Any:
    removed: set[int] | None = None
    below: dict[int, list[tuple[Any, ...]]] | None = None
    size = len(value)
    for path in paths:
        step = path[0]
        if step is WILDCARD:
            indices: Any = range(size)
        elif step.__class__ is int and step < size:
            indices = (step,)
        else:
            continue
        if len(path) == 1:
            removed = set(indices) if removed is None else removed.union(indices)
            continue
        if below is None:
            below = {}
        for index in indices:
            below.setdefault(index, []).append(path[1:])
    if below is not None:
        changed = {}
        for index, deeper in below.items():
            item = value[index]
            stripped = strip(item, tuple(deeper))
            if stripped is not item:
                changed[index] = stripped
        if changed:
            return [
                changed.get(index, item)
                for index, item in enumerate(value)
                if removed is None or index not in removed
            ]
    if removed is None:
        return value
    return [item for index, item in enumerate(value) if index not in removed]
