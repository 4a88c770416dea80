"""``hook install``: add the loop-brake hook entry to an agent's settings file.

The edit is textual and minimal (``settings_edit``): the entry's JSON is
inserted into the ``hooks.<Event>`` list (creating ``hooks`` or the event key
if needed) and every other character of the file stays as it was: numbers,
escapes, key order, whitespace, duplicate keys. Installing twice changes
nothing. What cannot be edited exactly is refused untouched: text that is not
strict JSON, a ``hooks`` shaped otherwise than the agent expects, a duplicated
``hooks`` or event key, nesting deeper than ``settings_edit.MAX_DEPTH``.

The file is read and replaced by ``settings_file``: only a regular file or a
symbolic link to one (a FIFO or device is refused, never opened); a link is
kept and its target replaced atomically with its mode; a read-only file is
refused; the original is kept as ``<file>.bak-<timestamp>``.

The ``command`` string of the entry is run by a shell in all three agents
(Claude Code and Gemini CLI: ``sh``/``bash -c``; Codex: ``$SHELL -lc``), so the
program path from ``--command`` is quoted for it (``shlex.quote``; on Windows,
where they use ``cmd``/PowerShell/Git Bash, double quotes).

Where each agent reads its hooks is the agent module's ``INSTALL`` (``agents/``:
the settings file for ``--project`` and ``--user``, the event key, the matcher,
with the vendor's documentation); an agent whose ``INSTALL`` is None (Cursor)
is refused with the reason its module gives.

When the policy in effect uses progress (``progress``), the same entry is added
to the agent's post-tool events too (``Install.result_events``: Claude Code
``PostToolUse`` and ``PostToolUseFailure``, Codex ``PostToolUse``, Gemini CLI
``AfterTool``), whose inputs carry the results the hook records; each event is
edited as the pre-tool one is, and one already holding our entry is left as it
is. Likewise, when it has ``reset_on_user_turn``, the entry without its matcher
goes to the agent's user-turn events (``Install.user_turn_events``: Claude Code
and Codex ``UserPromptSubmit``, Gemini CLI ``BeforeAgent``), whose inputs say
the user spoke. Without either the file gets exactly the pre-tool entry, as
before: an event is registered only when the policy needs it, so an agent does
not start the hook on every prompt for nothing.

An entry of ours whose command differs from the one asked for (another
``--policy``, none, another ``--command``) is replaced, not kept beside the new
one nor left as it was: the user who installs with ``--policy FILE`` must get
that policy live (``InstallPlan.updated``; the command says so). An identical
entry is left where it is: installing twice changes nothing.

Without ``--command`` the program written is an absolute path
(``default_program``): the installed entry's while it names an executable file
(a venv path the user chose stays), else the running ``loop-brake``'s
(``running_program``). Never a bare ``loop-brake``: the agent resolves it through
its own PATH, which need not hold the venv it was installed from, and the hook
would exit 127 and fail open. Where the running program cannot be told, install
refuses and says to pass ``--command``. Before the file is written, ``hook
install`` runs the command once with a canary call (``check.check_command``).

``hook uninstall`` (``plan_uninstall``) removes every loop-brake handler from the
agent's pre-tool, post-tool and user-turn events, by the same kind of minimal text edit
(``settings_edit.remove_hook_entries``): other handlers, events and bytes stay.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

from .. import agents
from ..agents import Install
from .settings_edit import EditError, add_hook_entry, remove_hook_entries
from .settings_file import SettingsFile, SettingsFileError, read_settings, replace_settings

__all__ = [
    "PROGRAM",
    "USAGE",
    "InstallError",
    "InstallPlan",
    "default_program",
    "hook_entry",
    "install_events",
    "install_target",
    "is_ours",
    "plan_install",
    "plan_uninstall",
    "running_program",
    "settings_path",
    "shell_command",
    "write_plan",
]

_OURS = re.compile(r"(^|[\s/\\\"'])loop-brake(\.exe)?[\"']?\s+hook(\s|$)")

USAGE = "usage"
"""``InstallError.kind`` of a bad option (exit 2); any other refusal concerns the file (3)."""


class InstallError(Exception):
    """A settings file this will not touch (or an option it cannot use); the message
    says which and why."""

    def __init__(self, message: str, kind: str = "file") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class InstallPlan:
    """What an install would do: the file as read, the new text, and whether it changes."""

    agent: str
    path: str
    existed: bool
    changed: bool
    text: str
    settings: SettingsFile | None = None
    updated: bool = False  # an entry of ours with another command was replaced
    command: str = ""  # the entry's command (install only)


PROGRAM = "loop-brake"
"""The console script's name."""


