"""The textual edit behind ``hook install``: one hook entry inserted into a
settings file's JSON text, every other character kept as it was.

A settings file is never parsed into Python values and written back: that
rewrote ``1e400`` as ``Infinity`` (which the agent's own parser rejects),
could not write a lone surrogate escape such as ``"\\udc00"``, failed on
integers longer than Python converts, and kept only the last of duplicate
keys. Instead the text is scanned once (``parse_document``: strict RFC 8259,
an explicit stack, so no recursion) into a tree of spans, and the new JSON is
inserted at one place:

* ``hooks.<Event>`` exists (an array): the entry is appended after its last
  element;
* ``hooks`` exists (an object) without the event: ``"<Event>": [entry]`` is
  added as its last member;
* no ``hooks``: ``"hooks": {"<Event>": [entry]}`` is added as the root's last
  member;
* an empty (or whitespace-only) file becomes a new document.

The inserted text follows the file's layout: the indentation and line ends of
the container's first child (tabs, four spaces, CRLF), the spacing after its
colons, or a single line where the container is written on one line.

``remove_hook_entries`` (``hook uninstall``) is the reverse edit: each of our
handlers is cut out of the text with the separator before it (or after it,
for a first child); a matcher group left without handlers goes with it, and
an event list left empty too. Every other byte stays.

What cannot be edited exactly is refused (``EditError``): text that is not
strict JSON (located by line and column), a root that is not an object, a
``hooks`` that is not an object or an event list that is not an array, a
duplicated ``hooks`` key or duplicated event key (which one the agent reads
depends on its parser), and nesting deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "EditError",
    "Member",
    "Node",
    "add_hook_entry",
    "parse_document",
    "remove_hook_entries",
]

MAX_DEPTH = 512
"""Deepest nesting accepted. Settings files are a few levels deep; Codex's
parser (serde_json) stops at 128 anyway."""

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = ("true", "false", "null")
_BLANK = " \t\n\r"


class EditError(Exception):
    """Settings text this will not edit; the message says why (never quoting values)."""


@dataclass(slots=True)
class Node:
    """One JSON value: its kind and its span ``text[start:end]``."""

    kind: str  # "object", "array", "string", "number", "true", "false", "null"
    start: int
    end: int = -1
    members: list[Member] = field(default_factory=list)  # an object's, in order
    items: list[Node] = field(default_factory=list)  # an array's, in order


@dataclass(slots=True)
class Member:
    """One ``"key": value`` of an object; ``start`` is the key's opening quote."""

    key: str
    start: int
    key_end: int
    value: Node


def _located(text: str, pos: int, message: str) -> EditError:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return EditError(f"is not valid JSON (line {line}, column {column}: {message})")


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _decode(token: str) -> str:
    return json.loads(token) if "\\" in token else token[1:-1]


def _string(text: str, pos: int) -> int:
    """The end of the string token at ``pos``."""
    match = _STRING.match(text, pos)
    if match is None:
        raise _located(
            text, pos, "a string with an unescaped control character, a bad escape or no end"
        )
    return match.end()


def _value_start(text: str, pos: int) -> tuple[Node, int]:
    """A scalar value (complete), or an opened container (``end`` -1) and the position
    after its bracket."""
    char = text[pos : pos + 1]
    if char == "{" or char == "[":
        return Node("object" if char == "{" else "array", pos), pos + 1
    if char == '"':
        end = _string(text, pos)
        return Node("string", pos, end), end
    match = _NUMBER.match(text, pos)
    if match is not None and match.end() > pos:
        return Node("number", pos, match.end()), match.end()
    for literal in _LITERALS:
        if text.startswith(literal, pos):
            return Node(literal, pos, pos + len(literal)), pos + len(literal)
    if not char:
        raise _located(text, pos, "the text ends where a value is expected")
    if pos == 0 and char == "\ufeff":
        raise _located(text, pos, "a byte order mark, which JSON parsers such as JSON.parse reject")
    raise _located(text, pos, "expected a value")


def _key(text: str, pos: int) -> tuple[str, int, int, int]:
    """The member key at ``pos``: (key, key start, key end, position of its value)."""
    if text[pos : pos + 1] != '"':
        raise _located(text, pos, "expected a string key")
    end = _string(text, pos)
    after = _skip(text, end)
    if text[after : after + 1] != ":":
        raise _located(text, after, "expected ':' after a key")
    return _decode(text[pos:end]), pos, end, _skip(text, after + 1)


