"""The maxRepeats a DeepSeek Harness composition will really use, read from its patch layers.

A harness composes patch layers in order (each bundle's ``cordis.patch.yml``, the
profile's, the home-level file, then ``--patch`` overlays). A patch file is a
top-level YAML list of entries:

- ``- insert: [rows]`` appends plugin rows (``id``, ``name``, optional ``config``);
  with an ``id`` naming a group row, the rows go inside that group;
- ``- id: loop-brake`` (no ``insert``) targets an existing row; each field it
  supplies replaces the row's field, and ``config`` is replaced *whole*, never
  merged, so an override that forgets ``maxRepeats`` drops it.

The plugin's row is ``id: loop-brake``, ``name: dsh-loop-brake``, and its one config
key is ``maxRepeats``. All layers are applied in one pass, as the harness does.

Reading is safe: files are *composed* into YAML nodes (SafeLoader's parser, never
its constructor), scalars are typed by the YAML 1.2 core schema the harness's
loader uses (so ``010`` is ten and ``yes`` is a string), and any tag outside that
schema (``!!python/object``...) is an error, never an object. Errors carry
``file:line:column``; messages name keys and the maxRepeats value, never other
config values (they may be secrets). Imports neither click nor rich.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .brake import (
    DEFAULT_MAX_REPEATS,
    ENV_VAR,
    PLUGIN,
    InvalidMaxRepeatsError,
    normalize_max_repeats,
    parse_env_max_repeats,
)

__all__ = [
    "ConfigError",
    "ConfigReport",
    "ConfigWarning",
    "DEFAULT_PATCH_FILE",
    "Location",
    "PluginNotFoundError",
    "ROW_ID",
    "Touch",
    "check_config",
    "max_repeats_for_cli",
]

ROW_ID = "loop-brake"
KEY = "maxRepeats"
KNOWN_KEYS = (KEY,)
DEFAULT_PATCH_FILE = "cordis.patch.yml"
HIGH_MAX_REPEATS = 50

_YAML = "tag:yaml.org,2002:"
T_NULL, T_BOOL, T_INT, T_FLOAT, T_STR = (_YAML + t for t in ("null", "bool", "int", "float", "str"))
T_SEQ, T_MAP, T_JS = _YAML + "seq", _YAML + "map", _YAML + "js"
_SAFE_TAGS = {T_NULL, T_BOOL, T_INT, T_FLOAT, T_STR, T_SEQ, T_MAP, T_JS}
_PLUGIN_NAME = re.compile(r"(?:^|[/:])" + re.escape(PLUGIN) + r"(?:@[\w.+-]*)?/?$")


@dataclass(frozen=True)
class Location:
    """A 1-based place in a file, printed as ``file:line:column``."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ConfigError(Exception):
    """One or more located problems that make the composition unusable (exit 2).

    ``problems`` holds ``(location or None, message)`` pairs; ``str()`` is one line
    per problem, ``file:line:column: message``.
    """

    def __init__(self, problems: Sequence[tuple[Location | None, str]]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(_located(loc, msg) for loc, msg in self.problems))


class PluginNotFoundError(ConfigError):
    """The composition has no loop-brake row at all (check-config exits 4)."""


@dataclass(frozen=True)
class ConfigWarning:
    """Something legal but probably not meant; ``--strict`` makes it fail."""

    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return _located(self.location, self.message)


@dataclass(frozen=True)
class Touch:
    """One patch entry that inserted or overrode the plugin's row."""

    action: str  # "insert" or "override"
    location: Location
    fields: tuple[str, ...]
    sets_max_repeats: bool | None  # None: this entry did not supply a config


@dataclass
class ConfigReport:
    """The effective maxRepeats, where it came from, and what to warn about."""

    value: int
    kind: str  # "config", "env" or "default"
    source: str  # short: "profile/cordis.patch.yml:12, row loop-brake" / "$VAR" / "default"
    detail: str  # the human sentence for the default and env cases
    location: Location | None
    row: str
    layers: list[Touch] = field(default_factory=list)
    warnings: list[ConfigWarning] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _located(loc: Location | None, message: str) -> str:
    return f"{loc}: {message}" if loc is not None else message


# --------------------------------------------------------------------------- YAML


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


