"""``loop-brake mcp-proxy``: the brake in front of any MCP stdio server.

Only argument parsing lives here; the proxy itself is the ``loop_brake_cli.mcp_proxy``
package.
"""

from __future__ import annotations

import click

from ..core.exitcodes import ExitStatus
from ..mcp_proxy import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    LogOpenError,
    OutputError,
    ProxyOptions,
    SpawnError,
    fill_closed,
    run_proxy,
)
from ._options import (
    Errors,
    header_option,
    log_option,
    max_repeats_option,
    open_shared_store,
    policy_option,
    remote_headers,
    resolve_settings,
    shadow_option,
    store_options,
    timeout_options,
)

PROG = "loop-brake mcp-proxy"

PROXY_EXIT_HELP = (
    "Exit status: the server's own (128+N if signal N ended it); 2 usage or configuration "
    "error, before the server starts; 5 standard output could not be written (closed or "
    "read-only: the server is not started; a full disk later: the server is stopped); "
    "126 the server could not be run; 127 the server command was not found."
)


def _note(message: str) -> None:
    click.echo(f"{PROG}: {message}", err=True)


@click.command(
    "mcp-proxy",
    epilog=PROXY_EXIT_HELP,
    short_help="Run an MCP stdio server behind the brake.",
    context_settings={"allow_interspersed_args": False},
)
@click.argument("server_command", nargs=-1, required=False, type=click.UNPROCESSED)
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="A remote MCP server (Streamable HTTP endpoint) instead of SERVER_COMMAND.",
)
@header_option(
    "With --url: an HTTP header for every request (repeatable). A last word env:VAR "
    "is read from the environment ('Authorization: Bearer env:TOKEN'); values are "
    "never printed or logged."
)
@timeout_options(
    "With --url: seconds to connect to the server.",
    "With --url: seconds the server may stay silent while answering.",
)
@max_repeats_option()
@shadow_option("Never deny: forward every call, and log (and note on stderr) what would have been.")
@log_option(
    "Append to FILE the verdict lines replay --verdicts --format mcp would print for "
    "the client's traffic (never arguments); created 0600, never through a symlink."
)
@click.option(
    "--shutdown-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_SHUTDOWN_TIMEOUT,
    show_default=True,
    help="After the client disconnects: seconds before SIGTERM, and again before SIGKILL.",
)
@policy_option()
@click.option(
    "--session",
    "label",
    metavar="KEY",
    default=None,
    help=(
        "Name the streaks KEY#1, KEY#2... instead of mcp#1 (a new one per initialize). "
        "Needed with --store: proxies with the same KEY share a streak, so give each "
        "agent session its own."
    ),
)
@store_options
def mcp_proxy_command(
    server_command: tuple[str, ...],
    max_repeats: int | None,
    shadow: bool,
    log_path: str | None,
    shutdown_timeout: float,
    url: str | None = None,
    header_specs: tuple[str, ...] = (),
    timeout: float = 10.0,
    read_timeout: float = 300.0,
    policy_path: str | None = None,
    label: str | None = None,
    store_url: str | None = None,
    idle_ttl: str | None = None,
    fail_closed: bool = False,
) -> int:
    """Start SERVER_COMMAND (or reach --url) and brake every tools/call a client sends it.

    \b
    In the client's configuration, put the proxy in front of the server:
      loop-brake mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem /tmp
      loop-brake mcp-proxy --url https://mcp.example.com/mcp \\
        --header 'Authorization: Bearer env:EXAMPLE_TOKEN'

    With --url the server is remote (Streamable HTTP): the proxy speaks stdio to
    the client and HTTP to the server, with the same verdicts and answers;
    stderr and the exit status are the proxy's own (0 when the client leaves).

    The server gets the proxy's environment, working directory and stderr.
    Every line passes through unchanged, except a tools/call the brake denies:
    the server never sees it, and the client gets a tool error (isError: true)
    with the loop-brake message for the same id. The connection is the
    session (mcp#1); an initialize request after other traffic starts the next
    (mcp#2) with fresh streaks. Signals (INT, TERM, HUP) are forwarded; the
    proxy exits with the server's status.
    """
    # Before anything is opened: a closed stdin or stderr must not be taken by
    # the log or a pipe to the server (see mcp_proxy/streams.py).
    fill_closed((0, 2))
    errors = Errors(PROG)
    settings = resolve_settings(errors, max_repeats, policy_path)
    if isinstance(settings, ExitStatus):
        return settings
    limit, _source, policy = settings
    store = open_shared_store(errors, store_url, idle_ttl, _note)
    if isinstance(store, ExitStatus):
        return store
    if store is not None and label is None:
        return errors(
            "--store needs --session KEY: every proxy's first connection is mcp#1, and one "
            "streak shared by every client would deny one client's call for another's"
        )
    if (url is None) == (not server_command):
        return errors("give either SERVER_COMMAND (after --) or --url, not both or neither")
    if url is None and header_specs:
        return errors("--header needs --url")
    if url is not None:
        return _bridge(
            errors,
            url,
            header_specs,
            timeout,
            read_timeout,
            limit,
            shadow,
            log_path,
            shutdown_timeout,
            policy,
            store=store,
            fail_closed=fail_closed,
            label=label or "mcp",
        )
    options = ProxyOptions(
        command=list(server_command),
        max_repeats=limit,
        shadow=shadow,
        log_path=log_path,
        shutdown_timeout=shutdown_timeout,
        policy=policy,
        store=store,
        fail_closed=fail_closed,
        label=label or "mcp",
    )
    try:
        return run_proxy(options)
    except SpawnError as exc:
        click.echo(f"loop-brake mcp-proxy: cannot start the server: {exc}", err=True)
        return exc.status
    except LogOpenError as exc:
        click.echo(f"loop-brake mcp-proxy: {exc}", err=True)
        return ExitStatus.USAGE
    except OutputError as exc:
        click.echo(
            f"loop-brake mcp-proxy: cannot write to standard output ({exc}); "
            "the server was not started",
            err=True,
        )
        return ExitStatus.OUTPUT


def _bridge(
    errors: Errors,
    url: str,
    header_specs: tuple[str, ...],
    timeout: float,
    read_timeout: float,
    limit: int,
    shadow: bool,
    log_path: str | None,
    shutdown_timeout: float,
    policy: object,
    store: object = None,
    fail_closed: bool = False,
    label: str = "mcp",
) -> int:
    """``--url``: the stdio client bridged to a remote server (needs the ``mcp`` extra)."""
    headers = remote_headers(errors, "--url", url, header_specs)
    if isinstance(headers, ExitStatus):
        return headers
    try:
        from ..mcp_proxy.bridge import BridgeOptions, run_bridge
    except ImportError:
        return errors("--url needs the MCP SDK: pip install 'loop-brake-cli[mcp]'")
    options = BridgeOptions(
        url=url,
        max_repeats=limit,
        headers=headers,
        shadow=shadow,
        log_path=log_path,
        shutdown_timeout=shutdown_timeout,
        policy=policy,
        timeout=timeout,
        read_timeout=read_timeout,
        store=store,
        fail_closed=fail_closed,
        label=label,
    )
    try:
        return run_bridge(options)
    except LogOpenError as exc:
        click.echo(f"loop-brake mcp-proxy: {exc}", err=True)
        return ExitStatus.USAGE
    except OutputError as exc:
        click.echo(f"loop-brake mcp-proxy: cannot write to standard output ({exc})", err=True)
        return ExitStatus.OUTPUT