def running_program() -> str | None:
    """The absolute path of the ``loop-brake`` program running now, or None when it cannot
    be told (run as ``python -m loop_brake_cli`` outside an environment that has the
    script). A bare ``loop-brake`` in an agent's settings resolves through the agent's
    PATH, which need not hold the venv it was installed from (the hook then exits 127
    and fails open): the path written is this one. A symbolic link on PATH (pipx) is
    kept as it is, not resolved, so it follows upgrades."""
    import sys

    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) in (PROGRAM, PROGRAM + ".exe") and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), PROGRAM)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return None


def default_program(installed: str | None) -> str:
    """The program an entry runs when ``--command`` is not given: ``installed`` (the
    program of our entry already in the file) while it is an absolute path to an
    executable file, else the running program's absolute path; InstallError when
    neither can be told (see the module docstring)."""
    if (
        installed
        and os.path.isabs(installed)
        and os.path.isfile(installed)
        and os.access(installed, os.X_OK)
    ):
        return installed
    program = running_program()
    if program is None:
        raise InstallError(
            "cannot tell the absolute path of this loop-brake program (run as "
            "`python -m loop_brake_cli`?), and a bare `loop-brake` would resolve through "
            "the agent's PATH: pass --command /absolute/path/to/loop-brake",
            USAGE,
        )
    return program


def install_target(agent: str) -> Install:
    """The agent module's install target; InstallError if it has none."""
    try:
        module = agents.get(agent)
    except agents.UnknownAgentError as exc:
        raise InstallError(str(exc), USAGE) from None
    if module.INSTALL is None:
        raise InstallError(
            f"{agent} hooks are not installed by this command: {module.NO_INSTALL}", USAGE
        )
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


def shell_command(
    executable: str, agent: str, policy: str | None = None, extra: tuple[str, ...] = ()
) -> str:
    """The handler's ``command``: ``executable`` as one word for the agent's shell, and
    ``--policy PATH`` (one word too) when a policy file is given; ``extra``: more hook
    options, each word quoted (``loop-brake run`` adds its store and log)."""
    if not executable:
        raise InstallError("--command is empty", USAGE)
    try:
        executable.encode("utf-8")
    except UnicodeEncodeError:
        raise InstallError("--command is not valid UTF-8", USAGE) from None
    quote = (lambda word: subprocess.list2cmdline([word])) if os.name == "nt" else shlex.quote
    command = f"{quote(executable)} hook --agent {agent}"
    if policy is not None:
        command += f" --policy {quote(policy)}"
    for word in extra:
        command += f" {quote(word)}"
    return command


