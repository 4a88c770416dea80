"""Composing patch layers into rows, as the harness does, and finding the plugin's row.

All layers are applied in one pass, in order. An ``insert`` entry appends rows
(inside a group row when its ``id`` names one); an entry with only an ``id``
overrides that row field by field, ``config`` replaced whole. Entries the
harness would skip are skipped here too, with a warning when they concern the
plugin. Each insert or override of the plugin's row is kept as a ``Touch`` so
check-config can show which layers shaped it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.verdicts import PLUGIN
from .load import load_file, location_of, pairs, scalar_text, truthy
from .problems import ConfigError, ConfigWarning, Location, PluginNotFoundError, Problem

ROW_ID = "loop-brake"
KEY = "maxRepeats"
_PLUGIN_NAME = re.compile(r"(?:^|[/:])" + re.escape(PLUGIN) + r"(?:@[\w.+-]*)?/?$")


@dataclass(frozen=True)
class Touch:
    """One patch entry that inserted or overrode the plugin's row."""

    action: str  # "insert" or "override"
    location: Location
    fields: tuple[str, ...]
    sets_max_repeats: bool | None  # None: this entry did not supply a config


@dataclass
class RowField:
    """One field of a row, with the file it came from (a later layer may replace it)."""

    file: str
    key: Any
    value: Any


@dataclass
class ConfigSet:
    """One layer's ``config`` of the plugin's row: the trail that shows a dropped maxRepeats."""

    location: Location  # of the ``config`` key (or the row, for an insert without one)
    key_location: Location | None  # of maxRepeats inside it, if set


@dataclass(eq=False)
class Row:
    """A composed row: its fields as the layers left them, and its place in the tree."""

    file: str
    location: Location
    fields: dict[str, RowField]
    parent: Row | None = None
    children: list[Row] | None = None
    touches: list[Touch] = field(default_factory=list)
    configs: list[ConfigSet] = field(default_factory=list)

    @property
    def id(self) -> str | None:
        f = self.fields.get("id")
        return scalar_text(f.file, f.value) if f else None

    @property
    def name(self) -> str | None:
        f = self.fields.get("name")
        return scalar_text(f.file, f.value) if f else None


def _is_plugin(row: Row) -> bool:
    return row.id == ROW_ID or bool(row.name and _PLUGIN_NAME.search(row.name))


def _config_set(row: Row, fallback: Location) -> ConfigSet:
    f = row.fields.get("config")
    if f is None:
        return ConfigSet(fallback, None)
    where = location_of(f.file, f.key)
    if f.value.id == "mapping":
        entry = pairs(f.value).get(KEY)
        return ConfigSet(where, location_of(f.file, entry[0]) if entry else None)
    return ConfigSet(where, None)


class Composer:
    """Applies every layer's entries in one pass, as the harness's loader does."""

    def __init__(self) -> None:
        self.root: list[Row] = []
        self.index: dict[str, Row] = {}
        self.warnings: list[ConfigWarning] = []
        self.skipped_plugin_overrides: list[Location] = []

    def warn(self, message: str, location: Location | None) -> None:
        self.warnings.append(ConfigWarning(message, location))

    def layer(self, path: str, root: Any) -> None:
        if root is None:
            return
        if root.id != "sequence":
            raise ConfigError(
                [(location_of(path, root), "a patch file must be a top-level YAML list of entries")]
            )
        for entry in root.value:
            self.entry(path, entry)

    def entry(self, path: str, node: Any) -> None:
        where = location_of(path, node)
        if node.id != "mapping":
            self.warn(f"line {where.line}: entry is not a mapping; skipped", where)
            return
        fields = {key: RowField(path, k, v) for key, (k, v) in pairs(node).items()}
        insert = fields.get("insert")
        target_id = scalar_text(path, fields["id"].value) if "id" in fields else None
        if insert is not None and truthy(path, insert.value):
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
            raise ConfigError([(location_of(path, rows), "insert must be a list of rows")])
        parent: Row | None = None
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

    def make_row(self, path: str, node: Any, parent: Row | None) -> Row:
        if node.id != "mapping":
            raise ConfigError(
                [(location_of(path, node), "a row must be a mapping (id, name, config)")]
            )
        fields = {key: RowField(path, k, v) for key, (k, v) in pairs(node).items()}
        row = Row(path, location_of(path, node), fields, parent)
        self.set_children(row)
        return row

    def set_children(self, row: Row) -> None:
        """A group row's config is a nested entry list (rows not indexed again)."""
        cfg = row.fields.get("config")
        group = row.fields.get("group")
        grouped = truthy(group.file, group.value) if group is not None else False
        grouped = grouped or row.name == "cordis:group"
        if grouped and cfg is not None and cfg.value.id == "sequence":
            row.children = [
                self.make_row(cfg.file, item, row)
                for item in cfg.value.value
                if item.id == "mapping"
            ]
        else:
            row.children = None

    def index_row(self, row: Row) -> None:
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
        self, path: str, target_id: str, fields: dict[str, RowField], where: Location
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
        name = scalar_text(path, fields["name"].value) if "name" in fields else None
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

    def plugin_rows(self) -> list[Row]:
        found: list[Row] = []

        def walk(rows: list[Row]) -> None:
            for row in rows:
                if _is_plugin(row):
                    found.append(row)
                walk(row.children or [])

        walk(self.root)
        return found


def _row_named_plugin(path: str, node: Any) -> bool:
    if node.id != "mapping":
        return False
    entries = pairs(node)
    row_id = scalar_text(path, entries["id"][1]) if "id" in entries else None
    name = scalar_text(path, entries["name"][1]) if "name" in entries else None
    return row_id == ROW_ID or bool(name and _PLUGIN_NAME.search(name))


def compose(paths: Sequence[str]) -> Composer:
    """Every layer read first (all their problems reported at once), then applied in order."""
    problems: list[Problem] = []
    roots = []
    for path in paths:
        try:
            roots.append((path, load_file(path)))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    composer = Composer()
    for path, root in roots:
        composer.layer(path, root)
    return composer


def find_row(composer: Composer, paths: Sequence[str]) -> Row:
    """The plugin's row the harness would mount (the indexed one), or PluginNotFoundError."""
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
