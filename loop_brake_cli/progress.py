"""The result digest of the progress mode: what a tool returned, as 32 bytes.

A policy with ``progress = true`` lets a streak of identical calls restart when
the result changes (``streak.result_step``). Results carry noise that changes on
every call without meaning progress, so before hashing every string in a result
is normalised line by line: each match of an ignore pattern is deleted. The
defaults (``DEFAULT_IGNORE``) were picked from real Codex ``exec_command`` /
``write_stdin`` output (``docs/policies.md`` shows which of its polls they make
equal); a policy adds patterns (``result_ignore``) or replaces them
(``result_ignore_defaults = false``).

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
from functools import lru_cache
from typing import Any

from .canonical import JSONInputError, canonical_json, utf8

__all__ = [
    "DEFAULT_IGNORE",
    "DIGEST_HEX",
    "compile_ignore",
    "digest_of_hex",
    "normalise",
    "result_digest",
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


@lru_cache(maxsize=32)
def compile_ignore(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """Each pattern compiled, ``^``/``$`` matching at line ends; ``re.error`` for one that
    does not compile (the policy loader says which)."""
    return tuple(re.compile(pattern, re.MULTILINE) for pattern in patterns)


def _clean(text: str, ignore: tuple[re.Pattern[str], ...]) -> str:
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


def _walk(value: Any, ignore: tuple[re.Pattern[str], ...]) -> Any:
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


def digest_of_hex(text: Any) -> bytes | None:
    """A host's ``resultDigest`` (64 hex characters) as bytes, else None."""
    if text.__class__ is str and DIGEST_HEX.fullmatch(text):
        return bytes.fromhex(text)
    return None
