"""Imports point one way, package by package: commands -> front-ends -> mcp_shared ->
telemetry -> formats, analysis, render -> agents, config -> readers -> core; and no front-end
imports a sibling front-end.

Read from the source with ``ast`` (not by importing), so a lazy import inside a
function counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loop_brake_cli"

FRONT_ENDS = frozenset({"hook", "mcp_proxy", "mcp_gateway", "integrations", "run", "doctor"})
"""Siblings: each stands on the layers below, never on another (what two of them
share goes below them, as ``mcp_shared`` under the MCP proxy and gateway)."""

SIBLING_USES = {"run": {"hook"}, "doctor": {"hook"}}
"""The front-ends built on another by design: ``loop-brake run`` installs the hook
into the agent it starts and checks it with one decision; ``loop-brake doctor``
finds the hook's entries as install writes them and checks each the same way."""

LAYERS = (
    # the brake: the hash contract, the streak rule, verdicts, policies, progress, and
    # the session table interface with its memory table (core/table.py); it knows no
    # backend: LoopBrake(store=URL) opens one through the opener the package root sets
    {"core"},
    # where streaks live between processes: SQLite, Redis, registered by URL scheme
    {"stores"},
    {"readers"},  # where input is read: lines, the fast path, its C reader, wire shapes
    {"agents", "config"},  # the agents' hook dialects; the max_repeats configuration
    # transcripts, corpora and what a replay makes of them; output drawn for people
    {"formats", "corpus", "analysis", "render"},
    # what is counted about verdicts (one place, read by /metrics and by OpenTelemetry),
    # and the opt-in OpenTelemetry exporter (the otel extra, imported only when asked)
    {"telemetry"},
    # what the MCP front-ends share: spans, JSON-RPC answers, denial notes, headers, logs, pipes
    {"mcp_shared"},
    # the live front-ends: the public API's attach(), hooks, MCP proxy/gateway, frameworks
    FRONT_ENDS | {"__init__"},
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
    return imported_tops_of(path.read_text(encoding="utf-8"), path)


def imported_tops_of(source: str, path: Path) -> set[str]:
    """``imported_tops`` of ``source`` as if it were the module at ``path``."""
    tree = ast.parse(source)
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


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if top_name(p) in FRONT_ENDS],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_front_end_imports_a_sibling(path: Path) -> None:
    """The MCP gateway once climbed into the proxy's internals eight times; what two
    front-ends share lives in a package below both."""
    mine = top_name(path)
    siblings = (imported_tops(path) & FRONT_ENDS) - {mine} - SIBLING_USES.get(mine, set())
    assert not siblings, f"{path.relative_to(PACKAGE)} imports its sibling {sorted(siblings)}"


def test_the_sibling_check_sees_a_sibling() -> None:
    """The checker itself: the gateway's old import of the proxy's spans is a sibling."""
    module = PACKAGE / "mcp_gateway" / "old_decide.py"
    source = "from ..mcp_proxy.spans import member_span\nfrom ..mcp_shared import spans\n"
    tops = imported_tops_of(source, module)
    assert tops == {"mcp_proxy", "mcp_shared"}
    assert (tops & FRONT_ENDS) - {top_name(module)} == {"mcp_proxy"}


def test_the_top_level_is_packages() -> None:
    """Only the entry points sit beside the packages; every other module is in the
    package that names its layer, and every package is in a layer."""
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == {"__init__.py", "__main__.py", "cli.py", "entry.py"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYER) - {"__init__", "__main__", "cli", "entry"}


def test_the_core_imports_no_backend() -> None:
    """The rule and the session table stand below every store: no core module imports
    ``stores`` (a new backend changes nothing in the core)."""
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        assert "stores" not in imported_tops(path), path
    assert layer_of("stores") > layer_of("core")


def test_the_checker_sees_a_wrong_way_import() -> None:
    """The checker itself: a core module importing a command would be caught."""
    module = PACKAGE / "readers" / "wire" / "fields.py"
    assert "core" in imported_tops(module)
    assert top_name(module) == "readers" and top_name(PACKAGE / "__init__.py") == "__init__"
    assert layer_of("commands") > layer_of("readers") > layer_of("core")


def imported_modules(path: Path) -> set[str]:
    """The package's own modules that ``path`` imports (dotted, under the package),
    at any depth; ``from . import x`` names module ``x`` where there is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    relative = path.relative_to(PACKAGE).with_suffix("")
    package_parts = list(relative.parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                target = ".".join(base + ((node.module or "").split(".") if node.module else []))
            elif node.module and node.module.startswith("loop_brake_cli."):
                target = node.module.removeprefix("loop_brake_cli.")
            else:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}".lstrip(".")
                found.add(child if child in ALL_MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("loop_brake_cli.")
                for a in node.names
                if a.name.startswith("loop_brake_cli.")
            )
    return {name for name in found if name in ALL_MODULES}


def dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_MODULES = {dotted(p) for p in PACKAGE.rglob("*.py")}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A path of imports that comes back to where it started, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (circle := visit(target)):
                return circle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (circle := visit(name)):
            return circle
    return None


def test_no_import_circle() -> None:
    """No module reaches itself through the modules it imports (a lazy import or one
    under TYPE_CHECKING counts too), except a package's ``__init__`` re-exporting
    its own modules, which is how Python packages are built."""
    graph = {dotted(p): imported_modules(p) for p in PACKAGE.rglob("*.py")}
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not t.startswith(name + ".") and t != name}
    assert find_circle(graph) is None


def test_the_circle_check_sees_a_circle() -> None:
    """The checker itself: the circles this test was written against, in their old
    form, are found; the modules a real file imports are read as Python reads them."""
    old = {
        "analysis.report": {"analysis.timeline", "analysis.waste"},
        "analysis.timeline": {"analysis.report"},
        "analysis.waste": set(),
    }
    assert find_circle(old) == ["analysis.report", "analysis.timeline", "analysis.report"]
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    replay = imported_modules(PACKAGE / "commands" / "replay.py")
    assert {"commands._replay_verdicts", "commands._options", "analysis.discover"} <= replay
