"""``loop-brake mcp-gateway``: the brake in front of a remote MCP server shared by many agents.

Only argument parsing lives here; the gateway itself is ``loop_brake_cli.mcp_gateway``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import click

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

PROG = "loop-brake mcp-gateway"
DEFAULT_MAX_SESSIONS = 20_000  # about 15 MB of sessions at most (700 bytes each)

GATEWAY_EXIT_HELP = (
    "Exit status: 0 after SIGINT or SIGTERM; before it listens, 2 usage or configuration "
    "error (an address it cannot listen on too), 3 an unreadable --policy."
)


def _note(message: str) -> None:
    click.echo(f"{PROG}: {message}", err=True)


@click.command(
    "mcp-gateway",
    cls=Command,
    epilog=GATEWAY_EXIT_HELP,
    short_help="Serve a remote MCP server to many agents, behind the brake.",
    more=(
        "forward_auth",
        "anonymous",
        "session_from",
        "max_body",
        "timeout",
        "read_timeout",
        "store_url",
        "idle_ttl",
        "fail_closed",
        "store_deadline",
        "store_workers",
        "max_sessions",
        "session_idle",
        "max_connections",
        "request_timeout",
        "keep_alive",
        "metrics",
        "metrics_sessions",
        "otel",
        "tenants_path",
    ),
    context_settings={"allow_interspersed_args": False},
)
@click.argument("server_command", nargs=-1, required=False, type=click.UNPROCESSED)
@click.option(
    "--listen",
    default="127.0.0.1:8808",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to serve Streamable HTTP (loopback unless you say otherwise; port 0: any).",
)
@click.option(
    "--upstream",
    metavar="URL",
    default=None,
    help=(
        "The MCP server's Streamable HTTP endpoint; or give --upstream without a URL "
        "before -- CMD ARGS to start a stdio server the gateway serves."
    ),
)
@header_option(
    "An HTTP header for every upstream request (repeatable); a last word env:VAR "
    "is read from the environment. Values are never printed or logged."
)
@click.option(
    "--forward-auth",
    is_flag=True,
    help="Pass each client's Authorization header to the upstream (default: never).",
)
@click.option(
    "--anonymous",
    type=click.Choice(["refuse", "connection"]),
    default="refuse",
    show_default=True,
    help=(
        "A tools/call that names no session (no _meta loop-brake/session, Loop-Brake-Session, "
        "Mcp-Session-Id or Authorization that --session-from believes): refuse it with an "
        "error, or count it per TCP connection. Never one streak shared by every client."
    ),
)
@click.option(
    "--session-from",
    metavar="SOURCE[,SOURCE...]",
    default="meta,header,mcp-session-id,authorization",
    show_default=True,
    help=(
        "The sources a call's session key may come from (in the order above, whatever "
        "order you write): a source left out is ignored as if absent, so with "
        "--session-from authorization a client that names a new session per call stays "
        "in its credential's streak."
    ),
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1024),
    default=4 << 20,
    show_default=True,
    help="Largest POST body in bytes (larger: HTTP 413).",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SESSIONS,
    show_default=True,
    metavar="N",
    help=(
        "Without --store: sessions held in memory; beyond it the least recently used "
        "is forgotten (it starts a new streak if it returns)."
    ),
)
@click.option(
    "--session-idle",
    metavar="DURATION",
    default="1h",
    show_default=True,
    help="Without --store: a session unused this long is forgotten (90s, 30m, 1h).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    metavar="N",
    help="Client connections open at once; one more is answered 503 and closed.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help=(
        "A request's headers and body must arrive within this (from the connection's "
        "start or its last answer), else the connection is closed (slow clients)."
    ),
)
@click.option(
    "--keep-alive",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="An idle client connection is closed after this.",
)
@timeout_options(
    "Seconds to connect to the upstream.",
    "Seconds the upstream may stay silent while answering a request.",
)
@max_repeats_option()
@shadow_option("Never deny: forward every call, and log what would have been.")
@log_option(
    "Append a verdict line per tools/call (with sessionSource; never arguments); "
    "created 0600, never through a symlink."
)
@policy_option()
@store_options
@click.option(
    "--store-deadline",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help=(
        "With --store: the longest a call waits for the store's decision; then it is "
        "allowed uncounted (denied with --fail-closed) and counted as a fail-open."
    ),
)
@click.option(
    "--store-workers",
    type=click.IntRange(min=1, max=1024),
    default=16,
    show_default=True,
    metavar="N",
    help=(
        "With --store: threads asking the store at once (Redis; a SQLite store gets one). "
        "No request waits on the store but the calls that need it."
    ),
)
@click.option(
    "--metrics",
    is_flag=True,
    help="Serve GET /metrics (Prometheus text): calls by tool, rule and outcome; never arguments.",
)
@click.option(
    "--metrics-sessions",
    is_flag=True,
    help="Also count calls by session key in /metrics and --otel "
    "(names may be secrets: off by default).",
)
@otel_option(
    "Export metrics with OpenTelemetry (the otel extra) as the OTEL_* environment "
    "variables say (OTLP over HTTP by default): what /metrics shows; never arguments."
)
@click.option(
    "--tenants",
    "tenants_path",
    metavar="FILE",
    default=None,
    help=(
        "Per-tenant policies (TOML): a caller's calls are judged under its tenant's limits, "
        "chosen by credential digest, a header you name, or a session-name prefix."
    ),
)
def mcp_gateway_command(**params: Any) -> int:
    """Serve the MCP server at --upstream to many agents, braking each session's calls.

    \b
    loop-brake mcp-gateway --upstream https://mcp.example.com/mcp \\
      --header 'Authorization: Bearer env:EXAMPLE_TOKEN'
    loop-brake mcp-gateway --upstream -- \\
      npx -y @modelcontextprotocol/server-everything

    Agents connect to http://127.0.0.1:8808/mcp (any path) with Streamable HTTP.
    Each tools/call counts in its session: params._meta["loop-brake/session"],
    else a Loop-Brake-Session header, else the Mcp-Session-Id, else a digest of
    the Authorization header; with none, --anonymous decides. --session-from
    names the sources believed (default: all four); e.g. with --session-from
    authorization an agent that names a new session for every call still counts
    in its credential's streak. A denied call never reaches the upstream: the
    agent gets a tool error (isError: true).
    """
    return run_mcp_gateway(GatewayCommandOptions(**params))


class GatewayCommandOptions(NamedTuple):
    """``mcp-gateway``'s options, as parsed (one field per option, named as click names it)."""

    server_command: tuple[str, ...]
    listen: str
    upstream: str | None
    header_specs: tuple[str, ...]
    forward_auth: bool
    anonymous: str
    session_from: str
    max_body: int
    max_sessions: int
    session_idle: str
    max_connections: int
    request_timeout: float
    keep_alive: float
    timeout: float
    read_timeout: float
    max_repeats: int | None
    shadow: bool
    log_path: str | None
    policy_path: str | None
    store_url: str | None
    idle_ttl: str | None
    fail_closed: bool
    store_deadline: float
    store_workers: int
    metrics: bool
    metrics_sessions: bool
    otel: bool
    tenants_path: str | None


