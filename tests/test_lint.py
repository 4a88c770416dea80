"""The code style is part of the build: ruff must be clean on the whole tree."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

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
