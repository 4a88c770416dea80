"""``loop-brake hash``: which known call does a prefix in a log name?"""

from __future__ import annotations

import click

from ..core.canonical import JSONInputError, call_hash, hash_prefix, parse_json
from ..core.exitcodes import ExitStatus, epilog
from ._command import Command


@click.command("hash", cls=Command, epilog=epilog("hash"))
@click.argument("tool")
@click.argument("args_json", required=False, default="{}")
@click.option("--full", is_flag=True, help="Print the whole sha256 (for local debugging only).")
def hash_command(tool: str, args_json: str, full: bool) -> int:
    """Print the hash prefix of TOOL called with ARGS_JSON (default {}).

    ARGS_JSON is parsed as strict JSON, exactly as the brake parses arguments,
    so the prefix printed here equals the one in a verdict or a harness log.
    """
    try:
        args = parse_json(args_json.encode("utf-8", "surrogateescape"))
    except JSONInputError as exc:
        click.echo(f"loop-brake hash: ARGS_JSON: {exc}", err=True)
        return ExitStatus.USAGE
    digest = call_hash(tool, args)
    click.echo(digest if full else hash_prefix(digest))
    return ExitStatus.OK
