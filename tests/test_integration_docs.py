"""Every example in docs/integrations.md runs, offline, and prints what the doc shows.

Each ```python block is run in a fresh interpreter (so nothing leaks between
examples); its output must equal the ```text block right after it. Also: importing
``loop_brake_cli`` or ``loop_brake_cli.integrations`` imports no framework.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

DOC = ROOT / "docs" / "integrations.md"
BLOCK = re.compile(r"```python\n(.*?)```\s*```text\n(.*?)```", re.S)
FRAMEWORKS = [
    "mcp",
    "langchain",
    "langgraph",
    "agents",
    "openai",
    "pydantic_ai",
    "google",
    "fastmcp",
    "claude_agent_sdk",
    "smolagents",
    "strands",
    "autogen_agentchat",
    "autogen_core",
    "autogen_ext",
    "llama_index",
    "crewai",
]


def examples() -> list[tuple[str, str, str]]:
    """(the section's heading, the code, the output shown) for every example."""
    text = DOC.read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        heading = re.findall(r"^## (.+)$", text[: match.start()], re.M)[-1]
        found.append((heading, match.group(1), match.group(2)))
    return found


EXAMPLES = [pytest.param(*example, id=example[0].split(":")[0]) for example in examples()]


def needs(code: str) -> str | None:
    """The framework an example imports, if it is not installed."""
    for module in re.findall(r"^(?:from|import) (\w+)", code, re.M):
        if module in FRAMEWORKS and importlib.util.find_spec(module) is None:
            return module
    return None


def test_the_doc_has_one_example_per_integration() -> None:
    found = examples()
    headings = [heading for heading, _, _ in found]
    modules = sorted(
        path.stem
        for path in (ROOT / "loop_brake_cli" / "integrations").glob("*.py")
        if not path.stem.startswith("_") and path.stem != "attachment"  # the registry's
    )
    shown = sorted(
        {
            m
            for _, code, _ in found
            for m in re.findall(r"loop_brake_cli\.integrations\.(\w+)", code)
        }
    )
    assert shown == modules  # every integration module has its example
    assert len(headings) == len(modules) + 1 == len(set(headings))  # and the registry's


@pytest.mark.parametrize("heading,code,expected", EXAMPLES)
def test_example_runs_and_prints_what_the_doc_shows(
    heading: str, code: str, expected: str, tmp_path: Path
) -> None:
    missing = needs(code)
    if missing:
        pytest.skip(f"{missing} is not installed (its extra)")
    script = tmp_path / "example.py"  # a file, as a user runs it (smolagents' @tool reads
    script.write_text(code, encoding="utf-8")  # its function's source)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "OPENAI_API_KEY": "",
            "PYTHONIOENCODING": "utf-8",
            "HOME": str(tmp_path / "home"),  # what a framework keeps there (CrewAI) is this test's
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == expected


def test_importing_the_package_imports_no_framework() -> None:
    code = (
        "import sys, loop_brake_cli, loop_brake_cli.integrations;"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stderr
