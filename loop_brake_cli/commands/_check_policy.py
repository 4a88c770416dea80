"""``check-config --policy FILE``: a policy file checked and described, or its located errors."""

from __future__ import annotations

import json
from typing import Any

import click

from ..core.exitcodes import ExitStatus
from ..core.policy import DEFAULT_PROGRESS_MAX, PolicyError, check_policy
from ..core.progress import DEFAULT_IGNORE
from ..render.visible import visible

PROG = "loop-brake check-config"


def _describe(policy: Any) -> list[str]:
    lines = [f"policy {policy.path}"]
    if policy.empty:
        lines.append("  no rules: the brake behaves exactly as without a policy")
    for rule in policy.tools:
        what = "exempt" if rule.exempt else f"max_repeats {rule.max_repeats or 'global'}"
        if rule.progress is not None:
            what += ", progress" if rule.progress else ", no progress"
        if rule.warn_at is not None:
            what += f", warn_at {rule.warn_at}"
        if rule.progress_max is not None:
            what += f", progress_max {rule.progress_max}"
        if rule.same_result is False:
            what += ", not judged by same_result"
        if rule.args_ignore:  # the paths are the file's own text: shown, never arguments
            what += f", args_ignore {json.dumps(list(rule.args_ignore), ensure_ascii=False)}"
            what += " (counted on a policy hash)"
        where = f"line {rule.line}" if rule.line else f"rule {rule.index + 1}"
        lines.append(f"  tools ({where}): {', '.join(rule.patterns)} -> {what}")
    if policy.cycles is not None:
        lines.append(
            f"  cycles: periods 2..{policy.cycles.max_period}, "
            f"denied at {policy.cycles.max_repeats} repetitions in a row"
        )
    if policy.window is not None:
        lines.append(
            f"  window: a call seen {policy.window.max_repeats} times "
            f"in the last {policy.window.calls} calls is denied"
        )
    if policy.same_error is not None:
        lines.append(
            f"  same_error: after {policy.same_error.after} identical errors in a row "
            "from one tool, its next call is denied"
        )
    if policy.same_result is not None:
        scope = "any tool" if policy.same_result.any_tool else "one tool"
        lines.append(
            f"  same_result: after {policy.same_result.after} identical results in a row "
            f"from {scope}, whatever the arguments, the next call is denied"
        )
    if policy.stop is not None:
        lines.append(f"  stop: after {policy.stop.after_denials} denials in a row")
    if policy.reset_on_user_turn:
        lines.append("  reset_on_user_turn: a user turn ends every streak of its session")
    if policy.warn_at is not None:
        lines.append(
            f"  warn_at: from {policy.warn_at} identical calls in a row"
            " (the call runs; the model is told)"
        )
    if policy.uses_progress:
        scope = "every tool" if policy.progress else "the tools whose rule says so"
        lines.append(f"  progress: on for {scope} (a changed result restarts the streak)")
        ceiling = (
            f"{policy.progress_max}"
            if policy.progress_max is not None
            else f"the default {DEFAULT_PROGRESS_MAX} (or the call's limit when higher)"
        )
        lines.append(
            f"  progress_max: {ceiling} identical calls in a row are denied, results changing"
            " or not"
        )
        defaults = policy.result_ignore[: len(DEFAULT_IGNORE)] == DEFAULT_IGNORE
        own = len(policy.result_ignore) - (len(DEFAULT_IGNORE) if defaults else 0)
        lines.append(
            f"  result_ignore: {'the defaults' if defaults else 'no defaults'}"
            f" + {own} pattern(s) of this file"
        )
    return lines


def _rule_json(rule: Any) -> dict[str, Any]:
    out = {
        "match": list(rule.patterns),
        "maxRepeats": rule.max_repeats,
        "exempt": rule.exempt,
        "line": rule.line,
    }
    if rule.progress is not None:
        out["progress"] = rule.progress
    if rule.warn_at is not None:
        out["warnAt"] = rule.warn_at
    if rule.args_ignore:  # else the rule is what it was before the key
        out["argsIgnore"] = list(rule.args_ignore)
    if rule.progress_max is not None:  # likewise
        out["progressMax"] = rule.progress_max
    if rule.same_result is not None:  # likewise
        out["sameResult"] = rule.same_result
    return out


def _policy_json(policy: Any) -> dict[str, Any]:
    out = {
        "tools": [_rule_json(rule) for rule in policy.tools],
        "cycles": None
        if policy.cycles is None
        else {"maxPeriod": policy.cycles.max_period, "maxRepeats": policy.cycles.max_repeats},
        "stop": None if policy.stop is None else {"afterDenials": policy.stop.after_denials},
    }
    if policy.window is not None:  # else the document is what it was before the rule
        out["window"] = {"calls": policy.window.calls, "maxRepeats": policy.window.max_repeats}
    if policy.same_error is not None:
        out["sameError"] = {"after": policy.same_error.after}
    if policy.same_result is not None:  # else the document is what it was before the rule
        rule = policy.same_result
        out["sameResult"] = {"after": rule.after, "anyTool": rule.any_tool}
    if policy.uses_progress:  # else the document is what it was before progress existed
        out["progress"] = policy.progress
        out["resultIgnore"] = list(policy.result_ignore)
        out["progressMax"] = policy.progress_max  # null: the default (DEFAULT_PROGRESS_MAX)
    if policy.reset_on_user_turn:  # likewise
        out["resetOnUserTurn"] = True
    if policy.uses_warn:  # likewise: no key before warn_at is used
        out["warnAt"] = policy.warn_at
    return out


def check_policy_file(path: str, as_json: bool, strict: bool) -> int:
    """Exit 0 (usable), 1 (warnings and --strict), 2 (errors), 3 (cannot be opened)."""
    try:
        policy, warnings = check_policy(path)
    except PolicyError as exc:
        status = ExitStatus.UNREADABLE if exc.unopened else ExitStatus.USAGE
        if as_json:
            doc = {
                "status": int(status),
                "policy": path,
                "warnings": [],
                "errors": [problem.to_json() for problem in exc.problems],
                "error": str(exc),
            }
            click.echo(json.dumps(doc, ensure_ascii=False))
        else:
            for problem in exc.problems:
                text = f"{problem}" if problem.line else f"{PROG}: {problem}"
                click.echo(visible(text, lines=True), err=True)
        return status
    status = ExitStatus.BRAKE if strict and warnings else ExitStatus.OK
    if as_json:
        doc = {
            "status": int(status),
            "policy": path,
            **_policy_json(policy),
            "warnings": [w.to_json() for w in warnings],
            "errors": [],
        }
        click.echo(json.dumps(doc, ensure_ascii=False))
        return status
    for line in _describe(policy):
        click.echo(line)
    for warning in warnings:
        click.echo(visible(str(warning), lines=True), err=True)
    if status is ExitStatus.BRAKE:
        click.echo(f"{PROG}: {len(warnings)} warning(s) and --strict", err=True)
    return status
