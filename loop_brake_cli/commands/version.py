"""``loop-brake --version``: the version, and the event reader ``filter`` uses.

``__version__`` is the one statement of the version: pyproject.toml reads it at build
time (``[tool.setuptools.dynamic]``), so the installed metadata says the same. Reading
it here rather than through ``importlib.metadata`` keeps ``--version`` quick: that
module (with ``email``, ``zipfile``, ``csv`` and a scan of ``sys.path``) cost more than
the rest of the command (``bench/startup.py``); ``entry.py`` answers a bare
``--version`` before click is imported.
"""

from __future__ import annotations

__version__ = "0.1.0"


def version_text() -> str:
    """The two lines of ``--version`` (without the final newline)."""
    from ..readers.c_reader import reader_name

    return f"loop-brake, version {__version__}\nevent reader: {reader_name()}"
