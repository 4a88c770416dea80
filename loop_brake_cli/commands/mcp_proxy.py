"""``loop-brake mcp-proxy``: the brake in front of any MCP stdio server.

Only argument parsing lives here; the proxy itself is the ``loop_brake_cli.mcp_proxy``
package.
"""

from __future__ import annotations

from typing import Any, NamedTuple

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
from ._command import Command, CommandError
from ._options import (
    header_option,
    log_option,
    max_repeats_option,
    open_shared_store,
    otel_option,
    policy_option,
    remote_headers,
    resolve_settings,
    shadow_option,
    start_otel,
    store_options,
    timeout_options,
)

PROG = "loop-brake mcp-proxy"

PROXY_EXIT_HELP = (
    "Exit status: the server's own (128+N if signal N ended it; with --url, 0 when the "
    "client leaves); before the server starts, 2 usage or configuration error, 3 an "
    "unreadable --policy; 5 standard output could not be written; 126 the server could "
    "not be run; 127 the server command was not found."
)


def _note(message: str) -> None:
    click.echo(f"{PROG}: {message}", err=True)


@click.command(
    "mcp-proxy",
    cls=Command,
    epilog=PROXY_EXIT_HELP,
    short_help="Run an MCP stdio server behind the brake.",
    more=(
        "header_specs",
        "timeout",
        "read_timeout",
        "shutdown_timeout",
        "store_url",
        "idle_ttl",
        "fail_closed",
        "otel",
    ),
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
    "Append the verdict line of each tools/call to FILE, as replay --verdicts --format "
    "mcp prints them (never arguments; created 0600)."
)
@click.option(
    "--shutdown-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_SHUTDOWN_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="After the client disconnects: seconds before SIGTERM, and again before SIGKILL.",
)
@policy_option()
@click.option(
    "--session",
    "label",
    metavar="KEY",
    default=None,
    help="Name the streaks KEY#1, KEY#2... (default mcp#1...); needed with --store, "
    "where proxies with the same KEY share a streak: one KEY per agent session.",
)
@store_options
@otel_option(
    "Export metrics with OpenTelemetry (the otel extra) as the OTEL_* environment "
    "variables say (OTLP over HTTP by default): calls by tool, rule and outcome; never arguments."
)
def mcp_proxy_command(**params: Any) -> int:
    """Start SERVER_COMMAND (or reach --url) and brake every tools/call a client
    sends it. In the client's configuration, put the proxy in front of the server:

    \b
      loop-brake mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem /tmp
      loop-brake mcp-proxy --url https://mcp.example.com/mcp \\
        --header 'Authorization: Bearer env:EXAMPLE_TOKEN'

    Every line passes through unchanged, except a tools/call the brake denies:
    the server never sees it, and the client gets a tool error (isError: true)
    for the same id. The connection is the session (mcp#1); an initialize after
    other traffic starts the next (mcp#2) with fresh streaks. Signals are
    forwarded. With --url the server is remote (Streamable HTTP).
    """
    return run_mcp_proxy(ProxyCommandOptions(**params))


class ProxyCommandOptions(NamedTuple):
    """``mcp-proxy``'s options, as parsed (one field per option, named as click names it)."""

    server_command: tuple[str, ...]
    url: str | None
    header_specs: tuple[str, ...]
    timeout: float
    read_timeout: float
    max_repeats: int | None
    shadow: bool
    log_path: str | None
    shutdown_timeout: float
    policy_path: str | None
    label: str | None
    store_url: str | None
    idle_ttl: str | None
    fail_closed: bool
    otel: bool


def run_mcp_proxy(opts: ProxyCommandOptions) -> int:
    """Settings and the store first, then the local proxy or the bridge to ``--url``."""
    # Before anything is opened: a closed stdin or stderr must not be taken by
    # the log or a pipe to the server (see mcp_proxy/streams.py).
    fill_closed((0, 2))
    limit, _source, policy = resolve_settings(opts.max_repeats, opts.policy_path)
    store = open_shared_store(opts.store_url, opts.idle_ttl, _note)
    if store is not None and opts.label is None:
        raise CommandError(
            "--store needs --session KEY: every proxy's first connection is mcp#1, and one "
            "streak shared by every client would deny one client's call for another's"
        )
    if (opts.url is None) == (not opts.server_command):
        raise CommandError("give either SERVER_COMMAND (after --) or --url, not both or neither")
    if opts.url is None and opts.header_specs:
        raise CommandError("--header needs --url")
    exporter = start_otel(opts.otel, "loop-brake-mcp-proxy")
    metrics = None
    if exporter is not None:
        from ..telemetry import BrakeMetrics

        metrics = BrakeMetrics()
        exporter.observe(metrics)
    try:
        return _serve(opts, limit, policy, store, metrics)
    finally:
        if exporter is not None:
            exporter.shutdown()  # what was counted last is exported


def _serve(
    opts: ProxyCommandOptions, limit: int, policy: object, store: object, metrics: object
) -> int:
    """The local proxy, or the bridge to ``--url``."""
    if opts.url is not None:
        return _bridge(opts, opts.url, limit, policy, store, metrics)
    options = ProxyOptions(
        command=list(opts.server_command),
        max_repeats=limit,
        shadow=opts.shadow,
        log_path=opts.log_path,
        shutdown_timeout=opts.shutdown_timeout,
        policy=policy,
        store=store,
        fail_closed=opts.fail_closed,
        label=opts.label or "mcp",
        metrics=metrics,
    )
    try:
        return run_proxy(options)
    except SpawnError as exc:
        raise CommandError(f"cannot start the server: {exc}", exc.status) from None
    except LogOpenError as exc:
        raise CommandError(str(exc)) from None
    except OutputError as exc:
        message = f"cannot write to standard output ({exc}); the server was not started"
        raise CommandError(message, ExitStatus.OUTPUT) from None


def _bridge(
    opts: ProxyCommandOptions,
    url: str,
    limit: int,
    policy: object,
    store: object,
    metrics: object,
) -> int:
    """``--url``: the stdio client bridged to a remote server (needs the ``mcp`` extra)."""
    headers = remote_headers("--url", url, opts.header_specs)
    try:
        from ..mcp_proxy.bridge import BridgeOptions, run_bridge
    except ImportError:
        raise CommandError("--url needs the MCP SDK: pip install 'loop-brake-cli[mcp]'") from None
    options = BridgeOptions(
        url=url,
        max_repeats=limit,
        headers=headers,
        shadow=opts.shadow,
        log_path=opts.log_path,
        shutdown_timeout=opts.shutdown_timeout,
        policy=policy,
        timeout=opts.timeout,
        read_timeout=opts.read_timeout,
        store=store,
        fail_closed=opts.fail_closed,
        label=opts.label or "mcp",
        metrics=metrics,
    )
    try:
        return run_bridge(options)
    except LogOpenError as exc:
        raise CommandError(str(exc)) from None
    except OutputError as exc:
        message = f"cannot write to standard output ({exc})"
        raise CommandError(message, ExitStatus.OUTPUT) from None
