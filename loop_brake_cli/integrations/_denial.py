"""What every integration hands over with a denial, besides the core's text."""

from __future__ import annotations

from typing import Any

from ..core.verdicts import CODE, PLUGIN, Verdict

META_KEY = "loop-brake/denial"
"""The key of the structured denial where a framework carries metadata (MCP ``_meta``)."""


def denial_fields(verdict: Verdict) -> dict[str, Any]:
    """The denial as data, named as in the verdict lines: never the arguments. Under a
    policy also ``rule`` (``streak``, ``progress_max``, ``cycle``, ``window``,
    ``same_error``, ``same_result`` or ``stop``),
    and ``policyHash`` when the prefix is a policy hash (``args_ignore``)."""
    fields: dict[str, Any] = {
        "code": CODE,
        "plugin": PLUGIN,
        "toolName": verdict.tool_name,
        "count": verdict.count,
        "maxRepeats": verdict.max_repeats,
        "hashPrefix": verdict.hash_prefix,
    }
    if verdict.rule is not None:
        fields["rule"] = verdict.rule
    if verdict.policy_hash:  # hashed without the rule's args_ignore paths
        fields["policyHash"] = True
    return fields