def run_mcp_gateway(opts: GatewayCommandOptions) -> int:
    """Every setting checked (a usage error, exit 2, before it listens), then serve."""
    limit, _source, policy = resolve_settings(opts.max_repeats, opts.policy_path)
    upstream, stdio = _upstream(opts.upstream, opts.server_command)
    headers = remote_headers("--upstream", upstream, opts.header_specs)
    try:
        from ..mcp_gateway.app import GatewayConfig
        from ..mcp_gateway.serve import ListenError, is_loopback, parse_listen, run_gateway
        from ..mcp_shared.verdict_log import LogOpenError
    except ImportError:
        raise CommandError(
            "mcp-gateway needs the MCP SDK: pip install 'loop-brake-cli[mcp]'"
        ) from None
    try:
        host, port = parse_listen(opts.listen)
    except ListenError as exc:
        raise CommandError(str(exc)) from None

    from ..mcp_gateway.keys import believed_sources

    try:
        session_from = believed_sources(opts.session_from)
    except ValueError as exc:
        raise CommandError(f"--session-from: {exc}") from None
    tenants = _tenants(opts.tenants_path, limit, policy, session_from)
    from ..hook.runner import parse_duration
    from ..mcp_gateway.limits import GatewayLimits

    try:
        session_idle = parse_duration(opts.session_idle)
    except ValueError as exc:
        raise CommandError(f"--session-idle: {exc}") from None
    limits = GatewayLimits(opts.max_connections, opts.request_timeout, opts.keep_alive)
    config = GatewayConfig(
        upstream,
        headers,
        timeout=opts.timeout,
        read_timeout=opts.read_timeout,
        max_body=opts.max_body,
        forward_auth=opts.forward_auth,
        loopback=is_loopback(host),
        limits=limits,
    )
    if opts.metrics_sessions and not (opts.metrics or opts.otel):
        raise CommandError("--metrics-sessions needs --metrics or --otel")
    store = open_shared_store(opts.store_url, opts.idle_ttl, _note)
    brake_options = {
        "max_repeats": limit,
        "shadow": opts.shadow,
        "anonymous": opts.anonymous,
        "session_from": session_from,
        "policy": policy,
        "store": store,
        "fail_closed": opts.fail_closed,
        "store_deadline": opts.store_deadline,
        "store_workers": opts.store_workers,
        "max_sessions": opts.max_sessions,
        "session_idle": session_idle,
        "metrics": _metrics(opts),
        "serve_metrics": opts.metrics,
        "tenants": tenants,
    }
    exporter = start_otel(opts.otel, "loop-brake-mcp-gateway")
    brake_options["otel"] = exporter
    try:
        return run_gateway((host, port), config, brake_options, opts.log_path, stdio)
    except (ListenError, LogOpenError) as exc:
        raise CommandError(str(exc)) from None
    finally:
        if exporter is not None:
            exporter.shutdown()  # what was counted last is exported


