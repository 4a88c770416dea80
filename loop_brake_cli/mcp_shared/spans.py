"""Where a value sits in a JSON text, as byte offsets, so its bytes can be reused as sent.

The proxy forwards the elements of a batch and echoes a request's ``id`` with
the client's own bytes: parsing and re-serialising would turn the id
``12345678901234567891`` into ``1.2345678901234567e+19`` and an argument
``9007199254740993`` into ``9007199254740992`` (numbers are doubles here, as in
JavaScript). These functions are only called on text that ``parse_json`` has
accepted, so they find boundaries without validating again: strings (and the
brackets and quotes escaped inside them) are skipped whole, and nesting is
followed by counting brackets.
"""

from __future__ import annotations

import re

from ..core.canonical import parse_json

__all__ = ["array_element_spans", "member_span", "value_end"]

Span = tuple[int, int]

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET_OR_QUOTE = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[ \t\r\n,\]}]")
_WHITESPACE = re.compile(rb"[ \t\r\n]*")
_QUOTE, _OPENERS = ord('"'), (ord("["), ord("{"))


def _skip(data: bytes, at: int) -> int:
    return _WHITESPACE.match(data, at).end()  # type: ignore[union-attr]


def _string_end(data: bytes, at: int) -> int:
    return _STRING.match(data, at).end()  # type: ignore[union-attr]


def value_end(data: bytes, start: int) -> int:
    """The offset just past the JSON value that begins at ``start``."""
    first = data[start]
    if first == _QUOTE:
        return _string_end(data, start)
    if first in _OPENERS:
        depth = 0
        at = start
        while True:
            found = _BRACKET_OR_QUOTE.search(data, at)
            assert found is not None, "unbalanced brackets in validated JSON"
            char = data[found.start()]
            if char == _QUOTE:
                at = _string_end(data, found.start())
                continue
            depth += 1 if char in _OPENERS else -1
            at = found.end()
            if depth == 0:
                return at
    found = _SCALAR_END.search(data, start)
    return found.start() if found else len(data)


def array_element_spans(data: bytes, start: int = 0) -> list[Span]:
    """The span of each element of the array that begins at ``start`` (after whitespace)."""
    at = _skip(data, start) + 1  # past "["
    spans: list[Span] = []
    at = _skip(data, at)
    if data[at : at + 1] == b"]":
        return spans
    while True:
        end = value_end(data, at)
        spans.append((at, end))
        at = _skip(data, end)
        if data[at : at + 1] != b",":
            return spans
        at = _skip(data, at + 1)


def member_span(data: bytes, key: str, start: int = 0) -> Span | None:
    """The span of the value of member ``key`` of the object beginning at ``start``;
    for a key given twice the last one, as the parser keeps it. None if absent."""
    at = _skip(data, start) + 1  # past "{"
    found: Span | None = None
    while True:
        at = _skip(data, at)
        if data[at] != _QUOTE:  # "}": the end of the object
            return found
        key_end = _string_end(data, at)
        raw_key = data[at:key_end]
        name = parse_json(raw_key) if b"\\" in raw_key else raw_key[1:-1].decode("utf-8")
        at = _skip(data, _skip(data, key_end) + 1)  # past ":"
        end = value_end(data, at)
        if name == key:
            found = (at, end)
        at = _skip(data, end)
        if data[at : at + 1] == b",":
            at += 1
