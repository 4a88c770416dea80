"""What a run leaves for people and CI: the summary, ``--json``, ``--html``, the
Markdown of ``$GITHUB_STEP_SUMMARY`` and ``--junit``.

The report is the replay's (``analysis``), counted from the agent's own stream,
so ``loop-brake replay`` of a saved ``--output`` prints the same summary. The run
adds what only it knows: the agent, how the hook was injected, what the hook
itself denied and where it failed open, why the run ended and both exit
statuses. The summary goes to stderr: stdout is the agent's stream.

JUnit: one test case per session of the stream (``classname`` the agent, ``name``
the session); a session the brake stopped is a failure, whose message says why.
Every identifier is escaped for its medium (``render.visible``, then XML or
Markdown); no argument is ever written, only tools, ids and hash prefixes.
"""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from ..analysis import Report, report_to_json
from ..render.visible import visible
from .hook_log import HookLog
from .watch import Decision

__all__ = ["RunResult", "print_summary", "run_json", "step_summary", "write_junit", "write_text"]


@dataclass
class RunResult:
    """One run, as every output reports it."""

    agent: str
    program: str
    injection: str | None
    status: int
    agent_status: int | None
    decision: Decision | None
    report: Report
    hook: HookLog | None
    stop_after: int
    ignored: int
    policy: str | None = None
    session_key: str | None = None
    stopped_sessions: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.decision is None:
            return "the brake did not act"
        if self.decision.kind in ("stop", "ignored", "unreachable"):
            return "stopped by the brake"
        return f"ended: {self.decision.text()}"

    def hook_summary(self) -> str:
        if self.injection is None:
            return "not injected: no command hook for this agent (braked from its stream)"
        if self.hook is None:
            return f"injected ({self.injection})"
        text = (
            f"injected ({self.injection}); it denied {self.hook.denied}, stopped "
            f"{self.hook.stopped}, failed open {self.hook.failures}"
        )
        if self.report.denied and not (self.hook.denied or self.hook.stopped):
            text += (
                "; the stream shows denials the hook never gave: it did not run "
                "(Codex: not trusted, see docs/ci.md) or failed open"
            )
        return text


def _agent_status_text(status: int | None) -> str:
    if status is None:
        return "not started"
    if status < 0:
        return f"killed by signal {-status}"
    return str(status)


def run_json(result: RunResult) -> dict[str, Any]:
    """The ``--json`` document: the replay's, plus ``run``."""
    doc = report_to_json(result.report)
    if result.policy is not None:
        doc["policy"] = result.policy
    decision = result.decision
    doc["run"] = {
        "agent": result.agent,
        "program": result.program,
        "injection": result.injection,
        "status": result.status,
        "agentStatus": result.agent_status,
        "outcome": result.outcome,
        "decision": None
        if decision is None
        else {
            "kind": decision.kind,
            "toolName": decision.tool,
            "hashPrefix": decision.prefix,
            "sessionId": decision.session,
            "reason": decision.text(),
        },
        "stopAfter": result.stop_after,
        "ignoredDenials": result.ignored,
        "session": result.session_key,
        "hook": None
        if result.hook is None
        else {
            "denied": result.hook.denied,
            "stopped": result.hook.stopped,
            "warned": result.hook.warned,
            "failedOpen": result.hook.failures,
            "reasons": list(result.hook.reasons),
        },
    }
    return doc