def _mark(file: str, node: Any) -> Location:
    mark = node.start_mark
    return Location(file, mark.line + 1, mark.column + 1)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag


def _load_file(path: str) -> Any:
    """The YAML node tree of one patch file, or ConfigError (never a traceback)."""
    import yaml

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ConfigError([(None, f"{path}: cannot read: {exc.strerror}")]) from None
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
    problems: list[tuple[Location | None, str]] = []
    if root is not None:
        _check_tags(path, root, problems, set())
    if problems:
        raise ConfigError(problems)
    return root


def _check_tags(path: str, node: Any, problems: list, seen: set[int]) -> None:
    """Refuse every tag the harness's loader would not accept; duplicate keys too."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if node.tag not in _SAFE_TAGS:
        problems.append(
            (
                _mark(path, node),
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
                        (_mark(path, key_node), f"duplicate key {key_node.value!r} in a mapping")
                    )
                keys.add(key_node.value)


class _Js:
    """A ``!!js`` expression: evaluated by the harness at run time, opaque here."""


def _scalar(path: str, node: Any) -> Any:
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
        raise ConfigError([(_mark(path, node), f"not a valid {_short_tag(tag)} scalar")]) from None
    if tag == T_JS:
        return _Js()
    return text


def _pairs(node: Any) -> dict[str, tuple[Any, Any]]:
    """A mapping node's entries by key text (keys are strings in the harness)."""
    return {k.value if k.id == "scalar" else "": (k, v) for k, v in node.value}


def _truthy(path: str, node: Any | None) -> bool:
    """JavaScript truthiness of a field (collections and !!js count as true)."""
    if node is None:
        return False
    if node.id != "scalar":
        return True
    value = _scalar(path, node)
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value) if not isinstance(value, _Js) else True


def _text(path: str, node: Any | None) -> str | None:
    if node is None or node.id != "scalar":
        return None
    value = _scalar(path, node)
    if value is None or isinstance(value, _Js):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------- composition


@dataclass
class _Field:
    file: str
    key: Any
    value: Any


@dataclass
class _ConfigSet:
    location: Location  # of the ``config`` key (or the row, for an insert without one)
    key_location: Location | None  # of maxRepeats inside it, if set


@dataclass(eq=False)
class _Row:
    file: str
    location: Location
    fields: dict[str, _Field]
    parent: _Row | None = None
    children: list[_Row] | None = None
    touches: list[Touch] = field(default_factory=list)
    configs: list[_ConfigSet] = field(default_factory=list)

    @property
    def id(self) -> str | None:
        f = self.fields.get("id")
        return _text(f.file, f.value) if f else None

    @property
    def name(self) -> str | None:
        f = self.fields.get("name")
        return _text(f.file, f.value) if f else None


def _is_plugin(row: _Row) -> bool:
    return row.id == ROW_ID or bool(row.name and _PLUGIN_NAME.search(row.name))


def _config_set(row: _Row, fallback: Location) -> _ConfigSet:
    f = row.fields.get("config")
    if f is None:
        return _ConfigSet(fallback, None)
    where = _mark(f.file, f.key)
    if f.value.id == "mapping":
        entry = _pairs(f.value).get(KEY)
        return _ConfigSet(where, _mark(f.file, entry[0]) if entry else None)
    return _ConfigSet(where, None)


