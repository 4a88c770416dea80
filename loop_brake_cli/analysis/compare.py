"""``replay --compare-policy``: what the seed's brake and a policy would each deny, per session.

Every call is hashed once and counted by two brakes side by side: the seed's
(``LoopBrake`` without a policy, the maxRepeats of the command line) and one
under the policy. Per session: calls, denials by each, and the policy's
denials by rule (streak, cycle, stop) and its exempt passes. Only tool names,
session ids and counts; never arguments.

Under a policy's progress mode the transcripts' results are fed to the policy's
brake alone (the seed never sees results), and each session also says where
each brake denied first (the call's number in the session and its line), so a
poll whose output kept changing is seen passing and a stuck loop is seen denied
at the same call as before. Without progress the output is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, call_digest
from ..core.records import BadRecord, ToolCall, ToolResult, UserTurn
from ..render.visible import visible

__all__ = ["Comparison", "SessionComparison", "compare_files"]

SCHEMA = "loop-brake.compare-policy/1"
CHANGES = ("earlier", "later", "same", "policy only", "seed only", "none")
"""What a policy changes in a session, by its first denial against the seed's."""


def _camel(words: str) -> str:
    first, *rest = words.split()
    return first + "".join(w.capitalize() for w in rest)


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
    seed_first: tuple[int, int | str | None] | None = None  # (call number, line or path)
    policy_first: tuple[int, int | str | None] | None = None
    results: int = 0
    results_ignored: int = 0
    policy_only: int = 0  # calls the policy denies and the seed lets run
    seed_only: int = 0  # calls the seed denies and the policy lets run
    warned: int = 0  # calls the policy lets run with a warning (warn_at)

    @property
    def change(self) -> str:
        """When the policy first denies in this session against the seed: ``earlier``,
        ``later``, ``same``, ``policy only``, ``seed only`` or ``none`` (neither denies)."""
        seed, policy = self.seed_first, self.policy_first
        if seed is None:
            return "none" if policy is None else "policy only"
        if policy is None:
            return "seed only"
        return "earlier" if policy[0] < seed[0] else "later" if policy[0] > seed[0] else "same"

    def to_json(self, progress: bool = False) -> dict[str, Any]:
        out = {
            "file": self.file,
            "session": self.session,
            "calls": self.calls,
            "seedDenied": self.seed_denied,
            "policyDenied": self.policy_denied,
            "policyByRule": dict(sorted(self.by_rule.items())),
            "exempt": self.exempt,
            "seedDeniedTools": dict(sorted(self.denied_tools_seed.items())),
            "policyDeniedTools": dict(sorted(self.denied_tools_policy.items())),
            "change": self.change,
            "policyOnlyDenied": self.policy_only,
            "seedOnlyDenied": self.seed_only,
            "policyWarned": self.warned,
        }
        if progress:
            out["seedFirstDenial"] = _where_json(self.seed_first)
            out["policyFirstDenial"] = _where_json(self.policy_first)
            out["results"] = self.results
            out["resultsIgnored"] = self.results_ignored
        return out


def _where_json(where: tuple[int, int | str | None] | None) -> dict[str, Any] | None:
    if where is None:
        return None
    call, at = where
    return {"call": call, ("path" if isinstance(at, str) else "line"): at}


def _where_text(where: tuple[int, int | str | None] | None) -> str:
    if where is None:
        return "-"
    call, at = where
    if at is None:
        return f"call {call}"
    return f"call {call} ({'' if isinstance(at, str) else 'line '}{at})"


