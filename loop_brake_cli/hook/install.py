"""``hook install``: merge the loop-brake hook entry into an agent's settings file.

The merge never loses anything: the file is parsed, only the hook list for the
agent's pre-tool event gains one entry, everything else is written back as it
was read (key order kept), the original is copied to a timestamped backup
first, and the new file replaces the old one atomically. A file that does not
parse as a JSON object, or whose ``hooks`` is not shaped as the agent expects,
is refused untouched. Installing twice changes nothing.

Where each agent reads its hooks is the agent module's ``INSTALL`` (``agents/``:
the settings file for ``--project`` and ``--user``, the event key, the matcher,
with the vendor's documentation); an agent whose ``INSTALL`` is None (Cursor)
is refused with the reason its module gives. This module is only the merge.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from .. import agents
from ..agents import Install

__all__ = [
    "InstallError",
    "InstallPlan",
    "hook_entry",
    "install_target",
    "plan_install",
    "settings_path",
    "write_plan",
]

_OURS = re.compile(r"(^|[\s/\\\"'])loop-brake(\.exe)?[\"']?\s+hook(\s|$)")


class InstallError(Exception):
    """A settings file this will not touch; the message says which and why."""


@dataclass
class InstallPlan:
    """What an install would do: the path, the new text, and whether it changes."""

    agent: str
    path: str
    existed: bool
    changed: bool
    text: str


def install_target(agent: str) -> Install:
    """The agent module's install target; InstallError if it has none."""
    try:
        module = agents.get(agent)
    except agents.UnknownAgentError as exc:
        raise InstallError(str(exc)) from None
    if module.INSTALL is None:
        raise InstallError(f"{agent} hooks are not installed by this command: {module.NO_INSTALL}")
    return module.INSTALL


def settings_path(
    agent: str,
    scope: str,
    cwd: str | None = None,
    home: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The settings file an agent reads its hooks from, for ``project`` or ``user`` scope."""
    target = install_target(agent)
    if scope == "project":
        return os.path.join(cwd or os.getcwd(), *target.project.split("/"))
    environ = os.environ if env is None else env
    override = environ.get(target.user_dir_env) if target.user_dir_env else None
    if override:
        return os.path.join(override, target.user.rsplit("/", 1)[-1])
    return os.path.join(home or os.path.expanduser("~"), *target.user.split("/"))


def hook_entry(agent: str, executable: str = "loop-brake") -> dict[str, Any]:
    """The matcher group this adds to the agent's pre-tool event list."""
    target = install_target(agent)
    handler: dict[str, Any] = {"type": "command", "command": f"{executable} hook --agent {agent}"}
    handler.update(target.handler_fields)
    if target.matcher is None:
        return {"hooks": [handler]}
    return {"matcher": target.matcher, "hooks": [handler]}


def _already_installed(groups: list[Any]) -> bool:
    for group in groups:
        if not isinstance(group, dict):
            continue
        for handler in group.get("hooks") or []:
            if isinstance(handler, dict) and _OURS.search(str(handler.get("command", ""))):
                return True
    return False


def plan_install(agent: str, path: str, executable: str = "loop-brake") -> InstallPlan:
    """Read ``path`` (if any) and compute the merged document; raises InstallError."""
    event = install_target(agent).event
    try:
        with open(path, encoding="utf-8") as handle:
            original = handle.read()
        existed = True
    except FileNotFoundError:
        original, existed = "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if original.strip():
        try:
            document = json.loads(original)
        except json.JSONDecodeError as exc:
            raise InstallError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): "
                "left untouched; fix or move it and run install again"
            ) from None
    else:
        document = {}
    if not isinstance(document, dict):
        raise InstallError(f"{path} is not a JSON object: left untouched")
    hooks = document.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f'{path}: "hooks" is not an object: left untouched')
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InstallError(f'{path}: "hooks.{event}" is not a list: left untouched')
    if _already_installed(groups):
        return InstallPlan(agent, path, existed, False, original)
    groups.append(hook_entry(agent, executable))
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return InstallPlan(agent, path, existed, True, text)


def write_plan(plan: InstallPlan) -> str | None:
    """Back up the old file (if any), then replace it atomically; returns the backup path."""
    if not plan.changed:
        return None
    directory = os.path.dirname(plan.path) or "."
    os.makedirs(directory, exist_ok=True)
    backup = None
    if plan.existed:
        backup = f"{plan.path}.bak-{time.strftime('%Y%m%dT%H%M%S')}"
        n = 1
        while os.path.exists(backup):
            n += 1
            backup = f"{plan.path}.bak-{time.strftime('%Y%m%dT%H%M%S')}-{n}"
        shutil.copy2(plan.path, backup)
    fd, tmp = tempfile.mkstemp(prefix=".loop-brake-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(plan.text)
        if plan.existed:
            shutil.copymode(plan.path, tmp)
        os.replace(tmp, plan.path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return backup