class _Composer:
    """Applies every layer's entries in one pass, as the harness's loader does."""

    def __init__(self) -> None:
        self.root: list[_Row] = []
        self.index: dict[str, _Row] = {}
        self.warnings: list[ConfigWarning] = []
        self.skipped_plugin_overrides: list[Location] = []

    def warn(self, message: str, location: Location | None) -> None:
        self.warnings.append(ConfigWarning(message, location))

    def layer(self, path: str, root: Any) -> None:
        if root is None:
            return
        if root.id != "sequence":
            raise ConfigError(
                [(_mark(path, root), "a patch file must be a top-level YAML list of entries")]
            )
        for entry in root.value:
            self.entry(path, entry)

    def entry(self, path: str, node: Any) -> None:
        where = _mark(path, node)
        if node.id != "mapping":
            self.warn(f"line {where.line}: entry is not a mapping; skipped", where)
            return
        fields = {key: _Field(path, k, v) for key, (k, v) in _pairs(node).items()}
        insert = fields.get("insert")
        target_id = _text(path, fields["id"].value) if "id" in fields else None
        if insert is not None and _truthy(path, insert.value):
            self.insert(path, insert.value, target_id, where)
            return
        if not target_id:
            self.warn(
                f"line {where.line}: entry is neither an insert nor an id-targeted override; "
                "skipped",
                where,
            )
            return
        self.override(path, target_id, fields, where)

    def insert(self, path: str, rows: Any, group_id: str | None, where: Location) -> None:
        if rows.id != "sequence":
            raise ConfigError([(_mark(path, rows), "insert must be a list of rows")])
        parent: _Row | None = None
        if group_id:
            parent = self.index.get(group_id)
            if parent is None or parent.children is None:
                if any(_row_named_plugin(path, r) for r in rows.value):
                    self.warn(
                        f"insert into group {group_id!r}, which is not a group row in the "
                        "composition so far; the harness skips it",
                        where,
                    )
                return
        for row_node in rows.value:
            row = self.make_row(path, row_node, parent)
            (parent.children if parent is not None else self.root).append(row)  # type: ignore[union-attr]
            self.index_row(row)
            if _is_plugin(row):
                cfg = _config_set(row, row.location)
                row.configs.append(cfg)
                row.touches.append(
                    Touch("insert", row.location, tuple(row.fields), cfg.key_location is not None)
                )

    def make_row(self, path: str, node: Any, parent: _Row | None) -> _Row:
        if node.id != "mapping":
            raise ConfigError([(_mark(path, node), "a row must be a mapping (id, name, config)")])
        fields = {key: _Field(path, k, v) for key, (k, v) in _pairs(node).items()}
        row = _Row(path, _mark(path, node), fields, parent)
        self.set_children(row)
        return row

    def set_children(self, row: _Row) -> None:
        """A group row's config is a nested entry list (rows not indexed again)."""
        cfg = row.fields.get("config")
        group = row.fields.get("group")
        grouped = _truthy(group.file, group.value) if group is not None else False
        grouped = grouped or row.name == "cordis:group"
        if grouped and cfg is not None and cfg.value.id == "sequence":
            row.children = [
                self.make_row(cfg.file, item, row)
                for item in cfg.value.value
                if item.id == "mapping"
            ]
        else:
            row.children = None

    def index_row(self, row: _Row) -> None:
        row_id = row.id
        if row_id:
            earlier = self.index.get(row_id)
            if earlier is not None and _is_plugin(row):
                self.warn(
                    f"row {row_id!r} is inserted again (first at {earlier.location}); "
                    "later overrides target this one",
                    row.location,
                )
            self.index[row_id] = row
        for child in row.children or []:
            self.index_row(child)

    def override(
        self, path: str, target_id: str, fields: dict[str, _Field], where: Location
    ) -> None:
        target = self.index.get(target_id)
        if target is None:
            if target_id == ROW_ID:
                self.skipped_plugin_overrides.append(where)
                self.warn(
                    f"override of row {ROW_ID!r}, which no earlier entry inserts; "
                    "the harness skips it",
                    where,
                )
            return
        name = _text(path, fields["name"].value) if "name" in fields else None
        if name and name != target.name:
            if _is_plugin(target):
                self.warn(
                    f"override of row {target_id!r} names plugin {name!r}, not the row's; "
                    "the harness skips it",
                    where,
                )
            return
        supplied = tuple(k for k in fields if k not in ("id", "name"))
        for key in supplied:
            target.fields[key] = fields[key]
        if "config" in supplied:
            self.set_children(target)
        if _is_plugin(target):
            sets = None
            if "config" in supplied:
                cfg = _config_set(target, where)
                target.configs.append(cfg)
                sets = cfg.key_location is not None
            target.touches.append(Touch("override", where, supplied, sets))

    def plugin_rows(self) -> list[_Row]:
        found: list[_Row] = []

        def walk(rows: list[_Row]) -> None:
            for row in rows:
                if _is_plugin(row):
                    found.append(row)
                walk(row.children or [])

        walk(self.root)
        return found


def _row_named_plugin(path: str, node: Any) -> bool:
    if node.id != "mapping":
        return False
    pairs = _pairs(node)
    row_id = _text(path, pairs["id"][1]) if "id" in pairs else None
    name = _text(path, pairs["name"][1]) if "name" in pairs else None
    return row_id == ROW_ID or bool(name and _PLUGIN_NAME.search(name))