@dataclass(slots=True)
class Comparison:
    max_repeats: int
    policy_path: str | None
    sessions: list[SessionComparison] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unreadable: int = 0
    files: int = 0
    progress: bool = False  # the policy's progress mode: results fed to its brake
    results: int = 0
    results_ignored: int = 0

    def totals(self) -> dict[str, int]:
        totals = {
            "calls": sum(s.calls for s in self.sessions),
            "seedDenied": sum(s.seed_denied for s in self.sessions),
            "policyDenied": sum(s.policy_denied for s in self.sessions),
            "policyOnlyDenied": sum(s.policy_only for s in self.sessions),
            "seedOnlyDenied": sum(s.seed_only for s in self.sessions),
            "policyWarned": sum(s.warned for s in self.sessions),
        }
        if self.progress:
            totals["results"] = self.results
            totals["resultsIgnored"] = self.results_ignored
        return totals

    def change_counts(self) -> dict[str, int]:
        """Sessions by when the policy first denies against the seed
        (``SessionComparison.change``), in ``CHANGES`` order."""
        counts = dict.fromkeys(CHANGES, 0)
        for s in self.sessions:
            counts[s.change] += 1
        return counts

    def changes(self) -> dict[str, int]:
        """``change_counts`` as ``--json`` names them."""
        return {_camel(k): v for k, v in self.change_counts().items()}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "maxRepeats": self.max_repeats,
            "policy": self.policy_path,
        }
        if self.progress:
            out["progress"] = True
        out.update(
            {
                "files": self.files,
                "totals": self.totals(),
                "changes": self.changes(),
                "sessions": [s.to_json(self.progress) for s in self.sessions],
                "unreadable": self.unreadable,
                "errors": self.errors,
            }
        )
        return out


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
    from ..formats import parse_records
    from ..formats._detect import choose
    from ..readers.fast_observe import observe_for
    from ..readers.reader import UnreadableInputError, cannot_open, open_source
    from .replay import internal_error

    result = Comparison(max_repeats, None if policy is None else policy.path)
    seed = LoopBrake(max_repeats, policy=None)
    seed_observe = observe_for(seed)  # seed.observe, built faster (a memory brake)
    braked = LoopBrake(max_repeats, policy=policy)
    result.progress = braked.progress
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
            for record in parse_records(choice.adapter, source, braked.progress, braked.user_turns):
                if record.__class__ is not ToolCall:
                    if record.__class__ is BadRecord:
                        result.unreadable += 1
                    elif record.__class__ is ToolResult and braked.progress:
                        _result(result, rows, braked, record, name, continue_sessions)  # type: ignore[arg-type]
                    elif record.__class__ is UserTurn:  # only under reset_on_user_turn
                        braked.user_turn(record.session)  # type: ignore[union-attr]
                    continue
                try:
                    digest = call_digest(record.tool, record.args)  # type: ignore[union-attr]
                    braked_digest = (  # a policy hash only under args_ignore
                        braked.digest(record.tool, record.args)  # type: ignore[union-attr]
                        if braked.ignores_args
                        else digest
                    )
                except (JSONInputError, TypeError):
                    result.unreadable += 1
                    continue
                calls += 1
                args = (record.session, record.tool, digest, record.call_id)  # type: ignore[union-attr]
                before = seed_observe(*args)
                after = braked.observe(record.session, record.tool, braked_digest, record.call_id)  # type: ignore[union-attr]
                key = (name if not continue_sessions else "", before.session_id)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = SessionComparison(name, before.session_id)
                    result.sessions.append(row)
                _add(row, before, after, (record.line if record.path is None else record.path))  # type: ignore[union-attr]
        except UnreadableInputError as exc:
            result.unreadable += 1
            result.errors.append(f"{name}: {exc}")
        except Exception as exc:  # an adapter's bug: named by class only
            result.unreadable += 1
            result.errors.append(f"{name}: {internal_error(None, 0, exc)}")
        finally:
            source.close()
    return result


def compare_file(job: tuple[str, dict[str, Any]]) -> Comparison:
    """One file compared on its own (a ``replay --compare-policy -j`` worker's task):
    ``(path, compare_files's keyword arguments)``."""
    path, options = job
    return compare_files([path], **options)


def merge_comparisons(parts: Sequence[Comparison]) -> Comparison:
    """Per-file comparisons as one, in input order: what ``compare_files`` gives for the
    same files without ``continue_sessions``."""
    first = parts[0]
    merged = Comparison(first.max_repeats, first.policy_path, progress=first.progress)
    for part in parts:
        merged.sessions.extend(part.sessions)
        merged.errors.extend(part.errors)
        merged.unreadable += part.unreadable
        merged.files += part.files
        merged.results += part.results
        merged.results_ignored += part.results_ignored
    return merged


