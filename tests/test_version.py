"""``loop-brake --version`` says which event reader ``filter`` uses."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version

import pytest

from loop_brake_cli.readers import fastpath


def _version(**env: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    assert run.stderr == ""
    return run.stdout.splitlines()


def test_the_version_names_the_python_reader_when_the_c_one_is_switched_off():
    first, reader = _version(LOOP_BRAKE_PURE_PYTHON="1")
    assert first == f"loop-brake, version {version('loop-brake-cli')}"
    assert reader.startswith("event reader: Python (")


@pytest.mark.skipif(fastpath.scanner() is None, reason="the C event reader is not built")
def test_the_version_names_the_c_reader_when_it_is_built():
    from loop_brake_cli.readers import _event_scan

    _, reader = _version()
    with_instructions = f"event reader: C with {_event_scan.SHA_INSTRUCTIONS}"
    assert reader == (with_instructions if _event_scan.SHA_INSTRUCTIONS else "event reader: C")
    assert _event_scan.SHA_INSTRUCTIONS in ("", "SHA-NI", "ARMv8 SHA-2")
    _, portable = _version(LOOP_BRAKE_NO_SHA_NI="1")
    assert portable == "event reader: C"


def test_the_version_is_stated_once_and_the_metadata_says_the_same():
    """pyproject.toml reads ``loop_brake_cli.commands.version.__version__``: what ``--version``
    prints without importlib.metadata is what an installer recorded."""
    from loop_brake_cli.commands.version import __version__

    assert __version__ == version("loop-brake-cli")


def test_click_and_the_quick_path_print_the_same_version_text():
    """A bare ``--version`` is answered before click is imported (entry.py); given with
    another option, click's callback answers: the same two lines."""
    quick = _version()
    run = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "--version", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.splitlines() == quick