def _compose(paths: Sequence[str]) -> _Composer:
    problems: list[tuple[Location | None, str]] = []
    roots = []
    for path in paths:
        try:
            roots.append((path, _load_file(path)))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    composer = _Composer()
    for path, root in roots:
        composer.layer(path, root)
    return composer


def _find_row(composer: _Composer, paths: Sequence[str]) -> _Row:
    rows = composer.plugin_rows()
    if not rows:
        files = ", ".join(paths) or "(no files)"
        hint = ""
        if composer.skipped_plugin_overrides:
            hint = (
                f"; the override at {composer.skipped_plugin_overrides[0]} has nothing to target: "
                "name the layer that inserts the row (a bundle's cordis.patch.yml) before it"
            )
        raise PluginNotFoundError(
            [(None, f"no {ROW_ID} row ({PLUGIN}) in the composition of {files}{hint}")]
        )
    indexed = composer.index.get(ROW_ID)
    row = indexed if indexed in rows else rows[-1]
    if len(rows) > 1:
        composer.warn(
            f"{len(rows)} rows of {PLUGIN} in the composition: each mounts its own brake; "
            f"checking the one at {row.location}",
            row.location,
        )
    return row


# --------------------------------------------------------------------------- the value


def _describe(value: Any) -> str:
    """The maxRepeats value as the user wrote it (it is the one value we may echo)."""
    if isinstance(value, _Js):
        return "a !!js expression"
    if isinstance(value, bool):
        return "true (a boolean)" if value else "false (a boolean)"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "\u2026"
        return f'"{shown}" (a string)'
    if isinstance(value, (int, float)):
        return repr(value)
    return "a list" if isinstance(value, list) else "a mapping"


def _row_config(
    row: _Row, row_name: str
) -> tuple[int | None, Location | None, list[tuple[Location | None, str]]]:
    """The row's composed maxRepeats (or None) and every problem with its config."""
    f = row.fields.get("config")
    if f is None or (f.value.id == "scalar" and f.value.tag == T_NULL):
        return None, None, []
    path = f.file
    if f.value.id != "mapping":
        kind = "a list" if f.value.id == "sequence" else "a scalar"
        return (
            None,
            None,
            [(_mark(path, f.value), f"config of row {row_name!r} must be a mapping, not {kind}")],
        )
    problems: list[tuple[Location | None, str]] = []
    value: int | None = None
    key_loc: Location | None = None
    for key, (key_node, value_node) in _pairs(f.value).items():
        if key != KEY:
            problems.append((_mark(path, key_node), _unknown_key(key, row_name)))
            continue
        key_loc = _mark(path, key_node)
        raw = _value_of(path, value_node)
        try:
            value = normalize_max_repeats(raw)
        except InvalidMaxRepeatsError as exc:
            reason = str(exc).rsplit("(", 1)[-1].rstrip(")")
            problems.append((_mark(path, value_node), f"maxRepeats {reason}, got {_describe(raw)}"))
            value = None
    return value, key_loc, problems


def _value_of(path: str, node: Any) -> Any:
    if node.id == "scalar":
        return _scalar(path, node)
    return [] if node.id == "sequence" else {}


def _unknown_key(key: str, row_name: str) -> str:
    message = f"unknown key {key!r} in the config of row {row_name!r} (its one key is {KEY!r})"
    squashed = re.sub(r"[^a-z0-9]", "", key.lower())
    if squashed == KEY.lower() or difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6):
        message += f"; did you mean {KEY!r}? As written, the brake runs without it"
    return message


def _env_value(use_env: bool, env: Mapping[str, str] | None) -> tuple[int | None, str]:
    """The environment fallback, and a phrase saying why it was or was not used."""
    if not use_env:
        return None, f"{ENV_VAR} ignored (--no-env)"
    raw = (os.environ if env is None else env).get(ENV_VAR)
    if raw is None:
        return None, f"{ENV_VAR} unset"
    value = parse_env_max_repeats(raw)  # InvalidMaxRepeatsError propagates
    if value is None:
        return None, f"{ENV_VAR} empty"
    return value, f"${ENV_VAR}"


