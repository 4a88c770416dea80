"""The denial as people read it on stderr: the call's id as sent, its tool, the hash
prefix and the rule; never an argument."""

from __future__ import annotations

import json

from ..core.verdicts import Verdict

__all__ = ["describe_denial"]


def describe_denial(id_bytes: bytes, verdict: Verdict) -> str:
    """The call for a stderr note: the id as sent, the tool, the prefix; no arguments."""
    name = json.dumps(verdict.tool_name, ensure_ascii=False)
    if verdict.rule is None:
        rule = f"count {verdict.count}, limit {verdict.max_repeats}"
    else:  # under a policy: the rule that decided and its limit
        rule = f"count {verdict.count}, rule {verdict.rule}, limit {verdict.limit}"
    return (
        f"tools/call id {id_bytes.decode('utf-8', 'replace')} (tool {name}, "
        f"{'policy hash' if verdict.policy_hash else 'call'} {verdict.hash_prefix}, {rule})"
    )