def parse_document(text: str) -> Node:
    """The tree of spans of one strict JSON document; EditError, located, if it is not one."""
    pos = _skip(text, 0)
    stack: list[Node] = []
    pending: list[tuple[str, int, int]] = []  # the key awaiting its value, per open object
    while True:
        node, pos = _value_start(text, pos)
        if node.end < 0:  # an opened container
            if len(stack) >= MAX_DEPTH:
                raise EditError(f"is nested deeper than {MAX_DEPTH} levels")
            pos = _skip(text, pos)
            if text[pos : pos + 1] == ("}" if node.kind == "object" else "]"):
                node.end = pos = pos + 1
            else:
                stack.append(node)
                if node.kind == "object":
                    key, start, key_end, pos = _key(text, pos)
                    pending.append((key, start, key_end))
                continue
        while True:  # attach the finished ``node``; close what it finishes
            if not stack:
                end = _skip(text, pos)
                if end != len(text):
                    raise _located(text, end, "more text after the JSON value")
                return node
            parent = stack[-1]
            if parent.kind == "object":
                key, start, key_end = pending[-1]
                parent.members.append(Member(key, start, key_end, node))
            else:
                parent.items.append(node)
            pos = _skip(text, pos)
            char = text[pos : pos + 1]
            closer = "}" if parent.kind == "object" else "]"
            if char == ",":
                pos = _skip(text, pos + 1)
                if parent.kind == "object":
                    key, start, key_end, pos = _key(text, pos)
                    pending[-1] = (key, start, key_end)
                break
            if char != closer:
                raise _located(text, pos, f"expected ',' or '{closer}'")
            parent.end = pos = pos + 1
            stack.pop()
            if parent.kind == "object":
                pending.pop()
            node = parent


def _member(node: Node, key: str, where: str, unique: bool = True) -> Node | None:
    """The value of ``key`` in an object; a duplicated key is refused when ``unique``
    (otherwise the last one wins, as JSON.parse and Python read it)."""
    found = [member.value for member in node.members if member.key == key]
    if len(found) > 1 and unique:
        raise EditError(
            f"has {len(found)} {where} keys: which one the agent reads depends on its JSON "
            "parser; merge them into one"
        )
    return found[-1] if found else None


def installed(text: str, groups: Node, is_ours: Callable[[str], bool]) -> bool:
    """Whether a handler in the event's matcher groups already runs loop-brake."""
    for group in groups.items:
        handlers = _member(group, "hooks", "", unique=False) if group.kind == "object" else None
        for handler in handlers.items if handlers is not None and handlers.kind == "array" else ():
            command = (
                _member(handler, "command", "", unique=False) if handler.kind == "object" else None
            )
            if command is not None and command.kind == "string":
                if is_ours(_decode(text[command.start : command.end])):
                    return True
    return False


@dataclass(frozen=True)
class _Layout:
    newline: str | None  # None: the container is written on one line
    child_indent: str  # before each child, after the line end
    unit: str  # one level of indentation
    colon: str  # between a key and its value


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _children(node: Node) -> list[tuple[int, int]]:
    """The spans of a container's children: a member from its key to its value's end."""
    if node.kind == "object":
        return [(member.start, member.value.end) for member in node.members]
    return [(item.start, item.end) for item in node.items]


def _first_child(node: Node) -> int | None:
    children = _children(node)
    return children[0][0] if children else None


def _colon(text: str, node: Node, fallback: str) -> str:
    if node.kind == "object" and node.members:
        member = node.members[0]
        return text[member.key_end : member.value.start]
    return fallback


def _layout(text: str, node: Node, root: Node) -> _Layout:
    """How the file lays out ``node``'s children (or, if it has none, the root's)."""
    own = _line_indent(text, node.start)
    root_first = _first_child(root)
    root_prefix = text[root.start + 1 : root_first] if root_first is not None else "\n  "
    unit = root_prefix[root_prefix.rfind("\n") + 1 :] if "\n" in root_prefix else "  "
    colon = _colon(text, node, _colon(text, root, ": "))
    first = _first_child(node)
    if first is None:
        multiline = "\n" in root_prefix
        newline = "\r\n" if "\r\n" in root_prefix else "\n"
        return _Layout(newline if multiline else None, own + (unit or "  "), unit or "  ", colon)
    prefix = text[node.start + 1 : first]
    if "\n" not in prefix:
        return _Layout(None, "", unit, colon)
    child = prefix[prefix.rfind("\n") + 1 :]
    if child.startswith(own) and len(child) > len(own):
        unit = child[len(own) :]
    return _Layout("\r\n" if "\r\n" in prefix else "\n", child, unit or "  ", colon)


def _comma(layout: _Layout) -> str:
    """Between items on one line: ``", "`` where the file writes ``": "``, else ``","``."""
    return ", " if layout.colon.endswith(" ") else ","


def _render(value: Any, layout: _Layout, key: str | None) -> str:
    """``value`` (as a member ``key`` if given) in the layout, starting at the child's
    indentation and ending without a line end."""
    head = "" if key is None else json.dumps(key, ensure_ascii=False) + layout.colon
    if layout.newline is None:
        body = json.dumps(value, ensure_ascii=False, separators=(_comma(layout), layout.colon))
        return head + body
    body = json.dumps(value, ensure_ascii=False, indent=layout.unit, separators=(",", layout.colon))
    return head + body.replace("\n", layout.newline + layout.child_indent)


