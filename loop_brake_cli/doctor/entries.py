"""Each loop-brake hook entry checked as the agent will run it.

For each agent: its entries in the pre-tool events (where calls are judged),
one line per distinct command. The command's program must resolve to an
executable file: an absolute path that is there, or a bare name found on this
PATH outside a venv (a name found only through a venv on this PATH is a ✗: an
agent started from elsewhere does not have it, gets 127 and the hook fails
open). Then the command runs once (``hook/check.py``: ``sh -c``, the agent's
pre-tool input, a canary call in a throwaway session, forgotten afterwards),
through the store and the policy it names or finds.

Warnings, where the brake is on but not as meant: a matcher that leaves tools
out, several different loop-brake commands for one agent, and a policy that
reads results or ends streaks on a user's turn without the entry in the
agent's post-tool or user-turn events. An agent with settings here but no
entry is said (its calls are not braked); one named with ``--agent`` must
have one.
"""

from __future__ import annotations

import os
import shlex
import shutil
from typing import Any

from .. import agents
from . import FAIL, INFO, OK, WARN, Check, Options
from .settings import AGENTS, Entry, Found, pre_tool_events, settings_files

__all__ = ["entry_checks", "resolve_program"]

_EVERY_TOOL = (None, "", "*", ".*")


def entry_checks(found: Found, options: Options, policy: Any) -> list[Check]:
    """The hook entries of every agent (see the module docstring)."""
    checks = list(found.problems)
    for agent in options.agents or AGENTS:
        checks += _agent_checks(agent, found, options, policy)
    judged = any(entry.event in pre_tool_events(entry.agent) for entry in found.entries)
    if not options.agents and not judged:
        if found.present:
            present = [_name(agent) for agent in AGENTS if agent in found.present]
            have = "has" if len(present) == 1 else "have"
            checks.append(
                Check(
                    FAIL,
                    "hook",
                    f"installed for no agent: {', '.join(present)} {have} settings here, and "
                    "none runs loop-brake hook before a tool call",
                    "loop-brake hook install AGENT (claude-code, codex or gemini)",
                )
            )
        else:
            checks.append(
                Check(
                    INFO,
                    "hook",
                    "no agent's settings here: the hook brakes no agent (the brake runs "
                    "where mcp-proxy, run or an integration runs it)",
                )
            )
    return checks


def _agent_checks(agent: str, found: Found, options: Options, policy: Any) -> list[Check]:
    mine = [entry for entry in found.entries if entry.agent == agent]
    pre = [entry for entry in mine if entry.event in pre_tool_events(agent)]
    if not pre:
        return _missing(agent, found, options)
    checks: list[Check] = []
    commands: dict[str, Entry] = {}
    for entry in pre:
        commands.setdefault(entry.command, entry)
    for entry in commands.values():
        checks.append(_entry_check(entry, options))
        if entry.matcher not in _EVERY_TOOL:
            checks.append(
                Check(
                    WARN,
                    agent,
                    f"{entry.file.path} {entry.event}: the matcher {entry.matcher!r} leaves "
                    "the other tools unbraked",
                    f"{_install_fix(entry)} (its matcher is every tool)",
                    {"file": entry.file.path, "event": entry.event},
                )
            )
    if len(commands) > 1:
        files = ", ".join(sorted({entry.file.path for entry in commands.values()}))
        checks.append(
            Check(
                WARN,
                agent,
                f"{len(commands)} different loop-brake hooks run before each call ({files}): "
                "a call may be counted twice or judged under two policies",
                f"keep one: loop-brake hook uninstall {agent} --user (or --project)",
                {"commands": sorted(commands)},
            )
        )
    checks += _events_checks(agent, mine, _entry_policy(pre[0], policy))
    return checks


def _entry_policy(entry: Entry, policy: Any) -> Any:
    """The policy an entry's command names (``--policy``), else the one found here."""
    from ..hook.runner import _parse_args

    try:
        words = shlex.split(entry.command)
    except ValueError:
        return policy
    named = _parse_args(words[2:])[0].get("policy")
    if named is None:
        return policy
    from ..core.policy.discover import discover_policy

    try:
        return discover_policy(named)
    except (ValueError, OSError):
        return None  # the canary decision says it does not load


def _missing(agent: str, found: Found, options: Options) -> list[Check]:
    """No entry in the agent's pre-tool events: ✗ when asked for, else said when the
    agent has settings here."""
    files = [settings.path for settings in settings_files(agent, options)]
    fix = _fix_for(agent, "user")
    if agent in options.agents:
        detail = f"no loop-brake hook in {_name(agent)}'s settings ({', '.join(files)})"
        return [Check(FAIL, agent, detail + ": its calls are not braked", fix, {"files": files})]
    if agent in found.present:
        detail = f"no loop-brake hook in {_name(agent)}'s settings: its calls are not braked"
        return [Check(INFO, agent, detail, fix, {"files": files})]
    return []


