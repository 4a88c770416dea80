"""``loop-brake run [OPTIONS] -- AGENT ARGS...``: options in, ``run/execute`` does the rest."""

from __future__ import annotations

import click

from ..core.exitcodes import epilog
from ._command import Command, CommandError
from ._options import Count, max_repeats_option, policy_option, resolve_settings

PROG = "loop-brake run"


@click.command(
    "run",
    cls=Command,
    epilog=epilog("run"),
    short_help="Run a headless agent with the brake for this run only (CI).",
    context_settings={"allow_interspersed_args": False},
)
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- AGENT ARGS..."
)
@max_repeats_option()
@policy_option()
@click.option(
    "--agent",
    "agent",
    type=click.Choice(["claude-code", "codex", "gemini", "opencode"]),
    default=None,
    help="Which agent AGENT is (default: from its program's name: claude, codex, gemini, "
    "opencode).",
)
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="Where the injected hook counts: a path, sqlite:///path, redis://... (shared with "
    "other runs). Default: $LOOP_BRAKE_STORE, else a private file for this run.",
)
@click.option(
    "--session",
    "session",
    metavar="KEY",
    default=None,
    help="Count the run's calls under session KEY (a subagent's under KEY/ID) instead of the "
    "agent's own session id: with a shared --store, each job its own KEY.",
)
@click.option(
    "--stop-after",
    type=Count(0),
    default=2,
    show_default=True,
    help="End the run after K denials the agent ignored (made the denied call again); "
    "0: at the first denial. A policy [stop] always ends it.",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="After SIGTERM to the agent's process group, SIGKILL what is left after this long.",
)
@click.option(
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the agent's stream to FILE instead of stdout (unchanged, as it comes).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the replay's JSON summary of the run, plus a run object, to FILE.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the replay's HTML report of the run to FILE.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write JUnit XML to FILE: one test case per session, a stopped one a failure.",
)
@click.option("-q", "--quiet", is_flag=True, help="No line per call on stderr, no summary.")
def run_command(
    command: tuple[str, ...],
    max_repeats: int | None,
    policy_path: str | None,
    agent: str | None,
    store_url: str | None,
    session: str | None,
    stop_after: int,
    grace: float,
    output: str | None,
    json_path: str | None,
    html_path: str | None,
    junit_path: str | None,
    quiet: bool,
) -> int:
    """Run a headless agent with the brake, for this run only.

    \b
      loop-brake run -- claude -p "fix the tests" --output-format stream-json --verbose
      loop-brake run --junit brake.xml -- codex exec --json "fix the tests"
      loop-brake run -- gemini -p "fix the tests" --output-format stream-json

    The hook is injected for this run only (Claude Code --settings, Codex -c, Gemini CLI
    a system settings file named by its environment variable; docs/ci.md), checked with
    one canary decision, and the user's settings files are never written. The agent's
    stream is passed through unchanged to stdout (or --output) and judged as it comes;
    one line per call on stderr (a live panel when stderr is a terminal the stream does
    not also go to). The run ends at a policy [stop], or after --stop-after
    denials the agent ignored: SIGTERM to its process group, SIGKILL after --grace.
    A summary on stderr; --json, --html, --junit files; Markdown appended to
    $GITHUB_STEP_SUMMARY when it is set. Tool arguments never appear in any of them.
    """
    import os

    from ..render.run_view import pick_view
    from ..run.execute import RunOptions, execute

    value, source, policy = resolve_settings(max_repeats, policy_path)
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CommandError("give the agent's command after --: loop-brake run -- claude -p ...")
    if store_url is not None:
        from ..stores import StoreError, open_store

        try:  # a bad URL is a usage error now, not a hook failing open later
            open_store(store_url).close()
        except (ValueError, StoreError) as exc:
            raise CommandError(f"--store: {exc}") from None
    return execute(
        RunOptions(
            argv=argv,
            max_repeats=value,
            max_repeats_source=source,
            policy=policy,
            agent=agent,
            store=store_url,
            session=session,
            stop_after=stop_after,
            grace=grace,
            output=output,
            json_path=json_path,
            html_path=html_path,
            junit_path=junit_path,
            quiet=quiet,
            view=pick_view(quiet, output is None, os.environ),
        )
    )
