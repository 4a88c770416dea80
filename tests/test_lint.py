"""The code style is part of the build: ruff must be clean on the whole tree, and mypy on
the layers below the front-ends (``[tool.mypy]`` in pyproject.toml), every ignore said."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loop_brake_cli.core.toml_reader import tomllib

ROOT = Path(__file__).resolve().parents[1]


# run as ``python -m ruff`` (the test extra's), so it need not be on PATH
@pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None, reason="ruff is not installed (the test extra)"
)
def test_ruff_check_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ``python -m mypy`` in the checkout reads [tool.mypy]: the packages and the strictness
# (.ci/run runs the same command); its cache goes to tmp_path, not the checkout
@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy is not installed (the test extra)"
)
def test_mypy_is_clean(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<codes>\[[^\]]*\])?(?P<after>.*)$")


def checked_files() -> list[Path]:
    """The Python files mypy checks: under the folders [tool.mypy] ``files`` names."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        folders = tomllib().load(handle)["tool"]["mypy"]["files"]
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def unexplained_ignores(text: str) -> list[int]:
    """The lines holding a ``# type: ignore`` that names no error code, or says no
    reason: a comment after it on its line, or a comment line among the three above."""
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, 1):
        match = IGNORE.search(line)
        if match is None:
            continue
        above = lines[max(0, number - 4) : number - 1]
        said = match["after"].strip().startswith("#") or any(
            other.lstrip().startswith("#") for other in above
        )
        if match["codes"] is None or not said:
            found.append(number)
    return found


def test_every_type_ignore_names_its_error_and_says_why() -> None:
    """So a reader can tell a checker's limit (a narrowing it cannot follow, an optional
    module set to None) from a silenced bug."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in checked_files()
        for number in unexplained_ignores(path.read_text(encoding="utf-8"))
    ]
    assert checked_files(), "no files found under [tool.mypy] files"
    assert found == [], "type: ignore without its code or reason at " + ", ".join(found)


def test_an_ignore_without_code_or_reason_is_found() -> None:
    text = (
        "x = f()  # type: ignore\n"
        "y = g()  # type: ignore[arg-type]\n"
        "z = h()  # type: ignore[arg-type]  # h is duck-typed\n"
        "\n\n\n\n"
        "# a comment above says why\n"
        "w = k()  # type: ignore[misc]\n"
        "v = m()  # type: ignore  # a reason, but which error?\n"
    )
    assert unexplained_ignores(text) == [1, 2, 10]