def _insert(text: str, node: Node, root: Node, value: Any, key: str | None) -> str:
    """``text`` with one more child (member ``key``, or array element) at the end of
    ``node``; nothing else changes but the whitespace inside an empty container."""
    layout = _layout(text, node, root)
    rendered = _render(value, layout, key)
    children = _children(node)
    if not children:
        if layout.newline is None:
            inside = rendered
        else:
            own = _line_indent(text, node.start)
            inside = layout.newline + layout.child_indent + rendered + layout.newline + own
        return text[: node.start + 1] + inside + text[node.end - 1 :]
    last = children[-1][1]
    if layout.newline is None:
        # one line: the separator the file uses between its first two children
        separator = text[children[0][1] : children[1][0]] if len(children) > 1 else _comma(layout)
        return text[:last] + separator + rendered + text[last:]
    return text[:last] + "," + layout.newline + layout.child_indent + rendered + text[last:]


def add_hook_entry(
    text: str, event: str, entry: dict[str, Any], is_ours: Callable[[str], bool]
) -> str | None:
    """``text`` with ``entry`` added to ``hooks.<event>``; None if a handler for which
    ``is_ours`` holds is already there. Raises EditError (its message follows the
    file's name: "is not valid JSON (line 3, column 7: ...)")."""
    if not text.strip(_BLANK):
        return json.dumps({"hooks": {event: [entry]}}, indent=2, ensure_ascii=False) + "\n"
    root = parse_document(text)
    if root.kind != "object":
        raise EditError("is not a JSON object")
    hooks = _member(root, "hooks", '"hooks"')
    if hooks is None:
        return _insert(text, root, root, {event: [entry]}, "hooks")
    if hooks.kind != "object":
        raise EditError('has a "hooks" that is not an object')
    groups = _member(hooks, event, f'"hooks.{event}"')
    if groups is None:
        return _insert(text, hooks, root, [entry], event)
    if groups.kind != "array":
        raise EditError(f'has a "hooks.{event}" that is not a list')
    if installed(text, groups, is_ours):
        return None
    return _insert(text, groups, root, entry, None)


def _cut(text: str, node: Node, index: int) -> str:
    """``text`` without ``node``'s child ``index`` (a member or an element) and one
    separator beside it; an only child leaves the container empty (``[]``, ``{}``)."""
    children = _children(node)
    start, end = children[index]
    if len(children) == 1:
        return text[: node.start + 1] + text[node.end - 1 :]
    if index > 0:
        return text[: children[index - 1][1]] + text[end:]
    return text[:start] + text[children[1][0] :]


def _our_handler(
    text: str, hooks: Node, events: tuple[str, ...], is_ours: Callable[[str], bool]
) -> tuple[Node, int] | None:
    """The container and index of the first thing to cut for one of our handlers: the
    handler, or its group when it is the group's only handler, or the event member
    when that group is the event's only group."""
    for index, member in enumerate(hooks.members):
        groups = member.value
        if member.key not in events or groups.kind != "array":
            continue
        for group_index, group in enumerate(groups.items):
            handlers = _member(group, "hooks", "", unique=False) if group.kind == "object" else None
            if handlers is None or handlers.kind != "array":
                continue
            for handler_index, handler in enumerate(handlers.items):
                command = (
                    _member(handler, "command", "", unique=False)
                    if handler.kind == "object"
                    else None
                )
                if command is None or command.kind != "string":
                    continue
                if not is_ours(_decode(text[command.start : command.end])):
                    continue
                if len(handlers.items) > 1:
                    return handlers, handler_index
                if len(groups.items) > 1:
                    return groups, group_index
                return hooks, index
    return None


def remove_hook_entries(
    text: str, events: tuple[str, ...], is_ours: Callable[[str], bool]
) -> str | None:
    """``text`` without our handlers in ``hooks.<event>`` for each of ``events``; None if
    there is none. Raises EditError as ``add_hook_entry`` does."""
    if not text.strip(_BLANK):
        return None
    changed = False
    while True:
        root = parse_document(text)
        if root.kind != "object":
            raise EditError("is not a JSON object")
        hooks = _member(root, "hooks", '"hooks"')
        if hooks is None:
            break
        if hooks.kind != "object":
            raise EditError('has a "hooks" that is not an object')
        for event in events:
            _member(hooks, event, f'"hooks.{event}"')  # a duplicated event key is refused
        found = _our_handler(text, hooks, events, is_ours)
        if found is None:
            break
        text = _cut(text, *found)
        changed = True
    return text if changed else None