def _upstream(upstream: str | None, command: tuple[str, ...]) -> tuple[str, list[str] | None]:
    """The upstream's URL, and the stdio server's command (None for a remote upstream)."""
    if upstream == "--":  # --upstream -- CMD ARGS: click took the -- as the value
        if not command:
            raise CommandError("--upstream -- needs a server command after it")
        return "http://127.0.0.1/mcp", list(command)  # replaced by the child's address
    if command:
        raise CommandError("a server command goes after --upstream --, not with --upstream URL")
    if upstream is None:
        raise CommandError("give --upstream URL, or --upstream -- CMD ARGS for a stdio server")
    return upstream, None


def _metrics(opts: GatewayCommandOptions) -> Any:
    """What ``--metrics`` and ``--otel`` read (None: neither asked)."""
    if not (opts.metrics or opts.otel):
        return None
    from ..mcp_gateway.metrics import GatewayMetrics

    return GatewayMetrics(sessions=opts.metrics_sessions)


def _tenants(path: str | None, limit: int, policy: Any, session_from: tuple[str, ...]) -> Any:
    """``--tenants FILE`` read (None without it); its mistakes are one located error each
    (exit 2; 3 for a file that cannot be read), ``session_prefixes`` that no believed
    source could match (``--session-from`` without meta and header) among them."""
    if path is None:
        return None
    from ..mcp_gateway.tenants import TenantError, load_tenants

    try:
        names = "meta" in session_from or "header" in session_from
        return load_tenants(path, limit, policy, client_names=names)
    except TenantError as exc:
        raise CommandError(f"--tenants: {exc}", 3 if exc.unopened else 2) from None
