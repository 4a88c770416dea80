"""Where each agent keeps its hooks, and the loop-brake entries found there.

Read as the agents read them, never edited: Claude Code's user, project and local
settings (``~/.claude/settings.json``, ``.claude/settings.json``,
``.claude/settings.local.json``); Codex's ``hooks.json`` and the inline
``[hooks]`` tables of ``config.toml``, in ``$CODEX_HOME`` (else ``~/.codex``)
and in the project's ``.codex/``; Gemini CLI's ``settings.json`` (user and
project); Cursor's ``hooks.json`` (user and project), whose handlers sit flat
under each event. The project is the folder the doctor runs in, as an agent
started there would see it.

An entry is ours when its command runs ``loop-brake hook`` (``hook.install.is_ours``,
the rule install and uninstall use). Each agent's own switch that turns every
hook off is read too: Claude Code's ``disableAllHooks``, Codex's ``[features]
hooks = false`` (or its older name ``codex_hooks``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from .. import agents
from . import FAIL, WARN, Check, Options

__all__ = ["AGENTS", "Entry", "Found", "SettingsFile", "find_entries", "settings_files"]

AGENTS = ("claude-code", "codex", "gemini", "cursor")


@dataclass
class SettingsFile:
    """One file an agent reads hooks from: ``scope`` user, project or local;
    ``form`` json (event -> matcher groups -> handlers), toml (the same in
    ``config.toml``) or flat (Cursor: event -> handlers)."""

    agent: str
    path: str
    scope: str
    form: str = "json"


@dataclass
class Entry:
    """A loop-brake handler: its agent, file, event, matcher and command."""

    agent: str
    file: SettingsFile
    event: str
    command: str
    matcher: Any = None


@dataclass
class Found:
    """What the settings hold: our entries, the files read, the agents whose settings
    folder exists here, and the problems met reading them."""

    entries: list[Entry] = field(default_factory=list)
    files: list[SettingsFile] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    problems: list[Check] = field(default_factory=list)


def settings_files(agent: str, options: Options) -> list[SettingsFile]:
    """The files ``agent`` reads hooks from, user ones first."""
    env = options.env
    home = env.get("HOME") or os.path.expanduser("~")
    project = os.path.abspath(options.cwd)
    if agent == "claude-code":
        return [
            SettingsFile(agent, os.path.join(home, ".claude", "settings.json"), "user"),
            SettingsFile(agent, os.path.join(project, ".claude", "settings.json"), "project"),
            SettingsFile(agent, os.path.join(project, ".claude", "settings.local.json"), "local"),
        ]
    if agent == "codex":
        user = env.get("CODEX_HOME") or os.path.join(home, ".codex")
        local = os.path.join(project, ".codex")
        return [
            SettingsFile(agent, os.path.join(user, "hooks.json"), "user"),
            SettingsFile(agent, os.path.join(user, "config.toml"), "user", "toml"),
            SettingsFile(agent, os.path.join(local, "hooks.json"), "project"),
            SettingsFile(agent, os.path.join(local, "config.toml"), "project", "toml"),
        ]
    if agent == "gemini":
        return [
            SettingsFile(agent, os.path.join(home, ".gemini", "settings.json"), "user"),
            SettingsFile(agent, os.path.join(project, ".gemini", "settings.json"), "project"),
        ]
    return [
        SettingsFile(agent, os.path.join(home, ".cursor", "hooks.json"), "user", "flat"),
        SettingsFile(agent, os.path.join(project, ".cursor", "hooks.json"), "project", "flat"),
    ]


def find_entries(options: Options) -> Found:
    """Every loop-brake entry in every agent's settings files (see the module doc)."""
    from ..hook.install import is_ours

    found = Found()
    for agent in AGENTS:
        for settings in settings_files(agent, options):
            if os.path.isdir(os.path.dirname(settings.path)):
                found.present.add(agent)
            document = _read(settings, found)
            if document is None:
                continue
            found.files.append(settings)
            _switched_off(settings, document, found)
            for event, command, matcher in _handlers(settings, document):
                if is_ours(command):
                    found.entries.append(Entry(agent, settings, event, command, matcher))
    return found


def _read(settings: SettingsFile, found: Found) -> dict[str, Any] | None:
    """The file's document, or None (absent, or unreadable: a problem is noted)."""
    try:
        with open(settings.path, "rb") as handle:
            data = handle.read(16 * 1024 * 1024)
    except FileNotFoundError:
        return None
    except OSError as exc:
        found.problems.append(_unreadable(settings, exc.strerror or str(exc), b"loop-brake"))
        return None
    try:
        if settings.form == "toml":
            from ..core.toml_reader import tomllib

            reader = tomllib()
            if reader is None:
                return None
            document = reader.loads(data.decode("utf-8"))
        else:
            document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        found.problems.append(_unreadable(settings, f"not UTF-8 (byte {exc.start + 1})", data))
        return None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        found.problems.append(_unreadable(settings, f"not JSON ({where})", data))
        return None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        found.problems.append(_unreadable(settings, f"not TOML ({exc})", data))
        return None
    return document if isinstance(document, dict) else None


def _unreadable(settings: SettingsFile, why: str, data: bytes) -> Check:
    """A settings file that cannot be read: ✗ if it names loop-brake (its hook is not
    checked, and the agent may not read it either), else a warning."""
    ours = b"loop-brake" in data
    detail = f"{settings.path} cannot be read: {why}"
    if ours:
        detail += "; the loop-brake hook in it was not checked"
    return Check(
        FAIL if ours else WARN,
        settings.agent,
        detail,
        f"fix {settings.path} (the agent reads it too)",
        {"file": settings.path},
    )


def _handlers(settings: SettingsFile, document: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(event, command, matcher) of every command handler in the file."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return []
    found = []
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict):
                continue
            if settings.form == "flat":
                handlers, matcher = [group], None
            else:
                handlers, matcher = group.get("hooks"), group.get("matcher")
            if not isinstance(handlers, list):
                continue
            for handler in handlers:
                if isinstance(handler, dict) and isinstance(handler.get("command"), str):
                    found.append((str(event), handler["command"], matcher))
    return found


def _switched_off(settings: SettingsFile, document: dict[str, Any], found: Found) -> None:
    """The agent's own switch that turns every hook off, when set in this file."""
    if settings.agent == "claude-code" and document.get("disableAllHooks") is True:
        found.problems.append(
            Check(
                FAIL,
                settings.agent,
                f"Claude Code runs no hook at all: disableAllHooks is true in {settings.path}",
                f'remove "disableAllHooks" from {settings.path}',
                {"file": settings.path},
            )
        )
    if settings.agent == "codex" and settings.form == "toml":
        features = document.get("features")
        if isinstance(features, dict):
            for key in ("hooks", "codex_hooks"):
                if features.get(key) is False:
                    found.problems.append(
                        Check(
                            FAIL,
                            settings.agent,
                            f"Codex runs no hook at all: [features] {key} = false in "
                            f"{settings.path}",
                            f"remove {key} = false from [features] in {settings.path}",
                            {"file": settings.path},
                        )
                    )


def pre_tool_events(agent: str) -> tuple[str, ...]:
    """The agent's pre-tool events: the hook judges calls there."""
    return agents.get(agent).EVENTS
