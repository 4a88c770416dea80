"""The options every braking command spells the same way, and resolving their maxRepeats.

``filter``, ``replay`` and ``mcp-proxy`` take the same flags with the same
types and defaults; only the help text says what each command does with them.
An unusable maxRepeats is reported before any input is read: exit 2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..brake import InvalidMaxRepeatsError, resolve_max_repeats
from ..reader import DEFAULT_MAX_LINE_BYTES

F = TypeVar("F", bound=Callable[..., Any])

MAX_REPEATS_HELP = (
    "Deny the call that brings a streak to N (default: $DSH_LOOP_BRAKE_MAX_REPEATS, else 3)."
)


def max_repeats_option(help: str = MAX_REPEATS_HELP) -> Callable[[F], F]:
    return click.option("-m", "--max-repeats", type=int, default=None, help=help)


def config_option(help: str, metavar: str | None = None) -> Callable[[F], F]:
    return click.option(
        "--config",
        "config_paths",
        multiple=True,
        type=click.Path(dir_okay=False),
        metavar=metavar,
        help=help,
    )


def max_line_bytes_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--max-line-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_LINE_BYTES,
        show_default=True,
        help=help,
    )


def resolve_or_report(
    prog: str, explicit: int | None, config_paths: Sequence[str] = ()
) -> tuple[int, str] | None:
    """maxRepeats and where it came from, or None after telling stderr why it is unusable."""
    try:
        if config_paths:
            from ..config import ConfigError, max_repeats_for_cli  # reads YAML: only when asked

            try:
                return max_repeats_for_cli(explicit, list(config_paths))
            except ConfigError as exc:
                message = str(exc)
        else:
            return resolve_max_repeats(explicit)
    except InvalidMaxRepeatsError as exc:
        message = str(exc)
    for line in message.splitlines():
        click.echo(f"{prog}: {line}", err=True)
    return None
