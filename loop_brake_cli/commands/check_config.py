"""``loop-brake check-config``: the maxRepeats a harness composition will really use.

The plugin rejects an unusable value only when it applies, and a typo'd key is
worse (the key is simply absent, so the brake silently runs with the default).
This command finds both before deployment; the reading and composition live in
``loop_brake_cli.config``, this module only prints and picks the exit status.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click

from ..config import (
    DEFAULT_PATCH_FILE,
    ConfigError,
    ConfigReport,
    ConfigWarning,
    Location,
    PluginNotFoundError,
    Touch,
    check_config,
)
from ..core.exitcodes import ExitStatus, epilog
from ..core.limits import InvalidMaxRepeatsError
from ..render.visible import visible
from ._command import Command
from ._options import Count, policy_option, unopenable

PROG = "loop-brake check-config"
DEFAULT_CANDIDATES = (DEFAULT_PATCH_FILE, "cordis.patch.yaml")
NO_PATCH_FILE = (
    f"no PATCH_FILE given and no ./{DEFAULT_PATCH_FILE} here; "
    "name the patch layers in composition order"
)


@click.command(
    "check-config",
    cls=Command,
    epilog=epilog("check-config"),
    short_help="Report the maxRepeats a harness composition will use; fail on mistakes.",
)
@click.argument("patch_files", nargs=-1, type=click.Path(dir_okay=False), metavar="[PATCH_FILE]...")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report as one JSON object (errors too; nothing on stderr).",
)
@click.option("--strict", is_flag=True, help="Exit 1 if there is any warning.")
@click.option(
    "--no-env",
    is_flag=True,
    help="Ignore $DSH_LOOP_BRAKE_MAX_REPEATS (check the files' own intent).",
)
@click.option(
    "--expect",
    type=Count(1),
    default=None,
    metavar="N",
    help="Exit 1 unless the effective maxRepeats is N.",
)
@policy_option(
    "Check this policy file instead (located errors, shadowed rules; see docs/policies.md)."
)
def check_config_command(
    patch_files: tuple[str, ...],
    as_json: bool,
    strict: bool,
    no_env: bool,
    expect: int | None,
    policy_path: str | None = None,
) -> int:
    """Compose the patch layers PATCH_FILE... (in order, later wins) and report
    the effective maxRepeats of the loop-brake row and where it came from.

    \b
    With no PATCH_FILE, ./cordis.patch.yml (or .yaml) is read.
    Errors (exit 2), each as file:line:column: YAML syntax; a maxRepeats that is
    not an integer >= 1; an unknown key in the row's config (maxRepeat,
    max_repeats...); a config that is not a mapping; an invalid
    $DSH_LOOP_BRAKE_MAX_REPEATS when the row sets no maxRepeats.
    Warnings (exit 0, or 1 with --strict): a later override dropped maxRepeats;
    maxRepeats 1 or above 50; entries of unknown kind; a disabled row.
    A PATCH_FILE that cannot be opened: exit 3.
    No loop-brake row in the composition: exit 4.

    \b
    With --policy FILE, the policy file is checked instead: TOML syntax, unknown
    keys (with a did-you-mean), limits below 1, wrong types (exit 2, each as
    file:line:column); a rule that can never match because an earlier rule
    shadows it is a warning (exit 1 with --strict).
    """
    if policy_path is not None:
        if patch_files or expect is not None:
            return _fail(
                as_json,
                ExitStatus.USAGE,
                [(None, "--policy checks a policy file alone: no PATCH_FILE or --expect")],
                expect,
            )
        from ._check_policy import check_policy_file

        return check_policy_file(policy_path, as_json, strict)
    paths = list(patch_files)
    if not paths:
        found = next((p for p in DEFAULT_CANDIDATES if os.path.isfile(p)), None)
        if found is None:
            return _fail(
                as_json,
                ExitStatus.USAGE,
                [(None, NO_PATCH_FILE)],
                expect,
            )
        paths = [found]
    missing = unopenable(paths)
    if missing is not None:
        return _fail(as_json, ExitStatus.UNREADABLE, [(None, missing)], expect, paths)
    try:
        report = check_config(paths, use_env=not no_env)
    except PluginNotFoundError as exc:
        return _fail(as_json, ExitStatus.NOT_FOUND, exc.problems, expect, paths)
    except ConfigError as exc:
        return _fail(as_json, ExitStatus.USAGE, exc.problems, expect, paths)
    except InvalidMaxRepeatsError as exc:
        return _fail(as_json, ExitStatus.USAGE, [(None, str(exc))], expect, paths)

    status = ExitStatus.OK
    mismatch = expect is not None and report.value != expect
    if mismatch or (strict and report.warnings):
        status = ExitStatus.BRAKE
    if as_json:
        click.echo(json.dumps(_report_json(report, status, expect), ensure_ascii=False))
        return status
    click.echo(f"maxRepeats = {report.value}  ({report.detail})")
    if report.layers:
        click.echo(f"layers touching row {report.row}:")
        for touch in report.layers:
            click.echo(f"  {_where(touch.location)}  {_touch_text(touch)}")
    for warning in report.warnings:
        click.echo(visible(_warning_text(warning), lines=True), err=True)
    if mismatch:
        click.echo(
            f"{PROG}: expected maxRepeats = {expect}, the composition gives {report.value} "
            f"({report.source})",
            err=True,
        )
    elif status is ExitStatus.BRAKE:
        click.echo(f"{PROG}: {len(report.warnings)} warning(s) and --strict", err=True)
    return status


def _where(loc: Location) -> str:
    return f"{loc.file}:{loc.line}"


def _touch_text(touch: Touch) -> str:
    if touch.action == "insert":
        text = "insert"
        if touch.sets_max_repeats:
            return text + ", sets maxRepeats"
        return text + (", config without maxRepeats" if "config" in touch.fields else ", no config")
    text = f"override ({', '.join(touch.fields) or 'no fields'})"
    if touch.sets_max_repeats is None:
        return text
    if touch.sets_max_repeats:
        return text + ", sets maxRepeats"
    return text + ", replaces the config without maxRepeats"


def _warning_text(warning: ConfigWarning) -> str:
    if warning.location is None:
        return f"{PROG}: warning: {warning.message}"
    return f"{warning.location}: warning: {warning.message}"


def _loc_json(loc: Location | None) -> dict[str, Any]:
    if loc is None:
        return {"file": None, "line": None, "column": None}
    return {"file": loc.file, "line": loc.line, "column": loc.column}


def _report_json(report: ConfigReport, status: int, expect: int | None) -> dict[str, Any]:
    return {
        "status": int(status),
        "value": report.value,
        "source": report.kind,
        **_loc_json(report.location),
        "row": report.row,
        "description": report.detail,
        "expect": expect,
        "files": report.files,
        "layers": [
            {
                "action": t.action,
                **_loc_json(t.location),
                "fields": list(t.fields),
                "setsMaxRepeats": t.sets_max_repeats,
            }
            for t in report.layers
        ],
        "warnings": [{"message": w.message, **_loc_json(w.location)} for w in report.warnings],
        "errors": [],
    }


def _fail(
    as_json: bool,
    status: ExitStatus,
    problems: list[tuple[Location | None, str]],
    expect: int | None,
    paths: list[str] | None = None,
) -> int:
    """Print located errors (stderr, or in the JSON object) and return ``status``."""
    if as_json:
        payload = {
            "status": int(status),
            "value": None,
            "source": None,
            "expect": expect,
            "files": paths or [],
            "layers": [],
            "warnings": [],
            "errors": [{"message": msg, **_loc_json(loc)} for loc, msg in problems],
            "error": "; ".join(f"{loc}: {msg}" if loc else msg for loc, msg in problems),
        }
        click.echo(json.dumps(payload, ensure_ascii=False))
        return status
    for loc, msg in problems:
        text = f"{loc}: error: {msg}" if loc else f"{PROG}: error: {msg}"
        click.echo(visible(text, lines=True), err=True)
    return status
