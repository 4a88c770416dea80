"""The console entry point: ``loop-brake hook`` skips click entirely.

The hook runs before every tool call an agent makes, so its start-up is paid on
every call; it parses its own options (hook/runner.py), and importing click
and the command group would only add to that cost. Everything else goes
through the click group in cli.py.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and argv[1:2] not in (["install"], ["uninstall"]):
        from .hook.runner import main as hook_main

        _exit_now(hook_main(argv[1:]))
    if argv == ["--version"]:  # click's own --version says the same (cli.py), 2x slower
        from .commands.version import version_text

        _exit_now(_write_version(version_text() + "\n"))
    from .cli import main as cli_main

    if argv[:1] != ["filter"]:
        cli_main()
        return
    try:
        cli_main()
    except SystemExit as exc:  # cli.main always ends with sys.exit(int)
        _exit_now(exc.code if isinstance(exc.code, int) else 0)


def _write_version(text: str) -> int:
    """Write ``--version``'s text as the click path would end: 0, a reader that went
    away included (``| head``); 5 and one stderr line when stdout cannot take it
    (``>&-``, a full disk). Only that failure pays for importing click."""
    try:
        if sys.stdout is None:
            raise OSError("it is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        from .commands._command import silence

        silence("stdout")
        return 0
    except (OSError, ValueError) as exc:
        from .commands._command import output_failed

        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return output_failed(reason or exc.__class__.__name__)
    return 0


def _exit_now(status: int) -> NoReturn:
    """End the hook, or filter, without the interpreter's teardown (freeing every
    module and object: 6-7 ms, an eighth of a hook call; and after a filter of a
    million sessions, freeing each session's slot: about 0.1 s). Nothing is lost:
    the hook writes its answer and its log through raw descriptors and has closed
    its store, filter has flushed and closed its output and inputs and starts no
    thread, so only the standard text streams could hold anything, and they are
    flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed or unwritable: the hook has said what it could
            pass
    os._exit(status)
