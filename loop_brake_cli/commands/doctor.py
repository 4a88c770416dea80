"""``loop-brake doctor``: each check of the installation with ✓ or ✗ and its fix.

The checks are ``doctor/``'s; this draws them, one per line (the fix indented
below), or as one JSON document with ``--json``, and turns them into the exit
status: 1 when any check failed (something would leave the brake off).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from ..core.exitcodes import ExitStatus, epilog

MARKS = {"ok": "✓", "fail": "✗", "warn": "!", "info": "-"}
ASCII_MARKS = {"ok": "+", "fail": "x", "warn": "!", "info": "-"}


@click.command("doctor", epilog=epilog("doctor"))
@click.option("--store", "store", metavar="URL", help="Check this store instead of the hook's.")
@click.option(
    "--policy", "policy", metavar="FILE", help="Check this policy instead of the one found."
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    type=click.Choice(["claude-code", "codex", "gemini", "cursor"]),
    help="Check only this agent; it must have a hook (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def doctor_command(
    store: str | None, policy: str | None, agents: tuple[str, ...], as_json: bool
) -> int:
    """Check that the brake is on, as installed here: each check with ✓ or ✗ and its fix.

    Hook entries in each agent's settings (Claude Code, Codex, Gemini CLI,
    Cursor; user and this project's) resolve to a program and answer one canary
    decision in a throwaway session; the store answers and keeps every streak
    (Redis: maxmemory-policy noeviction); the extras it needs are installed; the
    policy found from here loads; the C reader; fail-open notices of the last
    week. Exits 1 when something would leave the brake off.
    """
    from ..doctor import FAIL, Options, diagnose

    options = Options(store, policy, agents, os.getcwd(), dict(os.environ))
    checks = diagnose(options)
    failed = sum(check.status == FAIL for check in checks)
    if as_json:
        document = {
            "ok": not failed,
            "checks": [
                {"check": c.name, "status": c.status, "detail": c.detail, "fix": c.fix or None}
                | c.data
                for c in checks
            ],
        }
        click.echo(json.dumps(document, ensure_ascii=False, indent=2))
    else:
        _draw(checks, failed)
    return ExitStatus.BRAKE if failed else ExitStatus.OK


def _draw(checks: list[Any], failed: int) -> None:
    from ..render.visible import visible

    marks = MARKS if _can_encode("✓✗") else ASCII_MARKS
    width = max(len(check.name) for check in checks)
    for check in checks:
        click.echo(f"{marks[check.status]} {check.name:<{width}}  {visible(check.detail)}")
        if check.fix and check.status != "ok":
            click.echo(f"  {'':<{width}}  fix: {visible(check.fix)}")
    warned = sum(check.status == "warn" for check in checks)
    if failed:
        said = f"{failed} problem{'s' * (failed != 1)} would leave the brake off ({marks['fail']})"
    else:
        said = "the brake is on: no check failed"
    if warned:
        said += f"; {warned} warning{'s' * (warned != 1)} ({marks['warn']})"
    click.echo(said)


def _can_encode(text: str) -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
