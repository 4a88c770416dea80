"""``loop-brake mcp-gateway``: the brake in front of a remote MCP server shared by many agents.

Only argument parsing lives here; the gateway itself is ``loop_brake_cli.mcp_gateway``.
"""

from __future__ import annotations

import click

from ..core.exitcodes import ExitStatus
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

PROG = "loop-brake mcp-gateway"

GATEWAY_EXIT_HELP = (
    "Exit status: 0 after SIGINT or SIGTERM; 2 usage or configuration error "
    "(including an address it cannot listen on), before it listens."
)


def _note(message: str) -> None:
    click.echo(f"{PROG}: {message}", err=True)


@click.command(
    "mcp-gateway",
    epilog=GATEWAY_EXIT_HELP,
    short_help="Serve a remote MCP server to many agents, behind the brake.",
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
        "Mcp-Session-Id or Authorization): refuse it with an error, or count it per TCP "
        "connection. Never one streak shared by every client."
    ),
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1024),
    default=4 << 20,
    show_default=True,
    help="Largest POST body in bytes (larger: HTTP 413).",
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
def mcp_gateway_command(
    server_command: tuple[str, ...],
    listen: str,
    upstream: str | None,
    header_specs: tuple[str, ...],
    forward_auth: bool,
    anonymous: str,
    max_body: int,
    timeout: float,
    read_timeout: float,
    max_repeats: int | None,
    shadow: bool,
    log_path: str | None,
    policy_path: str | None = None,
    store_url: str | None = None,
    idle_ttl: str | None = None,
    fail_closed: bool = False,
) -> int:
    """Serve the MCP server at --upstream to many agents, braking each session's calls.

    \b
    loop-brake mcp-gateway --listen 127.0.0.1:8808 --upstream https://mcp.example.com/mcp \\
      --header 'Authorization: Bearer env:EXAMPLE_TOKEN'
    loop-brake mcp-gateway --upstream -- npx -y @modelcontextprotocol/server-everything

    Agents connect to http://127.0.0.1:8808/mcp (any path) with Streamable HTTP.
    Each tools/call counts in its session: params._meta["loop-brake/session"],
    else a Loop-Brake-Session header, else the Mcp-Session-Id, else a digest of
    the Authorization header; with none, --anonymous decides. A denied call never
    reaches the upstream: the agent gets a tool error (isError: true).
    With --store redis://... several gateways behind one address share streaks.
    """
    errors = Errors(PROG)
    settings = resolve_settings(errors, max_repeats, policy_path)
    if isinstance(settings, ExitStatus):
        return settings
    limit, _source, policy = settings
    stdio: list[str] | None = None
    if upstream == "--":  # --upstream -- CMD ARGS: click took the -- as the value
        if not server_command:
            return errors("--upstream -- needs a server command after it")
        stdio = list(server_command)
        upstream = "http://127.0.0.1/mcp"  # replaced by the child's address once it listens
    elif server_command:
        return errors("a server command goes after --upstream --, not with --upstream URL")
    elif upstream is None:
        return errors("give --upstream URL, or --upstream -- CMD ARGS for a stdio server")
    headers = remote_headers(errors, "--upstream", upstream, header_specs)
    if isinstance(headers, ExitStatus):
        return headers
    try:
        from ..mcp_gateway.app import GatewayConfig
        from ..mcp_gateway.serve import ListenError, is_loopback, parse_listen, run_gateway
        from ..mcp_shared.verdict_log import LogOpenError
    except ImportError:
        return errors("mcp-gateway needs the MCP SDK: pip install 'loop-brake-cli[mcp]'")
    try:
        host, port = parse_listen(listen)
    except ListenError as exc:
        return errors(str(exc))
    from ..core.brake import LoopBrake

    if LoopBrake(limit, policy=policy).progress:
        return errors(
            "a policy with progress or [same_error] is not supported by mcp-gateway"
            " (results are not read)"
        )
    config = GatewayConfig(
        upstream,
        headers,
        timeout=timeout,
        read_timeout=read_timeout,
        max_body=max_body,
        forward_auth=forward_auth,
        loopback=is_loopback(host),
    )
    store = open_shared_store(errors, store_url, idle_ttl, _note)
    if isinstance(store, ExitStatus):
        return store
    brake_options = {
        "max_repeats": limit,
        "shadow": shadow,
        "anonymous": anonymous,
        "policy": policy,
        "store": store,
        "fail_closed": fail_closed,
    }
    try:
        return run_gateway((host, port), config, brake_options, log_path, stdio)
    except (ListenError, LogOpenError) as exc:
        return errors(str(exc))
