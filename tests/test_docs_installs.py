"""Every install line the docs show in prose, run as written in a fresh venv (issue 40).

``tests/test_docs_examples.py`` runs the commands of ```sh blocks (the README's
install and test lines among them). An install named in a sentence or a table
(``pip install 'loop-brake-cli[mcp]'``, the Dask recipe's packages) ran nowhere,
and one of them broke: ``pip install 'dask[bag]' distributed`` resolved to a dask
and a distributed years apart (pip check passes: distributed 2021.4 states no dask
bound), and the recipe died in a traceback on ``import distributed``.

Here each such code span is installed into its own new venv, ``loop-brake-cli``
standing for a copy of this checkout (``'.[mcp]'`` run inside it), then ``pip
check`` and what the line is for is imported: the framework behind each extra and
our module for it, the packages named beside. The list of spans is checked on every
run (a new install line needs its import below); the installs themselves take
minutes and the package index, so they run only with ``LOOP_BRAKE_DOCS_SLOW=1``,
as the docs test's own ``pip install`` lines do.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs_examples import PAGES, ROOT, SLOW_ENV, _copy_checkout, fenced_blocks

SPAN = re.compile(r"`([^`]*\bpip install\b[^`]*)`")
OURS = re.compile(r"^(?:loop-brake-cli|\.)(?:\[([a-z0-9,-]+)\])?$")

EXTRA_IMPORTS = {
    "mcp": "mcp.server.mcpserver mcp.types",
    "langchain": "langchain.agents",
    "openai-agents": "agents",
    "pydantic-ai": "pydantic_ai",
    "google-adk": "google.adk.plugins",
    "langgraph": "langgraph.prebuilt",
    "fastmcp": "fastmcp",
    "re2": "re2",
    "claude-agent-sdk": "claude_agent_sdk",
    "smolagents": "smolagents",
    "autogen": "autogen_agentchat.agents",
    "llama-index": "llama_index.core.agent.workflow",
    "strands": "strands",
    "crewai": "crewai",
    "redis": "redis hiredis",
    "parquet": "pyarrow.parquet",
    "otel": "opentelemetry.sdk.metrics opentelemetry.exporter.otlp.proto.http.metric_exporter",
}
"""What each extra of pyproject.toml is installed for: its packages, imported."""

OTHER_IMPORTS = {
    "dask[bag,distributed]": "dask.bag distributed dask.distributed",
    "autogen-ext": "autogen_ext.models.replay",
}
"""Packages a page names beside ours, by the requirement as written."""


def _blank_fences(path: Path) -> list[str]:
    """The page's lines with fenced blocks blanked (their commands are the docs test's)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for _language, start, body in fenced_blocks(path):
        for number in range(start - 1, start - 1 + len(body)):
            lines[number] = ""
    return lines


def install_lines() -> list[tuple[str, str]]:
    """(page:line, the install command with its line breaks as spaces) of every prose span."""
    found = []
    for path in PAGES:
        page = path.relative_to(ROOT).as_posix()
        text = "\n".join(_blank_fences(path))
        for match in SPAN.finditer(text):
            command = " ".join(match.group(1).split())
            if command != "pip install":  # the words alone (DEVELOPING.md): no line
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{page}:{line}", command))
    return found


INSTALLS = install_lines()


def _requirements(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[:2] == ["pip", "install"], command
    return words[2:]


def _imports(requirement: str) -> list[str]:
    """The modules that show ``requirement`` installed and working."""
    ours = OURS.match(requirement)
    if ours is None:
        return OTHER_IMPORTS[requirement].split()
    modules = ["loop_brake_cli", "loop_brake_cli.cli"]
    for extra in filter(None, (ours.group(1) or "").split(",")):
        modules += EXTRA_IMPORTS[extra].split()
        module = f"loop_brake_cli.integrations.{extra.replace('-', '_')}"
        if (ROOT / (module.replace(".", "/") + ".py")).exists():
            modules.append(module)
    return modules


def test_install_lines_are_found() -> None:
    pages = {where.split(":")[0] for where, _ in INSTALLS}
    assert {"docs/corpora.md", "docs/integrations.md", "docs/scaling.md"} <= pages
    assert any("dask" in command for _, command in INSTALLS)


@pytest.mark.parametrize("where, command", INSTALLS, ids=[where for where, _ in INSTALLS])
def test_every_install_line_says_what_it_installs(where: str, command: str) -> None:
    """Each requirement is ours (an extra pyproject.toml declares) or one this test imports."""
    declared = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for requirement in _requirements(command):
        ours = OURS.match(requirement)
        if ours is None:
            assert requirement in OTHER_IMPORTS, f"{where}: add {requirement} to OTHER_IMPORTS"
            continue
        for extra in filter(None, (ours.group(1) or "").split(",")):
            assert re.search(rf"^{re.escape(extra)} = \[", declared, re.M), (where, extra)
            assert extra in EXTRA_IMPORTS, f"{where}: add {extra} to EXTRA_IMPORTS"


def _distinct() -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for where, command in INSTALLS:
        seen.setdefault(command, where)
    return [(where, command) for command, where in seen.items()]


@pytest.mark.skipif(
    not os.environ.get(SLOW_ENV),
    reason=f"takes minutes and the package index: {SLOW_ENV}=1 runs it",
)
@pytest.mark.parametrize("where, command", _distinct(), ids=[where for where, _ in _distinct()])
def test_every_install_line_installs_what_it_says(where: str, command: str, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    _copy_checkout(checkout)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    requirements = []
    for requirement in _requirements(command):
        ours = OURS.match(requirement)
        if ours is not None:
            requirement = str(checkout) + (f"[{ours.group(1)}]" if ours.group(1) else "")
        requirements.append(requirement)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_BRAKE_", "PYTHON"))}
    pip = [python, "-m", "pip", "install", "-q", *requirements]
    done = subprocess.run(pip, cwd=checkout, env=env, capture_output=True, timeout=3600)
    assert done.returncode == 0, f"{where}: {command}\n{done.stderr.decode()[-3000:]}"
    check = subprocess.run([python, "-m", "pip", "check"], env=env, capture_output=True)
    assert check.returncode == 0, f"{where}: {command}\n{check.stdout.decode()}"
    modules = [m for requirement in _requirements(command) for m in _imports(requirement)]
    script = "import importlib, sys\nfor name in sys.argv[1:]: importlib.import_module(name)\n"
    imported = subprocess.run(
        [python, "-c", script, *modules], cwd=tmp_path, env=env, capture_output=True
    )
    assert imported.returncode == 0, f"{where}: {command}\n{imported.stderr.decode()[-3000:]}"
