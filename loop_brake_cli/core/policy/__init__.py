"""Policies beyond the one knob: per-tool limits and exemptions, the cycle brake, the stop.

A policy is a TOML file (``docs/policies.md``). This package reads and checks it
(``load``), finds which file applies (``discover``), holds it as data with the
first-matching-rule lookup (``model``) and keeps the cycle window (``cycles``).
The decision itself is ``streak.policy_step``, the one rule every front-end
calls. Core: no click, no rich.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

# Where each public name lives. Imported on first use: the hook looks for a policy
# file before every tool call and must not pay for the TOML reader and the rule
# model when there is none.
_HOME = {
    "ENV_POLICY": "discover",
    "discover_policy": "discover",
    "find_policy_file": "discover",
    "MAX_PERIOD": "load",
    "MAX_WINDOW": "load",
    "MAX_PROGRESS_MAX": "load",
    "DEFAULT_PROGRESS_MAX": "model",
    "SameResultRule": "model",
    "PolicyError": "load",
    "Problem": "load",
    "check_policy": "load",
    "load_policy": "load",
    "parse_policy": "load",
    "CycleRule": "model",
    "Policy": "model",
    "SameErrorRule": "model",
    "StopRule": "model",
    "ToolRule": "model",
    "WindowRule": "model",
    "glob_match": "model",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # on first use: the hook imports this package for discover only

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
