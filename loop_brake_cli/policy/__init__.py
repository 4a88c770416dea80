"""Policies beyond the one knob: per-tool limits and exemptions, the cycle brake, the stop.

A policy is a TOML file (``docs/policies.md``). This package reads and checks it
(``load``), finds which file applies (``discover``), holds it as data with the
first-matching-rule lookup (``model``) and keeps the cycle window (``cycles``).
The decision itself is ``streak.policy_step``, the one rule every front-end
calls. Core: no click, no rich.
"""

from __future__ import annotations

from .discover import ENV_POLICY, discover_policy, find_policy_file
from .load import MAX_PERIOD, PolicyError, Problem, check_policy, load_policy, parse_policy
from .model import CycleRule, Policy, StopRule, ToolRule, glob_match

__all__ = [
    "ENV_POLICY",
    "MAX_PERIOD",
    "CycleRule",
    "Policy",
    "PolicyError",
    "Problem",
    "StopRule",
    "ToolRule",
    "check_policy",
    "discover_policy",
    "find_policy_file",
    "glob_match",
    "load_policy",
    "parse_policy",
]
