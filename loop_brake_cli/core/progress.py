"""The result digest of the progress mode: what a tool returned, as 32 bytes.

A policy with ``progress = true`` lets a streak of identical calls restart when
the result changes (``streak.result_step``). Results carry noise that changes on
every call without meaning progress, so before hashing every string in a result
is normalised line by line: each match of an ignore pattern is deleted. The
defaults (``DEFAULT_IGNORE``) were picked from real Codex ``exec_command`` /
``write_stdin`` output (``docs/policies.md`` shows which of its polls they make
equal); a policy adds patterns (``result_ignore``) or replaces them
(``result_ignore_defaults = false``).

A pattern runs on every result before the hook lets the agent go on, so none
may take more than linear time. The defaults are fixed Python patterns that
cannot backtrack without bound; a policy's own patterns are RE2 syntax, matched
by RE2 (the ``re2`` extra, google-re2), whose time is linear in the text for
every pattern: ``(a+)+$`` cannot stall a hook. Without RE2 installed such a
pattern is a policy error (``pattern_error``), never a backtracking fallback.
RE2 reads a repetition count it cannot take (``x{99999999999}``) as literal
text, so counts above ``MAX_REPEAT`` are refused here first.

The canonical form, a contract like the call hash: ``sha256(canonical_json(v))``
where ``v`` is the result with every string normalised, and an MCP tool result
(an object with an array ``content`` and no other keys than ``isError``,
``structuredContent`` and ``_meta``) reduced to ``{"content", "isError"}``
(``structuredContent`` repeats the content, ``_meta`` carries timings).
A string result is hashed as a JSON string, so ``"1"`` and ``1`` differ.

The result itself is never kept, printed or put in an exception: only its digest
leaves this module.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .canonical import JSONInputError, canonical_json, utf8

__all__ = [
    "DEFAULT_IGNORE",
    "DIGEST_HEX",
    "MAX_REPEAT",
    "compile_ignore",
    "digest_of_hex",
    "normalise",
    "pattern_error",
    "result_digest",
    "result_error",
]

DEFAULT_IGNORE: tuple[str, ...] = (
    # Codex unified exec (exec_command, write_stdin): a fresh id for every chunk
    r"^Chunk ID: \S+$",
    # Codex: how long the call waited for output
    r"^Wall time: [0-9.]+ seconds$",
    # ISO 8601 date-times: 2026-05-11T11:43:08.123Z, 2026-05-11 11:43:08+02:00
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    # times of day: 11:43:08, 11:43:08.120
    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
    # elapsed times with a fraction or a sub-second unit: 3.78s, 1.2 seconds, 1316ms
    r"\b\d+\.\d+ ?s(?:ec(?:ond)?s?)?\b|\b\d+(?:\.\d+)? ?(?:ms|us|µs|ns)\b",
    # durations in JSON text (Codex's older output: "duration_seconds":2.2)
    r'"(?:duration|elapsed)(?:_seconds|_ms|Seconds|Ms)?"\s*:\s*[0-9.eE+-]+',
    # process ids: pid 4242, PID: 4242, pid=4242
    r"(?i)\bpid\b[\s:=#]*\d+",
)
"""What every result is cleaned of before hashing, unless the policy says
``result_ignore_defaults = false``. Each is a Python regular expression applied, in
order, to each line of every string in the result (``^``/``$`` are the line's
ends); every match is deleted."""

DIGEST_HEX = re.compile(r"[0-9a-fA-F]{64}")
"""A ``resultDigest`` as a host sends it: the sha256 in hex."""


MAX_REPEAT = 1000
"""The largest repetition count a ``result_ignore`` pattern may use (RE2's own limit)."""

_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Linear:
    """A policy's own pattern, matched by RE2 (linear time). RE2 reads UTF-8, which a
    string with a lone surrogate has no form in: such a string is matched with the
    surrogate as U+FFFD, the character it is hashed as (``canonical.utf8``)."""

    __slots__ = ("_regexp",)

    def __init__(self, regexp: Any) -> None:
        self._regexp = regexp

    def search(self, text: str) -> Any:
        return self._regexp.search(_encodable(text))

    def sub(self, repl: str, text: str) -> str:
        return self._regexp.sub(repl, _encodable(text))


def _encodable(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def _counts(pattern: str) -> Iterator[str]:
    """The repetition counts (``{n}``, ``{n,}``, ``{n,m}``) of a pattern, as digits;
    escaped characters and character classes are passed over."""
    i, end = 0, len(pattern)
    while i < end:
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            j = i + 1
            j += pattern.startswith("^", j)
            j += pattern.startswith("]", j)
            while j < end and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if char == "{" and (found := _COUNT.match(pattern, i)):
            yield from (digits for digits in found.groups() if digits)
        i += 1


def _re2() -> Any:
    try:
        import re2  # the ``re2`` extra (google-re2)
    except ImportError:
        return None
    return re2


def _compile_re2(pattern: str) -> Any:
    """The RE2 form of one of a policy's patterns; ``ValueError`` saying why not."""
    for digits in _counts(pattern):
        if len(digits) > 4 or int(digits) > MAX_REPEAT:
            raise ValueError(f"has a repetition count above {MAX_REPEAT} ({digits[:12]})")
    re2 = _re2()
    if re2 is None:
        raise ValueError(
            "needs the RE2 engine, which matches a policy's own patterns in linear time: "
            "pip install 'loop-brake-cli[re2]'"
        )
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own copy of the error on stderr
    try:
        return re2.compile("(?m)" + pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "not valid"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        # RE2 quotes the part of the pattern at fault after ": "; never quoted here
        reason = str(reason).split(": ", 1)[0]
        raise ValueError(f"is not a valid regular expression (RE2 syntax): {reason}") from None
    except (TypeError, UnicodeEncodeError):  # a lone surrogate in the pattern
        raise ValueError("is not a valid regular expression: not valid Unicode text") from None


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``result_ignore`` pattern (a predicate: "has a
    repetition count above 1000 (…)"), or None; the loader locates it. The defaults
    always can. The pattern itself is never quoted."""
    if pattern in DEFAULT_IGNORE:
        return None
    try:
        _compile_re2(pattern)
    except ValueError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=32)
def compile_ignore(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    """Each pattern compiled, ``^``/``$`` matching at line ends: a default by Python's
    ``re``, any other by RE2 (``_Linear``). ``ValueError`` for one that cannot be
    (``pattern_error`` says why; the policy loader has said it already)."""
    return tuple(
        re.compile(pattern, re.MULTILINE)
        if pattern in DEFAULT_IGNORE
        else _Linear(_compile_re2(pattern))
        for pattern in patterns
    )


def _clean(text: str, ignore: tuple[Any, ...]) -> str:
    for pattern in ignore:
        if pattern.search(text) is None:  # the common case: one scan, no split
            continue
        if "\n" in text:  # line by line: a pattern never joins or deletes lines
            text = "\n".join(pattern.sub("", line) for line in text.split("\n"))
        else:
            text = pattern.sub("", text)
    return text


def normalise(result: Any, ignore: tuple[str, ...] = DEFAULT_IGNORE) -> Any:
    """The result as it is hashed: strings cleaned, an MCP result reduced to
    ``content`` and ``isError``. For tests and ``docs/policies.md``; never printed."""
    patterns = compile_ignore(tuple(ignore))
    if (
        result.__class__ is dict
        and isinstance(result.get("content"), list)
        and not set(result) - {"content", "isError", "structuredContent", "_meta"}
    ):
        result = {"content": result["content"], "isError": result.get("isError") is True}
    if not patterns:
        return result
    try:
        return _walk(result, patterns)
    except RecursionError:
        raise JSONInputError("not valid JSON: nested too deep") from None


def _walk(value: Any, ignore: tuple[Any, ...]) -> Any:
    cls = value.__class__
    if cls is str:
        return _clean(value, ignore)
    if cls is dict:
        return {key: _walk(item, ignore) for key, item in value.items()}
    if cls is list or cls is tuple:
        return [_walk(item, ignore) for item in value]
    return value


def result_digest(result: Any, ignore: tuple[str, ...] = DEFAULT_IGNORE) -> bytes:
    """sha256 (32 bytes) of the canonical form of ``result``, a parsed JSON value.

    ``ignore``: the policy's patterns (``Policy.result_ignore``). Raises
    ``canonical.JSONInputError`` or ``TypeError`` for a value that is not JSON; the
    message never quotes the result."""
    return hashlib.sha256(utf8(canonical_json(normalise(result, ignore)))).digest()


def result_error(result: Any) -> bool:
    """Whether a result says its call failed (the ``[same_error]`` rule's flag): an
    MCP ``CallToolResult`` with ``isError: true`` (the shape the Claude, Anthropic and
    MCP readers give a ``tool_result`` block or a response), or a JSON-RPC error as
    the MCP decoder passes it (``{"error": ...}`` alone). Anything else is no error:
    a format that records no flag never feeds the rule."""
    if result.__class__ is not dict:
        return False
    return result.get("isError") is True or (len(result) == 1 and "error" in result)


def digest_of_hex(text: Any) -> bytes | None:
    """A host's ``resultDigest`` (64 hex characters) as bytes, else None."""
    if text.__class__ is str and DIGEST_HEX.fullmatch(text):
        return bytes.fromhex(text)
    return None
