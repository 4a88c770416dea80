"""``loop-brake hook``: the pre-tool hook, and ``hook install``/``hook uninstall`` for
agent settings.

The hook's options are parsed by ``hook.runner`` rather than click (see its
docstring: a click usage error exits 2, which agents read as "deny"), so this
command only passes its arguments through.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from .. import agents
from ..core.exitcodes import ExitStatus
from ._command import Command, CommandError
from ._options import policy_option, resolve_policy


@click.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    short_help="Pre-tool hook for Claude Code, Codex, Gemini CLI and Cursor.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_command(args: tuple[str, ...]) -> int:
    """Run before each tool call by a coding agent (see `loop-brake hook --help`)."""
    if args and args[0] in ("install", "uninstall"):
        command = install_command if args[0] == "install" else uninstall_command
        try:
            return command.main(
                list(args[1:]), prog_name=f"loop-brake hook {args[0]}", standalone_mode=False
            )
        except click.exceptions.Exit as exc:  # --help
            return exc.exit_code
    from ..hook.runner import main

    return ExitStatus(main(list(args)))


def _settings_target(command: Callable[..., Any]) -> Callable[..., Any]:
    """The AGENT argument and the --project/--user/--dry-run options that install and
    uninstall share: which settings file, and whether to write it."""
    for option in reversed(
        (
            click.argument("agent", type=click.Choice(agents.installable())),
            click.option(
                "--project", "scope", flag_value="project", help="This project's settings file."
            ),
            click.option(
                "--user",
                "scope",
                flag_value="user",
                default=True,
                help="Your user settings file (default).",
            ),
            click.option(
                "--dry-run", is_flag=True, help="Print the resulting file; change nothing."
            ),
        )
    ):
        command = option(command)
    return command


INSTALL_EXIT_HELP = (
    "\b\nExit status:\n"
    "  0  ok, or already installed\n"
    "  2  usage: an unknown agent or option, an empty or non-UTF-8 --command,\n"
    "     a --policy file that is not a usable policy\n"
    "  3  a --policy file that cannot be opened; or the settings file was left\n"
    "     untouched: it cannot be read, is not a regular file, is not strict\n"
    "     JSON, has hooks shaped otherwise, duplicated keys or nesting too deep,\n"
    "     is read-only, or the new file could not be written\n"
    "  5  standard output could not be written (--dry-run)\n"
    "  7  the hook failed its check (one canary decision through the command,\n"
    "     its store and its policy): the file was left as it was"
)


@click.command("install", cls=Command, prog="loop-brake hook install", epilog=INSTALL_EXIT_HELP)
@_settings_target
@click.option(
    "--command",
    "executable",
    help="The loop-brake program the agent runs: one path, quoted for the agent's "
    "shell (default: this program's absolute path).",
)
@click.option(
    "--no-check",
    is_flag=True,
    help="Write the entry without first running it once with a canary call.",
)
@policy_option(
    "Check this policy file now (exit 2 if unusable) and add --policy with its "
    "absolute path to the hook command."
)
def install_command(
    agent: str,
    scope: str,
    dry_run: bool,
    executable: str | None,
    no_check: bool = False,
    policy_path: str | None = None,
) -> int:
    """Add `loop-brake hook --agent AGENT` to AGENT's pre-tool hooks.

    When the policy in effect (--policy, else the one found from here) uses
    progress, the entry goes to AGENT's post-tool hooks too, which carry the
    results; when it has reset_on_user_turn, to AGENT's user-turn hooks too
    (UserPromptSubmit, BeforeAgent). The entry is inserted into the file's text;
    every other byte is kept (numbers, escapes, key order, layout). A file that
    does not parse, or that cannot be edited exactly, is refused untouched;
    installing twice changes nothing; a symbolic link is kept (its target is
    edited); a read-only file is refused; the old file is kept as a timestamped
    .bak next to it. The command names loop-brake by its absolute path, and is
    run once with a canary call (its store and policy with it) before the file
    is written.
    """
    from ..hook.install import plan_install

    policy = None
    if policy_path is not None:
        policy = os.path.abspath(policy_path)
        loaded = resolve_policy(policy)
    else:
        loaded = _found_policy()
    progress = loaded is not None and loaded.reads_results
    user_turns = loaded is not None and loaded.reset_on_user_turn
    what = _install_what(loaded, progress, user_turns)
    return _apply(
        "loop-brake hook install",
        lambda path: plan_install(agent, path, executable, policy, progress, user_turns),
        agent,
        scope,
        dry_run,
        unchanged="already installed",
        done=f"added {what} to",
        check=None if no_check else lambda plan: _check(plan, policy),
    )


def _check(plan: Any, policy: str | None) -> tuple[bool, str]:
    """One canary decision through the entry's command (``hook/check.py``): whether it
    answered, and what was checked (or why it failed), to be said on stderr."""
    from ..hook.check import check_command, command_store, forget
    from ..stores import is_redis

    store = command_store(plan.command)
    result = check_command(plan.command, plan.agent)
    forget(store, plan.agent, result.session)
    if store is None:
        where = "the store"
    elif is_redis(store):
        from ..stores.redis_store import redact

        where = f"the store {redact(store)}"
    else:
        where = f"the store {os.path.abspath(store)}"
    from ..core.policy.discover import find_policy_file

    found = find_policy_file(policy)
    rules = f"the policy {found}" if found else f"no policy (none found from {os.getcwd()})"
    checked = f"`{plan.command}`, {where}, {rules}"
    if not result.ok:
        return False, f"the hook failed its check ({result.reason}); checked {checked}"
    return True, f"checked with one canary decision, allowed: {checked}"


def _install_what(policy: Any, results: bool, user_turns: bool) -> str:
    """What install adds, and why, in the policy's own words: the post-tool events
    carry results (progress, ``[same_error]`` or ``[same_result]``), the user-turn
    events end a turn."""
    if not results and not user_turns:
        return "the hook"
    reasons = []
    if results:
        reasons += ["uses progress"] if policy.uses_progress else []
        reasons += ["has [same_error]"] if policy.same_error is not None else []
        reasons += ["has [same_result]"] if policy.same_result is not None else []
    if user_turns:
        reasons.append("has reset_on_user_turn")
    events = ["pre-tool"] + ["post-tool"] * results + ["user-turn"] * user_turns
    return (
        f"the hook ({', '.join(events[:-1])} and {events[-1]} events: "
        f"the policy {' and '.join(reasons)})"
    )


def _found_policy() -> Any:
    """The policy the hook would find from here, or None; a file that does not load is
    the hook's failure to report (it fails open), not install's."""
    from ..core.policy.discover import discover_policy

    try:
        return discover_policy(None)
    except ValueError:
        return None


UNINSTALL_EXIT_HELP = (
    "\b\nExit status:\n"
    "  0  ok, or nothing to remove\n"
    "  2  usage: an unknown agent or option\n"
    "  3  the settings file was left untouched: it cannot be read, is not a\n"
    "     regular file, is not strict JSON, has hooks shaped otherwise or\n"
    "     duplicated keys, is read-only, or the new file could not be written\n"
    "  5  standard output could not be written (--dry-run)"
)


@click.command(
    "uninstall", cls=Command, prog="loop-brake hook uninstall", epilog=UNINSTALL_EXIT_HELP
)
@_settings_target
def uninstall_command(agent: str, scope: str, dry_run: bool) -> int:
    """Remove every `loop-brake hook` entry from AGENT's pre-tool, post-tool and user-turn hooks.

    Only loop-brake's handlers go (with a matcher group or event list they leave
    empty); every other byte is kept. The old file is kept as a timestamped .bak
    next to it, as install does.
    """
    from ..hook.install import plan_uninstall

    return _apply(
        "loop-brake hook uninstall",
        lambda path: plan_uninstall(agent, path),
        agent,
        scope,
        dry_run,
        unchanged="no loop-brake hook",
        done="removed the hook from",
    )


def _apply(
    prog: str,
    make_plan: Callable[[Any], Any],
    agent: str,
    scope: str,
    dry_run: bool,
    unchanged: str,
    done: str,
    check: Callable[[Any], tuple[bool, str]] | None = None,
) -> int:
    """Plan the edit of AGENT's settings file, then print it (--dry-run) or write it:
    one path for install and uninstall, so both refuse, report and back up alike.
    ``check``: run before writing (not on a dry run): whether it passed, and what it
    says (why not, or what it checked, said after the file's outcome)."""
    from ..hook.install import USAGE, InstallError, settings_path, write_plan

    try:
        path = settings_path(agent, scope)
        plan = make_plan(path)
    except InstallError as exc:
        status = ExitStatus.USAGE if exc.kind == USAGE else ExitStatus.UNREADABLE
        raise CommandError(str(exc), status) from None
    if dry_run:
        click.echo(plan.text, nl=False)
        state = "would change" if plan.changed else f"{unchanged}, would not change"
        if getattr(plan, "updated", False):
            state = f"would update the hook (its command would be `{plan.command}`)"
        click.echo(f"{prog}: {path} {state} (dry run)", err=True)
        return ExitStatus.OK
    passed, checked = check(plan) if check is not None else (True, "")
    if not passed:
        left = "left as it was" if plan.changed else "left as it was (it holds this entry)"
        click.echo(
            f"{prog}: {checked}; {path} {left}. Fix what failed, "
            "or write the entry anyway with --no-check",
            err=True,
        )
        return ExitStatus.NOT_INSTALLED
    if not plan.changed:
        click.echo(f"{prog}: {unchanged} in {path}", err=True)
        if checked:
            click.echo(f"{prog}: {checked}", err=True)
        return ExitStatus.OK
    try:
        backup = write_plan(plan)
    except InstallError as exc:
        raise CommandError(str(exc), ExitStatus.UNREADABLE) from None
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        message = f"cannot write {path}: {reason}; left untouched"
        raise CommandError(message, ExitStatus.UNREADABLE) from None
    note = f" (backup: {backup})" if backup else ""
    if getattr(plan, "updated", False):  # install over an entry with another command
        done = f"updated the hook (its command is now `{plan.command}`) in"
    click.echo(f"{prog}: {done} {path}{note}", err=True)
    if checked:
        click.echo(f"{prog}: {checked}", err=True)
    return ExitStatus.OK