def hook_entry(
    agent: str,
    executable: str = "loop-brake",
    policy: str | None = None,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The matcher group this adds to the agent's pre-tool event list."""
    target = install_target(agent)
    handler: dict[str, Any] = {
        "type": "command",
        "command": shell_command(executable, agent, policy, extra),
    }
    handler.update(target.handler_fields)
    if target.matcher is None:
        return {"hooks": [handler]}
    return {"matcher": target.matcher, "hooks": [handler]}


def is_ours(command: str) -> bool:
    """Whether a handler's command runs ``loop-brake hook`` (by any path)."""
    return _OURS.search(command) is not None


_is_ours = is_ours


def install_events(agent: str, progress: bool = False, user_turns: bool = False) -> tuple[str, ...]:
    """The events the entry goes to: the pre-tool one, with ``progress`` the
    post-tool ones that carry results, with ``user_turns`` the user-turn ones."""
    target = install_target(agent)
    events = (target.event, *target.result_events) if progress else (target.event,)
    return events + target.user_turn_events if user_turns else events


def _every_event(agent: str) -> tuple[str, ...]:
    """Every event an install may have written to (stale entries, uninstall)."""
    return install_events(agent, progress=True, user_turns=True)


def _installed_program(text: str, agent: str) -> str | None:
    """The program of the first loop-brake handler installed for ``agent``, if any."""
    seen: list[str] = []

    def collect(command: str) -> bool:
        if _is_ours(command):
            seen.append(command)
        return False  # nothing is removed: every handler is visited

    remove_hook_entries(text, _every_event(agent), collect)
    for command in seen:
        try:
            words = shlex.split(command, posix=os.name != "nt")
        except ValueError:
            continue
        if words:
            return words[0]
    return None


def plan_install(
    agent: str,
    path: str,
    executable: str | None = "loop-brake",
    policy: str | None = None,
    progress: bool = False,
    user_turns: bool = False,
) -> InstallPlan:
    """Read ``path`` (if any) and compute the edited text; raises InstallError.
    ``progress``: the policy in effect uses progress (post-tool events too);
    ``user_turns``: it has ``reset_on_user_turn`` (user-turn events too).
    ``executable`` None: ``default_program`` (an absolute path)."""
    events = install_events(agent, progress, user_turns)
    turn_events = install_target(agent).user_turn_events
    settings, original = _read_text(path)
    hint = "fix or move it and run install again, or add the entry yourself"
    try:
        if executable is None:
            executable = default_program(_installed_program(original, agent))
        entry = hook_entry(agent, executable, policy)
        command = entry["hooks"][0]["command"]
        # our handlers with another command (every event we may have written) go first
        stale = remove_hook_entries(
            original, _every_event(agent), lambda other: _is_ours(other) and other != command
        )
        text = original if stale is None else stale
        # a user-turn event takes no matcher (it is no tool's)
        unmatched = {key: value for key, value in entry.items() if key != "matcher"}
        for event in events:
            edited = add_hook_entry(
                text, event, unmatched if event in turn_events else entry, _is_ours
            )
            if edited is not None:
                text = edited
    except EditError as exc:
        raise InstallError(f"{path} {exc}: left untouched; {hint}") from None
    changed = text != original
    plan = InstallPlan(agent, path, settings.existed, changed, text, settings)
    plan.updated, plan.command = stale is not None, command
    return plan


def plan_uninstall(agent: str, path: str) -> InstallPlan:
    """Read ``path`` (if any) and compute the text without our handlers in the agent's
    pre-tool, post-tool and user-turn events; raises InstallError."""
    events = _every_event(agent)
    settings, original = _read_text(path)
    try:
        text = remove_hook_entries(original, events, _is_ours)
    except EditError as exc:
        hint = "fix or move it and run uninstall again, or remove the entry yourself"
        raise InstallError(f"{path} {exc}: left untouched; {hint}") from None
    if text is None:
        return InstallPlan(agent, path, settings.existed, False, original, settings)
    return InstallPlan(agent, path, settings.existed, True, text, settings)


def _read_text(path: str) -> tuple[SettingsFile, str]:
    try:
        settings = read_settings(path)
    except SettingsFileError as exc:
        raise InstallError(str(exc)) from None
    try:
        return settings, settings.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstallError(
            f"{path} is not UTF-8 text (byte {exc.start + 1}): left untouched"
        ) from None


def write_plan(plan: InstallPlan) -> str | None:
    """Back up the old file (if any), then replace it atomically; returns the backup path.

    Raises InstallError for a file it refuses (read-only, changed meanwhile) and
    OSError when the new file cannot be written; the old one is then untouched."""
    if not plan.changed:
        return None
    settings = plan.settings or read_settings(plan.path)
    try:
        return replace_settings(settings, plan.text.encode("utf-8"))
    except SettingsFileError as exc:
        raise InstallError(str(exc)) from None
