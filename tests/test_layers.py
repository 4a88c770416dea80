"""Imports point one way: commands -> front-ends, formats, render -> core.

Read from the source with ``ast`` (not by importing), so a lazy import inside a
function counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loop_brake_cli"

CORE = {
    "attachment",
    "canonical",
    "streak",
    "brake",
    "limits",
    "verdicts",
    "slotted",
    "_namedtuple",  # named tuples without typing (the hook's start-up): no dependencies
    "fast_canonical",
    "fast_lines",
    "_event_scan",  # the optional C reader (_event_scan.c): imports nothing of ours
    "records",
    "pipeline",
    "reader",
    "output",
    "shard",
    "exitcodes",
    "wire",
    "policy",
    "progress",
    "toml_reader",
    "visible",  # identifiers for people: controls escaped (no dependencies)
    "stores",  # where streaks live between processes: LoopBrake(store=...) counts through one
}
COMMANDS = {"commands", "cli", "entry", "__main__"}
LAYER = {"core": 0, "front": 1, "commands": 2}


def layer_of(top: str) -> str:
    if top in CORE:
        return "core"
    if top in COMMANDS:
        return "commands"
    return "front"


def top_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE).with_suffix("")
    return relative.parts[0]


def imported_tops(path: Path) -> set[str]:
    """The package's own top-level modules that ``path`` imports, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package_parts = path.relative_to(PACKAGE).parent.parts
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package_parts[: len(package_parts) - (node.level - 1)])
                names = (node.module or "").split(".") if node.module else []
                parts = base + [n for n in names if n]
                if parts:
                    found.add(parts[0])
                else:  # "from . import x" at the package root
                    found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("loop_brake_cli."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("loop_brake_cli."):
                    found.add(alias.name.split(".")[1])
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_one_way(path: Path) -> None:
    mine = layer_of(top_name(path))
    for target in imported_tops(path):
        theirs = layer_of(target)
        assert LAYER[theirs] <= LAYER[mine], f"{path.name} ({mine}) imports {target} ({theirs})"


def test_the_checker_sees_a_wrong_way_import(tmp_path: Path) -> None:
    """The checker itself: a core module importing a command is caught."""
    module = PACKAGE / "wire" / "fields.py"
    assert "brake" in imported_tops(module)
    assert layer_of("commands") == "commands" and layer_of("wire") == "core"
    assert LAYER[layer_of("commands")] > LAYER[layer_of(top_name(module))]