def write_text(path: str, text: str, append: bool = False) -> None:
    """``text`` to ``path`` (raises OSError); a new file is 0644 as CI artefacts are."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _md(text: str) -> str:
    """An identifier inside a Markdown code span in a table cell."""
    shown = visible(text).replace("`", "'").replace("|", "\\|")
    return f"`{shown}`"


def step_summary(result: RunResult) -> str:
    """The Markdown appended to ``$GITHUB_STEP_SUMMARY``."""
    report = result.report
    lines = [
        f"### loop-brake run: {result.outcome}",
        "",
        "| | |",
        "|---|---|",
        f"| agent | {_md(result.program)} ({result.agent}) |",
        f"| hook | {visible(result.hook_summary()).replace('|', '/')} |",
        f"| exit status | {result.status} "
        f"(the agent's: {_agent_status_text(result.agent_status)}) |",
        f"| calls | {report.calls}, {report.denied} denied, {result.ignored} ignored denial(s) |",
        f"| maxRepeats | {report.max_repeats} ({report.max_repeats_source}) |",
    ]
    if result.policy:
        lines.append(f"| policy | {_md(result.policy)} |")
    if result.decision is not None:
        lines.append(f"| why it ended | {visible(result.decision.text()).replace('|', '/')} |")
    if report.sessions:
        lines += [
            "",
            "| session | calls | denied | longest streak | outcome |",
            "|---|---:|---:|---|---|",
        ]
        for stats in report.sessions:
            longest = stats.longest
            streak = (
                f"{longest.length} x {_md(longest.tool)} {longest.hash_prefix}" if longest else "-"
            )
            outcome = "stopped" if stats.session in result.stopped_sessions else "ok"
            lines.append(
                f"| {_md(stats.session)} | {stats.calls} | {stats.denied} | {streak} | {outcome} |"
            )
    return "\n".join(lines) + "\n\n"


def _xml_text(text: str) -> str:
    return xml_escape(visible(text))


def write_junit(result: RunResult, path: str) -> None:
    """One ``<testsuite>``: a test case per session, a stopped one a failure."""
    report = result.report
    cases: list[str] = []
    failures = 0
    classname = quoteattr(f"loop-brake.{result.agent}")
    sessions = report.sessions
    for stats in sessions:
        stopped = stats.session in result.stopped_sessions
        body = f"calls {stats.calls}, denied {stats.denied}" + (
            f", longest streak {stats.longest.length}" if stats.longest else ""
        )
        case = f"  <testcase classname={classname} name={quoteattr(visible(stats.session))}>\n"
        if stopped and result.decision is not None:
            failures += 1
            message = quoteattr("stopped by the brake: " + visible(result.decision.text()))
            case += (
                f'    <failure message={message} type="loop-brake.stop">'
                f"{_xml_text(body)}</failure>\n"
            )
        case += f"    <system-out>{_xml_text(body)}</system-out>\n  </testcase>\n"
        cases.append(case)
    if not sessions:
        cases.append(
            f'  <testcase classname={classname} name="(no tool call)">\n'
            "    <system-out>the agent made no tool call</system-out>\n  </testcase>\n"
        )
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name="loop-brake run" tests="{len(cases)}" failures="{failures}" '
        f'errors="0">\n'
    )
    write_text(path, head + "".join(cases) + "</testsuite>\n")


def print_summary(result: RunResult) -> None:
    """The replay summary, then the run's own lines, on stderr."""
    from rich.console import Console

    from ..render.terminal import print_replay_summary

    report = result.report
    try:
        terminal = os.isatty(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        terminal = False
    if report.opened_files and report.calls:
        if terminal:
            print_replay_summary(report, console=Console(stderr=True, highlight=False), max_rows=20)
        else:
            buffer = io.StringIO()
            print_replay_summary(report, console=Console(file=buffer, width=1000), max_rows=20)
            text = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())
            sys.stderr.write(text + "\n")
    lines = [
        f"agent: {visible(result.program)} ({result.agent}); hook {visible(result.hook_summary())}",
        f"outcome: {result.outcome}; exit status {result.status} "
        f"(the agent's: {_agent_status_text(result.agent_status)})",
    ]
    if result.decision is not None:
        lines.insert(1, f"why: {visible(result.decision.text())}")
    for line in lines:
        sys.stderr.write(f"loop-brake run: {line}\n")
    sys.stderr.flush()


def dump_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
