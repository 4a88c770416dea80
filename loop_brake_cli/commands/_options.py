"""The options every braking command spells the same way, and resolving their maxRepeats.

``filter``, ``replay`` and ``mcp-proxy`` take the same flags with the same
types and defaults, as ``mcp-proxy`` and ``mcp-gateway`` do for a remote server
(``--header``, ``--timeout``, ``--read-timeout``; ``remote_headers`` checks the
URL and reads the headers), ``--shadow`` and ``--log``; only the help text says
what each command does with them.
An unusable maxRepeats is reported before any input is read: exit 2; a
``--config`` file that cannot be opened is unreadable input: exit 3.

Also here: ``Count`` (a whole number with a minimum, and an error that says
so), ``JsonCommand`` (with ``--json``, click's usage errors are one JSON
object on stdout) and ``Errors`` (a command's own errors, as stderr lines or
that JSON object).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.exitcodes import ExitStatus
from ..core.limits import InvalidMaxRepeatsError, resolve_max_repeats
from ..readers.reader import DEFAULT_MAX_LINE_BYTES
from ..render.visible import visible

F = TypeVar("F", bound=Callable[..., Any])

MAX_REPEATS_HELP = (
    "Deny the call that brings a streak to N (default: $DSH_LOOP_BRAKE_MAX_REPEATS, else 3)."
)


def max_repeats_option(help: str = MAX_REPEATS_HELP) -> Callable[[F], F]:
    return click.option("-m", "--max-repeats", type=int, default=None, help=help)


POLICY_HELP = (
    "Policy file (TOML: per-tool limits, exemptions, cycles, stop). Default: "
    "$LOOP_BRAKE_POLICY, else .loop-brake.toml or [tool.loop-brake] in pyproject.toml "
    "upward from here, else ~/.config/loop-brake/policy.toml, else none."
)


def file_option(name: str, dest: str, help: str) -> Callable[[F], F]:
    """An option naming one FILE (not a directory), None without it."""
    return click.option(
        name, dest, type=click.Path(dir_okay=False), default=None, metavar="FILE", help=help
    )


def policy_option(help: str = POLICY_HELP) -> Callable[[F], F]:
    return file_option("--policy", "policy_path", help)


def resolve_policy(errors: Errors, explicit: str | None) -> Any:
    """The policy that applies (a ``policy.Policy``, or None), or the exit status 2 after
    ``errors`` gave its located errors: always before any input is read."""
    from ..core import policy  # PolicyError is looked up only when raised: it loads the rule model

    try:
        return policy.discover_policy(explicit)
    except policy.PolicyError as exc:
        return errors(str(exc))


STORE_HELP = (
    "Count in a store shared with other processes and hosts: a path or sqlite:///path "
    "(one machine), redis://HOST:PORT/DB, rediss://... (TLS) or unix:///PATH (one Redis "
    "or Valkey server for a fleet; pip install 'loop-brake-cli[redis]'). Default: "
    "$LOOP_BRAKE_STORE, else in memory."
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


def open_shared_store(errors: Errors, url: str | None, idle_ttl: str | None, warn: Any) -> Any:
    """The store ``--store`` (else ``$LOOP_BRAKE_STORE``) names, None without one, or the
    exit status 2 after one line (a bad URL or duration, redis-py missing). Nothing is
    connected yet: an unreachable server is the calls' failure, not a usage error."""
    import os

    from ..stores import DEFAULT_IDLE_TTL, ENV_STORE, StoreError, open_store

    target = url or os.environ.get(ENV_STORE)
    if not target:
        if idle_ttl is not None:
            return errors("--idle-ttl needs --store (or $LOOP_BRAKE_STORE)")
        return None
    ttl = DEFAULT_IDLE_TTL
    if idle_ttl is not None:
        from ..hook.runner import parse_duration

        try:
            ttl = parse_duration(idle_ttl)
        except ValueError as exc:
            return errors(f"--idle-ttl: {exc}")
    try:
        return open_store(target, idle_ttl=ttl, warn=warn)
    except (ValueError, StoreError) as exc:
        return errors(f"--store: {exc}")


