"""Reading one patch file safely: YAML nodes, never objects, and the values of their scalars.

Files are *composed* into YAML nodes (SafeLoader's parser, never its
constructor), scalars are typed by the YAML 1.2 core schema the harness's loader
uses (so ``010`` is ten and ``yes`` is a string), and any tag outside that
schema (``!!python/object``...) is an error, never an object. yaml itself is
imported only when a file is read, so ``filter`` without ``--config`` never
loads it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..core.small_file import SmallFileError, read_small_file
from .problems import ConfigError, Location, Problem

MAX_PATCH_BYTES = 8 << 20
"""The largest harness patch file read (8 MiB; real ones are a few kilobytes)."""

_YAML = "tag:yaml.org,2002:"
T_NULL, T_BOOL, T_INT, T_FLOAT, T_STR = (_YAML + t for t in ("null", "bool", "int", "float", "str"))
T_SEQ, T_MAP, T_JS = _YAML + "seq", _YAML + "map", _YAML + "js"
_SAFE_TAGS = {T_NULL, T_BOOL, T_INT, T_FLOAT, T_STR, T_SEQ, T_MAP, T_JS}


def _loader_class() -> type:
    """A SafeLoader whose implicit typing is the YAML 1.2 core schema (as js-yaml's).

    Built lazily so that importing this module (``filter`` without ``--config``)
    does not import yaml.
    """
    import yaml

    class PatchLoader(yaml.SafeLoader):
        yaml_implicit_resolvers: dict = {}

    add = PatchLoader.add_implicit_resolver
    add(T_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
    add(T_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    add(
        T_INT,
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        list("-+0123456789"),
    )
    add(
        T_FLOAT,
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+.0123456789"),
    )
    return PatchLoader


def location_of(file: str, node: Any) -> Location:
    """Where a YAML node starts, 1-based."""
    mark = node.start_mark
    return Location(file, mark.line + 1, mark.column + 1)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag


def load_file(path: str) -> Any:
    """The YAML node tree of one patch file, or ConfigError (never a traceback)."""
    import yaml

    try:
        data = read_small_file(path, "patch file", MAX_PATCH_BYTES)
    except SmallFileError as exc:
        raise ConfigError([(None, f"{path}: {exc}")]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError([(Location(path, line, column), "not UTF-8 text")]) from None
    try:
        root = yaml.compose(text, Loader=_loader_class())
    except yaml.MarkedYAMLError as exc:
        # Only the problem and its context: str(exc) would quote the offending line.
        mark = exc.problem_mark or exc.context_mark
        loc = Location(path, mark.line + 1, mark.column + 1) if mark else None
        words = " ".join(part for part in (exc.problem, exc.context) if part)
        raise ConfigError([(loc, f"YAML syntax error: {words or 'unreadable'}")]) from None
    except yaml.reader.ReaderError as exc:
        before = text[: max(exc.position, 0)]
        loc = Location(path, before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1)
        code = ord(exc.character) if isinstance(exc.character, str) else int(exc.character)
        problem = f"a character YAML does not allow (#x{code:04x})"
        raise ConfigError([(loc, f"YAML syntax error: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([(None, f"{path}: YAML error: {type(exc).__name__}")]) from None
    except RecursionError:
        raise ConfigError([(_too_deep(path, text), "YAML nested too deep to read")]) from None
    problems: list[Problem] = []
    if root is not None:
        try:
            _check_tags(path, root, problems, set())
        except RecursionError:
            raise ConfigError([(_too_deep(path, text), "YAML nested too deep to read")]) from None
    if problems:
        raise ConfigError(problems)
    return root


def _too_deep(path: str, text: str, depth: int = 100) -> Location:
    """Where flow brackets first nest ``depth`` deep (else where indentation does):
    the parser's own position is lost with its stack."""
    offset = _deep_offset(text, depth)
    before = text[:offset]
    return Location(path, before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _deep_offset(text: str, depth: int) -> int:
    level = 0
    for offset, char in enumerate(text):
        if char in "[{":
            level += 1
            if level >= depth:
                return offset
        elif char in "]}":
            level -= 1
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line) - len(line.lstrip(" ")) >= depth:
            return offset
        offset += len(line)
    return 0


def _check_tags(path: str, node: Any, problems: list[Problem], seen: set[int]) -> None:
    """Refuse every tag the harness's loader would not accept; duplicate keys too."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if node.tag not in _SAFE_TAGS:
        problems.append(
            (
                location_of(path, node),
                f"YAML tag {_short_tag(node.tag)} is not allowed in a patch file "
                "(nothing is constructed from it)",
            )
        )
        return
    if node.id == "sequence":
        for item in node.value:
            _check_tags(path, item, problems, seen)
    elif node.id == "mapping":
        keys: set[str] = set()
        for key_node, value_node in node.value:
            _check_tags(path, key_node, problems, seen)
            _check_tags(path, value_node, problems, seen)
            if key_node.id == "scalar":
                if key_node.value in keys:
                    problems.append(
                        (
                            location_of(path, key_node),
                            f"duplicate key {key_node.value!r} in a mapping",
                        )
                    )
                keys.add(key_node.value)


class Js:
    """A ``!!js`` expression: evaluated by the harness at run time, opaque here."""


def scalar(path: str, node: Any) -> Any:
    """The value of a scalar node by its (already checked) tag."""
    text, tag = node.value, node.tag
    try:
        if tag == T_NULL:
            return None
        if tag == T_BOOL:
            return text in ("true", "True", "TRUE")
        if tag == T_INT:
            sign = -1 if text.startswith("-") else 1
            body = text.lstrip("+-")
            base = 16 if body.startswith("0x") else 8 if body.startswith("0o") else 10
            return sign * int(body[2:] if base != 10 else body, base)
        if tag == T_FLOAT:
            lowered = text.lower()
            if lowered.endswith(".inf"):
                return -math.inf if lowered.startswith("-") else math.inf
            if lowered == ".nan":
                return math.nan
            return float(text)
    except ValueError:
        raise ConfigError(
            [(location_of(path, node), f"not a valid {_short_tag(tag)} scalar")]
        ) from None
    if tag == T_JS:
        return Js()
    return text


def pairs(node: Any) -> dict[str, tuple[Any, Any]]:
    """A mapping node's entries by key text (keys are strings in the harness)."""
    return {k.value if k.id == "scalar" else "": (k, v) for k, v in node.value}


def truthy(path: str, node: Any | None) -> bool:
    """JavaScript truthiness of a field (collections and !!js count as true)."""
    if node is None:
        return False
    if node.id != "scalar":
        return True
    value = scalar(path, node)
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value) if not isinstance(value, Js) else True


def scalar_text(path: str, node: Any | None) -> str | None:
    """A scalar field as the harness compares it (an id, a name), or None if it is no text."""
    if node is None or node.id != "scalar":
        return None
    value = scalar(path, node)
    if value is None or isinstance(value, Js):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