def _entry_check(entry: Entry, options: Options) -> Check:
    """The entry's program resolves, and its command answers a canary decision."""
    data: dict[str, Any] = {
        "file": entry.file.path,
        "event": entry.event,
        "command": entry.command,
    }
    where = f"{entry.file.path} {entry.event}: `{entry.command}`"
    fix = _install_fix(entry)
    try:
        words = shlex.split(entry.command)
    except ValueError as exc:
        return Check(FAIL, entry.agent, f"{where}: the shell cannot read it ({exc})", fix, data)
    program, problem = resolve_program(words[0], options.env)
    data["program"] = program
    if problem:
        return Check(FAIL, entry.agent, f"{where}: {problem}", fix, data)
    from ..hook.check import check_command, command_store, forget

    store = command_store(entry.command, options.env)
    result = check_command(entry.command, entry.agent, options.env)
    forget(store, entry.agent, result.session, options.env)
    if store is not None:
        data["store"] = _label(store)
    if not result.ok:
        return Check(
            FAIL,
            entry.agent,
            f"{where}: it runs, but the brake is off: {result.reason}",
            _run_fix(result.reason),
            data,
        )
    return Check(OK, entry.agent, f"{where}: answers a canary decision ({program})", "", data)


def resolve_program(program: str, env: dict[str, str]) -> tuple[str, str]:
    """The file ``program`` runs, and what is wrong with it ("" when nothing)."""
    if os.sep in program:
        if not os.path.isfile(program):
            return program, f"{program} is not there: the shell exits 127, the hook never runs"
        if not os.access(program, os.X_OK):
            return program, f"{program} is not executable: the hook never runs"
        return program, ""
    path = shutil.which(program, path=env.get("PATH", os.defpath))
    if path is None:
        return program, (
            f"`{program}` is not on this PATH: the agent's shell exits 127 and the hook fails open"
        )
    venv = os.path.dirname(os.path.dirname(path))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        return path, (
            f"`{program}` resolves only through the venv {venv} on this PATH; an agent "
            "started from elsewhere does not have it: 127, and the hook fails open"
        )
    return path, ""


def _events_checks(agent: str, mine: list[Entry], policy: Any) -> list[Check]:
    """A policy that reads results or ends streaks on a user's turn needs the entry in
    the agent's post-tool or user-turn events (what ``hook install`` adds)."""
    module = agents.get(agent)
    if policy is None or module.INSTALL is None:
        return []
    events = {entry.event for entry in mine}
    checks = []
    needs = (
        (policy.reads_results, module.INSTALL.result_events, "reads results", "not recorded"),
        (
            policy.reset_on_user_turn,
            module.INSTALL.user_turn_events,
            "has reset_on_user_turn",
            "never ended by a user's turn",
        ),
    )
    for needed, wanted, why, then in needs:
        missing = [event for event in wanted if event not in events]
        if needed and missing:
            checks.append(
                Check(
                    WARN,
                    agent,
                    f"the policy {policy.path} {why} but the hook is not in "
                    f"{', '.join(missing)}: streaks are {then}",
                    _fix_for(agent, "user"),
                    {"events": missing},
                )
            )
    return checks


def _install_fix(entry: Entry) -> str:
    return _fix_for(entry.agent, entry.file.scope, entry.file.path)


def _fix_for(agent: str, scope: str, path: str = "") -> str:
    """``hook install`` writes an absolute path and checks it; Cursor's file by hand."""
    if agents.get(agent).INSTALL is None:
        where = path or "~/.cursor/hooks.json"
        return f"write the absolute path of loop-brake (`command -v loop-brake`) in {where}"
    flag = " --project" if scope in ("project", "local") else ""
    return f"loop-brake hook install {agent}{flag}"


def _run_fix(reason: str) -> str:
    if "policy" in reason:
        return "fix the policy file where the message says (the policy line above)"
    if "store" in reason:
        return "make the store answer (the store lines above), or name another with --store"
    return "run the command with a pre-tool input to see it fail (docs/hook.md)"


def _label(store: str) -> str:
    from ..stores import is_redis

    if is_redis(store):
        from ..stores.redis_store import redact

        return redact(store)
    return store


def _name(agent: str) -> str:
    return {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}.get(
        agent, "Cursor"
    )
