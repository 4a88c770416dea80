"""tests/ci_skips.py on a suite of its own, run by a real pytest: in CI (``CI`` set) a
skip that is not meant fails the run and is listed, with or without pytest-xdist, a
whole module's skip too; a meant one does not; outside CI nothing changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

SUITE = {
    "test_tool.py": (
        "import pytest\n"
        "def test_needs_a_tool():\n"
        "    pytest.skip('frobnicate is not installed')\n"
        "def test_slow_docs():\n"
        "    pytest.skip('takes minutes or the package index: LOOP_BRAKE_DOCS_SLOW=1 runs it')\n"
        "def test_strands():\n"
        "    pytest.skip('needs the strands extra')\n"
        "def test_runs():\n"
        "    pass\n"
    ),
    "test_module.py": (
        "import pytest\n"
        "pytest.importorskip('no_such_package_4e1a', reason='needs the zz extra')\n"
        "def test_never():\n"
        "    pass\n"
    ),
}


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    # The plugins installed with the test extra (Hypothesis, anyio, playwright, the
    # frameworks' own) are not what is tested: only ci_skips, and xdist where asked.
    environment = cli_env(PYTHONPATH=str(ROOT / "tests"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **env)
    for name in ("CI", "LOOP_BRAKE_CI_VENV"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "ci_skips", "-p", "no:cacheprovider"]
        + ["--rootdir", str(tmp_path), "-c", "/dev/null", *args, str(tmp_path)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=300,
    )


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["one-process", "xdist"])
def test_in_ci_an_unmeant_skip_fails_the_run_and_is_listed(tmp_path: Path, workers) -> None:
    done = run(tmp_path, *workers, CI="1")
    assert done.returncode == 1, done.stdout + done.stderr
    listed = done.stdout.split("skipped in CI (CI is set)")[1]
    assert "test_tool.py::test_needs_a_tool: frobnicate is not installed" in listed
    assert "test_module.py: needs the zz extra" in listed
    assert "test_slow_docs" not in listed and "test_strands" not in listed
    assert "2 skip(s) fail this CI run" in listed


def test_in_the_strands_venv_its_skip_is_not_meant(tmp_path: Path) -> None:
    done = run(tmp_path, CI="1", LOOP_BRAKE_CI_VENV="strands")
    assert done.returncode == 1
    assert "test_tool.py::test_strands: needs the strands extra" in done.stdout
    assert "3 skip(s) fail this CI run" in done.stdout


def test_outside_ci_a_skip_is_a_skip(tmp_path: Path) -> None:
    done = run(tmp_path, "-rs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped in CI" not in done.stdout
    assert "frobnicate is not installed" in done.stdout  # -rs: every reason said
