"""The options every braking command spells the same way, and resolving their maxRepeats.

``filter``, ``replay`` and ``mcp-proxy`` take the same flags with the same
types and defaults, as ``mcp-proxy`` and ``mcp-gateway`` do for a remote server
(``--header``, ``--timeout``, ``--read-timeout``; ``remote_headers`` checks the
URL and reads the headers), ``--shadow`` and ``--log``; only the help text says
what each command does with them.
An unusable maxRepeats is reported before any input is read: exit 2; a
``--config`` file that cannot be opened is unreadable input: exit 3.

Also here: ``Count`` (a whole number with a minimum, and an error that says
so). Every helper that finds an unusable value raises ``CommandError``
(``_command.py``), which the command says as its own error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.exitcodes import ExitStatus
from ..core.limits import InvalidMaxRepeatsError, resolve_max_repeats
from ..readers.reader import DEFAULT_MAX_LINE_BYTES
from ._command import CommandError

F = TypeVar("F", bound=Callable[..., Any])

MAX_REPEATS_HELP = (
    "Deny the call that brings a streak to N (default: $DSH_LOOP_BRAKE_MAX_REPEATS, else 3)."
)


def max_repeats_option(help: str = MAX_REPEATS_HELP) -> Callable[[F], F]:
    return click.option("-m", "--max-repeats", type=int, default=None, metavar="N", help=help)


POLICY_HELP = (
    "Policy file: per-tool limits, exemptions, cycles, stop (TOML). Default: "
    "$LOOP_BRAKE_POLICY, else one found from here (docs/policies.md), else none."
)


def file_option(name: str, dest: str, help: str) -> Callable[[F], F]:
    """An option naming one FILE (not a directory), None without it."""
    return click.option(
        name, dest, type=click.Path(dir_okay=False), default=None, metavar="FILE", help=help
    )


def policy_option(help: str = POLICY_HELP) -> Callable[[F], F]:
    return file_option("--policy", "policy_path", help)


def resolve_policy(explicit: str | None) -> Any:
    """The policy that applies (a ``policy.Policy``, or None); else ``CommandError`` with
    its located errors, always before any input is read: status 3 for a file that cannot
    be opened or read (as any unreadable input), 2 for one that is not a usable policy."""
    from ..core import policy  # PolicyError is looked up only when raised: it loads the rule model

    try:
        return policy.discover_policy(explicit)
    except policy.PolicyError as exc:
        status = ExitStatus.UNREADABLE if exc.unopened else ExitStatus.USAGE
        raise CommandError(str(exc), status) from None


STORE_HELP = (
    "Count in a store shared with other processes and hosts: a path or sqlite:///path "
    "(one machine), redis://HOST:PORT/DB, rediss://... (TLS) or unix:///PATH (one Redis "
    "or Valkey server for a fleet: the redis extra). Default: $LOOP_BRAKE_STORE, else "
    "in memory."
)


def store_options(f: F) -> F:
    """``--store``, ``--idle-ttl`` and ``--fail-closed``: the shared store (``stores``)."""
    f = click.option(
        "--fail-closed",
        is_flag=True,
        help="When the store cannot be asked, deny the call (default: allow it, uncounted).",
    )(f)
    f = click.option(
        "--idle-ttl",
        metavar="DURATION",
        default=None,
        help="With --store: a session idle this long starts afresh (default 24h; 90s, 30m, 7d).",
    )(f)
    return click.option("--store", "store_url", metavar="URL", default=None, help=STORE_HELP)(f)


def open_shared_store(url: str | None, idle_ttl: str | None, warn: Any) -> Any:
    """The store ``--store`` (else ``$LOOP_BRAKE_STORE``) names, None without one; else
    ``CommandError``, status 2 (a bad URL or duration, redis-py missing). Nothing is
    connected yet: an unreachable server is the calls' failure, not a usage error."""
    import os

    from ..stores import DEFAULT_IDLE_TTL, ENV_STORE, StoreError, open_store

    target = url or os.environ.get(ENV_STORE)
    if not target:
        if idle_ttl is not None:
            raise CommandError("--idle-ttl needs --store (or $LOOP_BRAKE_STORE)")
        return None
    ttl = DEFAULT_IDLE_TTL
    if idle_ttl is not None:
        from ..hook.runner import parse_duration

        try:
            ttl = parse_duration(idle_ttl)
        except ValueError as exc:
            raise CommandError(f"--idle-ttl: {exc}") from None
    try:
        return open_store(target, idle_ttl=ttl, warn=warn)
    except (ValueError, StoreError) as exc:
        raise CommandError(f"--store: {exc}") from None


def shadow_option(help: str) -> Callable[[F], F]:
    return click.option("--shadow", is_flag=True, help=help)


def otel_option(help: str) -> Callable[[F], F]:
    return click.option("--otel", is_flag=True, help=help)