def _result(
    result: Comparison,
    rows: dict[tuple[str, str], SessionComparison],
    braked: LoopBrake,
    record: ToolResult,
    name: str,
    continue_sessions: bool,
) -> None:
    """Feed one result to the policy's brake; one that is not JSON is unreadable."""
    try:
        paired = braked.observe_result(
            record.session, record.call_id, record.result, record.digest, record.error
        )
    except (JSONInputError, TypeError):
        result.unreadable += 1
        return
    result.results += 1
    result.results_ignored += not paired
    row = rows.get((name if not continue_sessions else "", record.session))
    if row is not None:
        row.results += 1
        row.results_ignored += not paired


def _add(row: SessionComparison, before: Any, after: Any, at: int | str | None = None) -> None:
    row.calls += 1
    if before.denied and row.seed_first is None:
        row.seed_first = (row.calls, at)
    if after.denied and row.policy_first is None:
        row.policy_first = (row.calls, at)
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
    if after.denied and not before.denied:
        row.policy_only += 1
    elif before.denied and not after.denied:
        row.seed_only += 1
    if not after.denied and after.warned:
        row.warned += 1


def _changes_text(result: Comparison, totals: dict[str, int]) -> list[str]:
    """What the policy changes, in two lines: sessions by first denial, and calls."""
    counts = result.change_counts()
    del counts["none"]
    sessions = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    calls = (
        f"calls: {totals['policyOnlyDenied']} denied by the policy alone (saved), "
        f"{totals['seedOnlyDenied']} denied by the seed alone (let run)"
    )
    if totals["policyWarned"]:
        calls += f", {totals['policyWarned']} warned"
    return [
        f"policy's first denial against the seed's, by session: {sessions or 'no denials'}",
        calls,
    ]


def render_comparison(result: Comparison) -> str:
    """The side-by-side table as plain text (one line per session, then the totals);
    identifiers from the input with their controls escaped (``visible``)."""
    header: tuple[str, ...] = (
        "file",
        "session",
        "calls",
        "seed denies",
        "policy denies",
        "policy by rule",
    )
    if result.progress:
        header += ("seed first denial", "policy first denial")
    rows = [header]
    for s in result.sessions:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(s.by_rule.items())) or "-"
        if s.exempt:
            rules += f"; {s.exempt} exempt"
        row: tuple[str, ...] = (
            visible(s.file),
            visible(s.session),
            str(s.calls),
            str(s.seed_denied),
            str(s.policy_denied),
            rules,
        )
        if result.progress:
            row += (_where_text(s.seed_first), _where_text(s.policy_first))
        rows.append(row)
    totals = result.totals()
    total: tuple[str, ...] = (
        "total",
        "",
        str(totals["calls"]),
        str(totals["seedDenied"]),
        str(totals["policyDenied"]),
        "",
    )
    if result.progress:
        total += ("", "")
    rows.append(total)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        f"seed: maxRepeats {result.max_repeats}    policy: {result.policy_path or 'none'}"
        + ("    progress: results fed to the policy" if result.progress else ""),
    ]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    lines.extend(_changes_text(result, totals))
    for s in result.sessions:
        diff = sorted(set(s.denied_tools_seed) | set(s.denied_tools_policy))
        for tool in diff:
            a, b = s.denied_tools_seed.get(tool, 0), s.denied_tools_policy.get(tool, 0)
            if a != b:
                lines.append(
                    f"  {visible(s.file)} {visible(s.session)}: "
                    f"tool {visible(json.dumps(tool, ensure_ascii=False))}: "
                    f"seed denies {a}, policy denies {b}"
                )
    if result.progress:
        lines.append(
            f"results: {result.results} read, {result.results_ignored} ignored "
            "(not for the latest call of their session)"
        )
    return "\n".join(lines) + "\n"
