"""``replay --compare-policy``: what the seed's brake and a policy would each deny, per session.

Every call is hashed once and counted by two brakes side by side: the seed's
(``LoopBrake`` without a policy, the maxRepeats of the command line) and one
under the policy. Per session: calls, denials by each, and the policy's
denials by rule (streak, cycle, stop) and its exempt passes. Only tool names,
session ids and counts; never arguments.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..brake import LoopBrake
from ..canonical import JSONInputError, call_digest
from ..records import BadRecord, ToolCall

__all__ = ["Comparison", "SessionComparison", "compare_files"]

SCHEMA = "loop-brake.compare-policy/1"


@dataclass(slots=True)
class SessionComparison:
    """One session (of one file unless sessions continue)."""

    file: str
    session: str
    calls: int = 0
    seed_denied: int = 0
    policy_denied: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)
    exempt: int = 0
    denied_tools_seed: dict[str, int] = field(default_factory=dict)
    denied_tools_policy: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "session": self.session,
            "calls": self.calls,
            "seedDenied": self.seed_denied,
            "policyDenied": self.policy_denied,
            "policyByRule": dict(sorted(self.by_rule.items())),
            "exempt": self.exempt,
            "seedDeniedTools": dict(sorted(self.denied_tools_seed.items())),
            "policyDeniedTools": dict(sorted(self.denied_tools_policy.items())),
        }


@dataclass(slots=True)
class Comparison:
    max_repeats: int
    policy_path: str | None
    sessions: list[SessionComparison] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unreadable: int = 0
    files: int = 0

    def totals(self) -> dict[str, int]:
        return {
            "calls": sum(s.calls for s in self.sessions),
            "seedDenied": sum(s.seed_denied for s in self.sessions),
            "policyDenied": sum(s.policy_denied for s in self.sessions),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "maxRepeats": self.max_repeats,
            "policy": self.policy_path,
            "files": self.files,
            "totals": self.totals(),
            "sessions": [s.to_json() for s in self.sessions],
            "unreadable": self.unreadable,
            "errors": self.errors,
        }


def compare_files(
    paths: Sequence[str],
    *,
    max_repeats: int,
    policy: Any,
    format_name: str | None,
    max_line_bytes: int,
    continue_sessions: bool = False,
    in_directory: Collection[str] = (),
    strict: bool = False,
) -> Comparison:
    """Replay ``paths`` through the seed's brake and the policy's, side by side."""
    from ..formats._detect import choose
    from ..reader import UnreadableInputError, cannot_open, open_source
    from .replay import internal_error

    result = Comparison(max_repeats, None if policy is None else policy.path)
    seed = LoopBrake(max_repeats, policy=None)
    braked = LoopBrake(max_repeats, policy=policy)
    rows: dict[tuple[str, str], SessionComparison] = {}
    for index, path in enumerate(paths):
        if index and not continue_sessions:
            seed.reset()
            braked.reset()
            rows = {}
        try:
            source = open_source(path, max_line_bytes)
        except OSError as exc:
            result.unreadable += 1
            result.errors.append(cannot_open(path, exc))
            continue
        name = source.name
        try:
            choice = choose(source.head(), name, format_name, path in in_directory, strict)
            if choice.skip is not None:
                continue
            if choice.adapter is None:
                result.unreadable += 1
                result.errors.append(f"{name}: {choice.error}")
                continue
            result.files += 1
            calls = 0
            for record in choice.adapter.parse(source):
                if record.__class__ is not ToolCall:
                    if record.__class__ is BadRecord:
                        result.unreadable += 1
                    continue
                try:
                    digest = call_digest(record.tool, record.args)  # type: ignore[union-attr]
                except (JSONInputError, TypeError):
                    result.unreadable += 1
                    continue
                calls += 1
                args = (record.session, record.tool, digest, record.call_id)  # type: ignore[union-attr]
                before = seed.observe(*args)
                after = braked.observe(*args)
                key = (name if not continue_sessions else "", before.session_id)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = SessionComparison(name, before.session_id)
                    result.sessions.append(row)
                _add(row, before, after)
        except UnreadableInputError as exc:
            result.unreadable += 1
            result.errors.append(f"{name}: {exc}")
        except Exception as exc:  # an adapter's bug: named by class only
            result.unreadable += 1
            result.errors.append(f"{name}: {internal_error(None, 0, exc)}")
        finally:
            source.close()
    return result


def _add(row: SessionComparison, before: Any, after: Any) -> None:
    row.calls += 1
    if before.denied:
        row.seed_denied += 1
        row.denied_tools_seed[before.tool_name] = row.denied_tools_seed.get(before.tool_name, 0) + 1
    if after.denied:
        row.policy_denied += 1
        rule = after.rule or "streak"
        row.by_rule[rule] = row.by_rule.get(rule, 0) + 1
        tools = row.denied_tools_policy
        tools[after.tool_name] = tools.get(after.tool_name, 0) + 1
    if after.exempt:
        row.exempt += 1


def render_comparison(result: Comparison) -> str:
    """The side-by-side table as plain text (one line per session, then the totals)."""
    header = ("file", "session", "calls", "seed denies", "policy denies", "policy by rule")
    rows = [header]
    for s in result.sessions:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(s.by_rule.items())) or "-"
        if s.exempt:
            rules += f"; {s.exempt} exempt"
        rows.append(
            (s.file, s.session, str(s.calls), str(s.seed_denied), str(s.policy_denied), rules)
        )
    totals = result.totals()
    rows.append(
        (
            "total",
            "",
            str(totals["calls"]),
            str(totals["seedDenied"]),
            str(totals["policyDenied"]),
            "",
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        f"seed: maxRepeats {result.max_repeats}    policy: {result.policy_path or 'none'}",
    ]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    for s in result.sessions:
        diff = sorted(set(s.denied_tools_seed) | set(s.denied_tools_policy))
        for tool in diff:
            a, b = s.denied_tools_seed.get(tool, 0), s.denied_tools_policy.get(tool, 0)
            if a != b:
                lines.append(
                    f"  {s.file} {s.session}: tool {json.dumps(tool, ensure_ascii=False)}: "
                    f"seed denies {a}, policy denies {b}"
                )
    return "\n".join(lines) + "\n"
