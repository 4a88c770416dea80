"""``loop-brake state list|reset``: look at or clear the hook's on-disk streaks."""

from __future__ import annotations

import time

import click

from ..core.exitcodes import ExitStatus, epilog
from ..render.visible import visible
from ._command import Command, CommandError, Group

_STATE_HELP = (
    "SQLite state file (default: $LOOP_BRAKE_STATE, else "
    "${XDG_STATE_HOME:-~/.local/state}/loop-brake/state.db)."
)


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _shown_id(call_id: object) -> str:
    """A call id for the table: as written (a string or an integer), "-" for none."""
    if call_id is None:
        return "-"
    return str(call_id) if call_id != "" else '""'


_STORE_HELP = (
    "The store: a path or sqlite:///path, or redis://, rediss://, unix:// (a shared "
    "Redis or Valkey). Default: $LOOP_BRAKE_STORE, else the --state file."
)


def _store(url: str | None, path: str | None):
    """The store the options name; a bad URL is a usage error (exit 2)."""
    from ..stores import StoreError, open_store, store_target

    def warn(message: str) -> None:
        click.echo(f"loop-brake state: {visible(message, lines=True)}", err=True)

    try:
        return open_store(store_target(url, path), warn=warn)
    except (ValueError, StoreError) as exc:
        raise click.UsageError(f"--store: {exc}") from None


def _failed(exc: Exception) -> ExitStatus:
    """One line: 2 for a path that is not a store (a bad --state), else 3 (unreadable)."""
    from ..stores.sqlite_file import NotAStoreError

    click.echo(f"loop-brake state: {visible(str(exc), lines=True)}", err=True)
    return ExitStatus.USAGE if isinstance(exc, NotAStoreError) else ExitStatus.UNREADABLE


@click.group(
    "state",
    cls=Group,
    epilog=epilog("state"),
    short_help="List or reset the hook's per-session streaks.",
)
def state_command() -> None:
    """List or reset the streaks `loop-brake hook` keeps on disk (never arguments)."""


@state_command.command("list", cls=Command, epilog=epilog("state"))
@click.option("--session", "session", metavar="KEY", help="Only this session key.")
@click.option("--state", "path", metavar="PATH", help=_STATE_HELP)
@click.option("--store", "url", metavar="URL", help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session.")
def list_command(session: str | None, path: str | None, url: str | None, as_json: bool) -> int:
    """Sessions with their tool, streak count, hash prefix, last call id and age.

    Read-only: the store is never created, changed or moved aside."""
    from ..stores import StoreError

    store = _store(url, path)
    try:
        rows, skipped = store.sessions(session)
    except StoreError as exc:
        return _failed(exc)
    finally:
        store.close()
    if skipped:
        click.echo(
            f"loop-brake state: skipped {skipped} row(s) of {store.label} whose columns "
            "hold the wrong types (not written by loop-brake)",
            err=True,
        )
        if not rows:
            return ExitStatus.UNREADABLE
    status = _listed(rows, session, as_json, store.label)
    return ExitStatus.UNREADABLE if skipped else status


def _listed(rows: list, session: str | None, as_json: bool, path: str) -> ExitStatus:
    from ..readers.output import json_line

    now = time.time()
    if as_json:
        for row in rows:
            obj = {
                "sessionId": row.session,
                "toolName": row.tool,
                "count": row.count,
                "hashPrefix": row.hash_prefix,
                "callId": row.call_id,
                "ageSeconds": round(now - row.updated, 3),
            }
            click.echo(json_line(obj).decode("utf-8"), nl=False)  # a lone surrogate escaped
        return ExitStatus.OK if rows or session is None else ExitStatus.NOT_FOUND
    if not rows:
        click.echo(f"no sessions in {path}", err=True)
        return ExitStatus.OK if session is None else ExitStatus.NOT_FOUND
    table = [("SESSION", "TOOL", "COUNT", "HASH", "CALL ID", "AGE")]
    for row in rows:
        table.append(
            (
                visible(row.session),
                visible(row.tool),
                str(row.count),
                row.hash_prefix,
                visible(_shown_id(row.call_id)),
                _age(now - row.updated),
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        row = "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        click.echo(row)
    return ExitStatus.OK


@state_command.command("reset", cls=Command, epilog=epilog("state"))
@click.option("--session", "session", metavar="KEY", help="Forget this session's streak.")
@click.option("--all", "every", is_flag=True, help="Forget every session's streak.")
@click.option("--state", "path", metavar="PATH", help=_STATE_HELP)
@click.option("--store", "url", metavar="URL", help=_STORE_HELP)
def reset_command(session: str | None, every: bool, path: str | None, url: str | None) -> int:
    """Forget one session's streak (--session KEY), or every session's (--all)."""
    from ..stores import StoreError

    if (session is None) == (not every):
        raise CommandError(
            "give --session KEY, or --all to forget every session"
            if session is None
            else "--session KEY and --all exclude each other: give one"
        )
    store = _store(url, path)
    try:
        removed = store.reset(session)
    except StoreError as exc:
        return _failed(exc)
    finally:
        store.close()
    if session is not None and removed == 0:
        message = f"loop-brake state: no session {session} in {store.path}: nothing reset"
        click.echo(message, err=True)
        return ExitStatus.NOT_FOUND
    what = f"session {session}" if session is not None else "all sessions"
    click.echo(f"loop-brake state: reset {what} ({removed} removed)", err=True)
    return ExitStatus.OK