def shadow_option(help: str) -> Callable[[F], F]:
    return click.option("--shadow", is_flag=True, help=help)


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
        help=help,
    )


def timeout_options(connect_help: str, read_help: str) -> Callable[[F], F]:
    """``--timeout`` and ``--read-timeout``: seconds to connect to a remote MCP server, and
    seconds it may stay silent while answering."""

    def options(f: F) -> F:
        f = _seconds_option("--read-timeout", 300.0, read_help)(f)
        return _seconds_option("--timeout", 10.0, connect_help)(f)

    return options


def remote_headers(
    errors: Errors, option: str, url: str, header_specs: Sequence[str]
) -> list[tuple[str, str]] | ExitStatus:
    """The headers ``--header`` gives for the remote server at ``url``, or the exit status 2
    after one line: ``url`` (given by ``option``) is not http(s), or a header is malformed.
    The line shows the URL without its credentials and never a header's value."""
    from ..mcp_shared.headers import HeaderError, parse_headers, safe_url

    if not url.startswith(("http://", "https://")) or safe_url(url).endswith("://"):
        return errors(f"{option} must be an http:// or https:// URL, got {safe_url(url)!r}")
    try:
        return parse_headers(header_specs)
    except HeaderError as exc:
        return errors(str(exc))


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


def json_wanted(args: Sequence[str]) -> bool:
    """Did the command line ask for ``--json`` (before a ``--``)?"""
    args = list(args)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class JsonUsageError(click.UsageError):
    """A usage error for a caller that asked for JSON: one object on stdout, same status."""

    def show(self, file: Any = None) -> None:
        click.echo(json.dumps({"error": self.format_message(), "status": self.exit_code}))


class JsonCommand(click.Command):
    """A command with ``--json``: click's own usage errors (a bad option, a bad value)
    are printed as ``{"error": ..., "status": 2}`` on stdout when ``--json`` was asked for."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wanted = json_wanted(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if not wanted:
                raise
            raise JsonUsageError(exc.format_message(), ctx) from None


class Errors:
    """A command's own errors: ``prog: message`` on stderr, or with ``--json`` one JSON
    object ``{"error": message, "status": N}`` on stdout (and nothing on stderr)."""

    def __init__(self, prog: str, as_json: bool = False) -> None:
        self.prog = prog
        self.as_json = as_json

    def __call__(self, message: str, status: ExitStatus = ExitStatus.USAGE) -> ExitStatus:
        if self.as_json:
            click.echo(json.dumps({"error": message, "status": int(status)}, ensure_ascii=False))
        else:
            for line in message.splitlines():
                click.echo(f"{self.prog}: {visible(line)}", err=True)
        return status


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


def resolve(
    errors: Errors, explicit: int | None, config_paths: Sequence[str] = ()
) -> tuple[int, str] | ExitStatus:
    """maxRepeats and where it came from, or the exit status after ``errors`` said why not:
    3 for a ``--config`` file that cannot be opened, 2 for an unusable value."""
    if config_paths and explicit is None:
        missing = unopenable(config_paths)
        if missing is not None:
            return errors(missing, ExitStatus.UNREADABLE)
    try:
        if config_paths:
            from ..config import ConfigError, max_repeats_for_cli  # reads YAML: only when asked

            try:
                return max_repeats_for_cli(explicit, list(config_paths))
            except ConfigError as exc:
                return errors(str(exc))
        return resolve_max_repeats(explicit)
    except InvalidMaxRepeatsError as exc:
        return errors(str(exc))


def resolve_settings(
    errors: Errors,
    explicit: int | None,
    policy_path: str | None,
    config_paths: Sequence[str] = (),
) -> tuple[int, str, Any] | ExitStatus:
    """maxRepeats, where it came from, and the policy (or None); or the exit status after
    ``errors`` said why not: maxRepeats first (``resolve``), then the policy
    (``resolve_policy``), so every braking command reports a bad setting alike."""
    resolved = resolve(errors, explicit, config_paths)
    if isinstance(resolved, ExitStatus):
        return resolved
    policy = resolve_policy(errors, policy_path)
    if isinstance(policy, ExitStatus):
        return policy
    return resolved[0], resolved[1], policy