def start_otel(asked: bool, service: str) -> Any:
    """The OpenTelemetry exporter ``--otel`` asks for, as the ``OTEL_*`` variables
    describe it (None without ``--otel``: nothing of OpenTelemetry is imported); a
    missing ``otel`` extra or a wrong variable is a usage error (exit 2)."""
    if not asked:
        return None
    from ..telemetry import TelemetryError, start_exporter

    try:
        return start_exporter(service)
    except TelemetryError as exc:
        raise CommandError(f"--otel: {exc}") from None


def log_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--log", "log_path", type=click.Path(dir_okay=False), default=None, help=help
    )


def header_option(help: str) -> Callable[[F], F]:
    """``--header`` (repeatable) for a remote MCP server; ``remote_headers`` reads it."""
    return click.option(
        "--header", "header_specs", multiple=True, metavar="'NAME: VALUE'", help=help
    )


def _seconds_option(name: str, default: float, help: str) -> Callable[[F], F]:
    return click.option(
        name,
        type=click.FloatRange(min=0, min_open=True),
        default=default,
        show_default=True,
        metavar="SECONDS",
        help=help,
    )


def timeout_options(connect_help: str, read_help: str) -> Callable[[F], F]:
    """``--timeout`` and ``--read-timeout``: seconds to connect to a remote MCP server, and
    seconds it may stay silent while answering."""

    def options(f: F) -> F:
        f = _seconds_option("--read-timeout", 300.0, read_help)(f)
        return _seconds_option("--timeout", 10.0, connect_help)(f)

    return options


def remote_headers(option: str, url: str, header_specs: Sequence[str]) -> list[tuple[str, str]]:
    """The headers ``--header`` gives for the remote server at ``url``; else ``CommandError``,
    status 2: ``url`` (given by ``option``) is not http(s), or a header is malformed.
    The message shows the URL without its credentials and never a header's value."""
    from ..mcp_shared.headers import HeaderError, parse_headers, safe_url

    if not url.startswith(("http://", "https://")) or safe_url(url).endswith("://"):
        raise CommandError(f"{option} must be an http:// or https:// URL, got {safe_url(url)!r}")
    try:
        return parse_headers(header_specs)
    except HeaderError as exc:
        raise CommandError(str(exc)) from None


def config_option(help: str, metavar: str | None = None) -> Callable[[F], F]:
    return click.option(
        "--config",
        "config_paths",
        multiple=True,
        type=click.Path(dir_okay=False),
        metavar=metavar,
        help=help,
    )


class Count(click.ParamType):
    """A whole number of at least ``minimum``; a bad value says what form is expected."""

    name = "integer"

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and re.fullmatch(r"\s*\+?[0-9]+\s*", value):
            number = int(value)
        else:
            self.fail(f"expected a whole number of at least {self.minimum}, got {value!r}")
        if number < self.minimum:
            self.fail(f"expected a whole number of at least {self.minimum}, got {number}")
        return number


def max_line_bytes_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--max-line-bytes",
        type=Count(1),
        default=DEFAULT_MAX_LINE_BYTES,
        show_default=True,
        help=help,
    )


def unopenable(paths: Sequence[str]) -> str | None:
    """``cannot open PATH: reason`` for the first file that cannot be opened, else None.
    Opened without waiting: a FIFO is then refused by the reader, never waited on."""
    from ..core.small_file import NONBLOCKING_READ

    for path in paths:
        try:
            os.close(os.open(path, NONBLOCKING_READ))
        except OSError as exc:
            return f"cannot open {path}: {exc.strerror or exc.__class__.__name__}"
    return None


def resolve(explicit: int | None, config_paths: Sequence[str] = ()) -> tuple[int, str]:
    """maxRepeats and where it came from; else ``CommandError``: status 3 for a
    ``--config`` file that cannot be opened, 2 for an unusable value."""
    if config_paths and explicit is None:
        missing = unopenable(config_paths)
        if missing is not None:
            raise CommandError(missing, ExitStatus.UNREADABLE)
    try:
        if config_paths:
            from ..config import ConfigError, max_repeats_for_cli  # reads YAML: only when asked

            try:
                return max_repeats_for_cli(explicit, list(config_paths))
            except ConfigError as exc:
                raise CommandError(str(exc)) from None
        return resolve_max_repeats(explicit)
    except InvalidMaxRepeatsError as exc:
        raise CommandError(str(exc)) from None


def resolve_settings(
    explicit: int | None, policy_path: str | None, config_paths: Sequence[str] = ()
) -> tuple[int, str, Any]:
    """maxRepeats, where it came from, and the policy (or None); else ``CommandError``:
    maxRepeats first (``resolve``), then the policy (``resolve_policy``), so every
    braking command reports a bad setting alike."""
    value, source = resolve(explicit, config_paths)
    return value, source, resolve_policy(policy_path)
