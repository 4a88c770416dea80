"""Imports point one way, package by package: commands -> front-ends -> formats,
analysis, render -> agents, config -> readers -> core.

Read from the source with ``ast`` (not by importing), so a lazy import inside a
function counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loop_brake_cli"

LAYERS = (
    # the brake: the hash contract, the streak rule, verdicts, policies, progress;
    # and where streaks live between processes (LoopBrake(store=...) counts through one)
    {"core", "stores"},
    {"readers"},  # where input is read: lines, the fast path, its C reader, wire shapes
    {"agents", "config"},  # the agents' hook dialects; the max_repeats configuration
    # transcripts, corpora and what a replay makes of them; output drawn for people
    {"formats", "corpus", "analysis", "render"},
    # the live front-ends: the public API's attach(), hooks, MCP proxy/gateway, frameworks
    {"__init__", "hook", "mcp_proxy", "mcp_gateway", "integrations"},
    {"commands", "cli", "entry", "__main__"},  # the click CLI, thin
)
LAYER = {name: level for level, names in enumerate(LAYERS) for name in names}


def layer_of(top: str) -> int:
    return LAYER[top]


def top_name(path: Path) -> str:
    """The package a module belongs to; the package's own ``__init__`` is its own name."""
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


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


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_one_way(path: Path) -> None:
    mine = layer_of(top_name(path))
    for target in imported_tops(path):
        theirs = layer_of(target)
        assert theirs <= mine, f"{path.name} (layer {mine}) imports {target} (layer {theirs})"


def test_the_top_level_is_packages() -> None:
    """Only the entry points sit beside the packages; every other module is in the
    package that names its layer, and every package is in a layer."""
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == {"__init__.py", "__main__.py", "cli.py", "entry.py"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYER) - {"__init__", "__main__", "cli", "entry"}


def test_the_checker_sees_a_wrong_way_import() -> None:
    """The checker itself: a core module importing a command would be caught."""
    module = PACKAGE / "readers" / "wire" / "fields.py"
    assert "core" in imported_tops(module)
    assert top_name(module) == "readers" and top_name(PACKAGE / "__init__.py") == "__init__"
    assert layer_of("commands") > layer_of("readers") > layer_of("core")
