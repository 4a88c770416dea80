"""What the brake runs with: the program, the policy and maxRepeats, the extras,
the C reader, and the fail-open notices the hook gave lately.

* The policy is found as the CLI finds it (``--policy``, ``$LOOP_BRAKE_POLICY``,
  ``.loop-brake.toml`` or ``pyproject.toml`` upward, ``~/.config/loop-brake/
  policy.toml``) and loaded: a file that does not load makes every hook call
  fail open. So does an invalid ``$DSH_LOOP_BRAKE_MAX_REPEATS``.
* An extra is checked where the setup needs it: ``redis`` for a Redis store,
  ``re2`` for a policy's own ``result_ignore`` patterns; otherwise it is said,
  not counted.
* The C reader speeds ``filter`` up and never decides a verdict: its status is
  said (built, or why not), never a failure.
* The fail-open notices (``hook/notice.py``) are markers of the sessions told
  "loop brake is off" in the last week: past, not present, so a warning.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from . import FAIL, INFO, OK, WARN, Check, Options

__all__ = ["extra_checks", "notice_check", "policy_checks", "program_check", "reader_check"]


def program_check() -> Check:
    """This loop-brake: its version and where it is."""
    from importlib.metadata import PackageNotFoundError, version

    from ..hook.install import running_program

    try:
        release = version("loop-brake-cli")
    except PackageNotFoundError:
        release = "(not installed as a package)"
    program = running_program()
    python = f"Python {sys.version.split()[0]}"
    if program is None:
        return Check(
            INFO,
            "loop-brake",
            f"{release}, run as `python -m loop_brake_cli` ({python}, {sys.executable})",
            data={"version": release},
        )
    return Check(
        OK,
        "loop-brake",
        f"{release}, {program} ({python})",
        data={"version": release, "program": program},
    )


def policy_checks(options: Options) -> tuple[list[Check], Any]:
    """maxRepeats from the environment, and the policy found from here; the loaded
    policy (or None) for the entries' checks."""
    from ..core.limits import ENV_VAR, InvalidMaxRepeatsError, resolve_max_repeats
    from ..core.policy.discover import discover_policy, find_policy_file

    checks = []
    env = options.env
    try:
        max_repeats, source = resolve_max_repeats(None, env)
    except InvalidMaxRepeatsError as exc:
        checks.append(
            Check(
                FAIL,
                "maxRepeats",
                f"{exc}: every hook call fails open",
                f"unset ${ENV_VAR} or set it to an integer of at least 1",
            )
        )
        max_repeats, source = 0, ""
    path = find_policy_file(options.policy, env, options.cwd)
    limit = f"maxRepeats {max_repeats}" + (f" ({source})" if source else "")
    if path is None:
        detail = f"none found from {os.path.abspath(options.cwd)}: {limit} for every tool"
        checks.append(Check(OK, "policy", detail, data={"policy": None}))
        return checks, None
    try:
        policy = discover_policy(path, env, options.cwd)
    except (ValueError, OSError) as exc:
        reason = "; ".join(str(exc).splitlines())
        checks.append(
            Check(
                FAIL,
                "policy",
                f"{path} does not load, so every hook call fails open: {reason}",
                f"fix {path} where it says (loop-brake check-config --policy FILE "
                "describes a file that loads)",
                {"policy": path},
            )
        )
        return checks, None
    rules = len(policy.tools) if policy is not None else 0
    what = (
        "no rules: as without a policy"
        if policy is None or policy.empty
        else (f"{rules} tool rule{'s' * (rules != 1)}")
    )
    checks.append(Check(OK, "policy", f"{path}: {what}; {limit}", data={"policy": path}))
    return checks, policy


def extra_checks(targets: list[str], options: Options) -> list[Check]:
    """The optional extras the setup needs (see the module docstring)."""
    from ..stores import is_redis

    redis_needed = [t for t in targets if is_redis(t)]
    checks = [
        _extra(
            "redis",
            "redis",
            "the store is a Redis server" if redis_needed else "",
        ),
        _extra(
            "re2", "re2", "the policy has result_ignore patterns" if _needs_re2(options) else ""
        ),
    ]
    return checks


def _extra(extra: str, module: str, needed: str) -> Check:
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    name = f"extra {extra}"
    installed = importlib.util.find_spec(module) is not None
    if installed:
        distribution = "google-re2" if extra == "re2" else extra
        try:
            release = version(distribution)
        except PackageNotFoundError:
            release = "installed"
        why = f" ({needed})" if needed else " (not needed here)"
        return Check(OK if needed else INFO, name, f"{release}{why}", data={"needed": bool(needed)})
    fix = f"pip install 'loop-brake-cli[{extra}]'"
    if needed:
        return Check(FAIL, name, f"not installed, and {needed}", fix, {"needed": True})
    return Check(INFO, name, "not installed (nothing here needs it)", "", {"needed": False})


def _needs_re2(options: Options) -> bool:
    """The policy file found sets ``result_ignore`` patterns of its own (RE2 syntax)."""
    from ..core.policy.discover import find_policy_file
    from ..core.toml_reader import tomllib

    path = find_policy_file(options.policy, options.env, options.cwd)
    reader = tomllib()
    if path is None or reader is None:
        return False
    try:
        with open(path, "rb") as handle:
            document = reader.load(handle)
    except (OSError, ValueError):
        return False
    if os.path.basename(path) == "pyproject.toml":
        document = document.get("tool", {}).get("loop-brake", {})
    return bool(isinstance(document, dict) and document.get("result_ignore"))


def reader_check() -> Check:
    """The optional C reader of ``filter``: built, or why not (speed only)."""
    from ..readers.fastpath import NOT_BUILT, reader_name

    name = reader_name()
    if name == NOT_BUILT:
        return Check(
            INFO,
            "C reader",
            "not built: filter reads event lines in Python (about half the speed; "
            "verdicts are the same)",
            "install gcc and the Python headers, then reinstall loop-brake-cli",
        )
    return Check(OK if name.startswith("C") else INFO, "C reader", name)


def notice_check(env: dict[str, str]) -> Check:
    """The sessions the hook told "loop brake is off" in the last week."""
    from ..hook.notice import WEEK, marker_dir

    folder = marker_dir(env)
    cutoff = time.time() - WEEK
    times = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    when = entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if entry.is_file(follow_symlinks=False) and when >= cutoff:
                    times.append(when)
    except OSError:
        pass
    if not times:
        return Check(OK, "fail-open", "no session was told the brake was off in the last 7 days")
    last = time.strftime("%Y-%m-%d %H:%M", time.localtime(max(times)))
    count = len(times)
    return Check(
        WARN,
        "fail-open",
        f"the hook failed open in {count} session{'s' * (count != 1)} in the last 7 days "
        f"(the last at {last}): the agent said 'loop brake is off for this session'",
        "the ✗ lines here are the usual causes; the hook's --log has one error line "
        "per call it could not judge",
        {"sessions": count, "last": last},
    )
