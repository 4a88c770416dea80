"""The TOML reader of the policy and prices files, found on first use.

The standard library has one from Python 3.11; on 3.10 the ``tomli`` package is
the same reader under another name, and without it the caller says what to
install rather than failing on import (the hook imports nothing of this when no
file is found).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["tomllib"]


def tomllib() -> Any:
    """The ``tomllib`` module (or ``tomli``), else None."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # Python 3.10
        import tomli
    except ModuleNotFoundError:
        return None
    return tomli
