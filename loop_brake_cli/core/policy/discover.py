"""Which policy file applies: the one discovery order every command and the library share.

1. ``--policy FILE`` (the caller's explicit path);
2. ``$LOOP_BRAKE_POLICY`` (set but empty: no policy, discovery stops);
3. upward from the working directory, stopping at the repository root (the first
   directory holding ``.git``) or the filesystem root: in each directory
   ``.loop-brake.toml``, else a ``pyproject.toml`` that has a ``[tool.loop-brake]``
   table (a pyproject.toml without one is passed over);
4. ``${XDG_CONFIG_HOME:-~/.config}/loop-brake/policy.toml``;
5. none.

A ``.loop-brake.toml`` or ``policy.toml`` that exists but is not a regular file (a
FIFO, a device, a directory) is found all the same, so the loader refuses it with
its reason (``load.read_policy_bytes``) instead of the brake silently running
without it or with the next file up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from .model import Policy

__all__ = ["ENV_POLICY", "discover_policy", "find_policy_file"]

ENV_POLICY = "LOOP_BRAKE_POLICY"
LOCAL_FILE = ".loop-brake.toml"
_HEAD_BYTES = 1 << 20  # load.MAX_POLICY_BYTES, not imported: the hook's common case has no file


def _has_table(path: str) -> bool:
    """A pyproject.toml with a ``[tool.loop-brake]`` table (or a sub-table of it). Only
    its first ``MAX_POLICY_BYTES`` are looked at, never blocking: a larger file with
    the table is then refused by the loader, with its reason."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        data = os.read(fd, _HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return b"tool.loop-brake" in data or b'tool."loop-brake"' in data


def find_policy_file(
    explicit: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> str | None:
    """The path of the policy file that applies, or None (see the module's order)."""
    if explicit is not None:
        return explicit
    environ = os.environ if env is None else env
    named = environ.get(ENV_POLICY)
    if named is not None:
        return named or None
    directory = os.path.abspath(cwd or os.getcwd())
    while True:
        local = os.path.join(directory, LOCAL_FILE)
        if os.path.exists(local):  # a FIFO or a device too: the loader refuses it, said
            return local
        pyproject = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(pyproject) and _has_table(pyproject):
            return pyproject
        parent = os.path.dirname(directory)
        if os.path.exists(os.path.join(directory, ".git")) or parent == directory:
            break
        directory = parent
    config = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    user = os.path.join(config, "loop-brake", "policy.toml")
    return user if os.path.exists(user) else None


def discover_policy(
    explicit: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Policy | None:
    """The policy that applies (loaded and validated), or None; ``PolicyError`` if bad."""
    path = find_policy_file(explicit, env, cwd)
    if path is None:
        return None
    from .load import load_policy  # only when there is a file: the hook's common case has none

    return load_policy(path)