def check_config(
    paths: Sequence[str], use_env: bool = True, env: Mapping[str, str] | None = None
) -> ConfigReport:
    """Compose ``paths`` (in order, later wins) and report the effective maxRepeats.

    Raises ConfigError (exit 2), PluginNotFoundError (exit 4), or
    InvalidMaxRepeatsError for an unusable environment value, which counts only
    when the composed row sets no maxRepeats.
    """
    composer = _compose(paths)
    row = _find_row(composer, paths)
    row_name = row.id or PLUGIN
    value, key_loc, problems = _row_config(row, row_name)
    if problems:
        raise ConfigError(problems)
    warnings = list(composer.warnings)
    holder: _Row | None = row
    while holder is not None:
        disabled = holder.fields.get("disabled")
        if disabled is not None and _truthy(disabled.file, disabled.value):
            whose = f"row {row_name!r} is" if holder is row else f"its group {holder.id!r} is"
            warnings.append(
                ConfigWarning(
                    f"{whose} disabled: the brake does not run at all",
                    _mark(disabled.file, disabled.key),
                )
            )
            break
        holder = holder.parent
    if value is not None and key_loc is not None:
        source = f"{key_loc.file}:{key_loc.line}, row {row_name}"
        report = ConfigReport(value, "config", source, source, key_loc, row_name)
    else:
        try:
            env_value, why = _env_value(use_env, env)
        except InvalidMaxRepeatsError as exc:
            raise InvalidMaxRepeatsError(
                exc.source,
                exc.value,
                str(exc).rsplit("(", 1)[-1].rstrip(")")
                + f"; read because the composed row {row_name!r} sets no maxRepeats",
            ) from None
        if env_value is not None:
            detail = f"${ENV_VAR}: no maxRepeats in the composed row"
            report = ConfigReport(env_value, "env", why, detail, None, row_name)
        else:
            detail = f"default: no maxRepeats in the composed row, {why}"
            report = ConfigReport(DEFAULT_MAX_REPEATS, "default", "default", detail, None, row_name)
        dropped = _dropped(row)
        if dropped is not None:
            replaced, earlier = dropped
            fallback = (
                f"${ENV_VAR} ({report.value})"
                if report.kind == "env"
                else f"the default {report.value}"
            )
            warnings.append(
                ConfigWarning(
                    f"this override replaces the whole config of row {row_name!r} and drops "
                    f"maxRepeats (set at {earlier}); the brake falls back to {fallback}. "
                    "Restate maxRepeats in this config to keep it",
                    replaced,
                )
            )
    if report.value == 1:
        warnings.append(
            ConfigWarning(
                "maxRepeats is 1: every call is denied, even the first of a streak "
                "(a debugging setting)",
                report.location,
            )
        )
    elif report.value > HIGH_MAX_REPEATS:
        warnings.append(
            ConfigWarning(
                f"maxRepeats is {report.value}, above {HIGH_MAX_REPEATS}: "
                "a brake that rarely bites",
                report.location,
            )
        )
    report.layers = list(row.touches)
    report.warnings = warnings
    report.files = list(paths)
    return report


def _dropped(row: _Row) -> tuple[Location, Location] | None:
    """Where the last config replacement dropped a maxRepeats an earlier layer set."""
    if len(row.configs) < 2 or row.configs[-1].key_location is not None:
        return None
    for earlier in reversed(row.configs[:-1]):
        if earlier.key_location is not None:
            return row.configs[-1].location, earlier.key_location
    return None


def max_repeats_for_cli(
    explicit: int | None, config_paths: Sequence[str], use_env: bool = True
) -> tuple[int, str]:
    """The maxRepeats for ``filter``/``replay`` and a short name of its source.

    Precedence: the explicit flag (the config is then not read), the composed
    config, the environment, then 3. Raises ConfigError (a located message;
    PluginNotFoundError when no row exists) or InvalidMaxRepeatsError.
    """
    if explicit is not None:
        return normalize_max_repeats(explicit, "--max-repeats"), "--max-repeats"
    if not config_paths:
        env_value, why = _env_value(use_env, None)
        if env_value is not None:
            return env_value, why
        return DEFAULT_MAX_REPEATS, "default"
    report = check_config(config_paths, use_env=use_env)
    return report.value, report.source
