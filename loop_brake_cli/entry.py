"""The console entry point: ``loop-brake hook`` skips click entirely.

The hook runs before every tool call an agent makes, so its start-up is paid on
every call; it parses its own options (hook/runner.py), and importing click
and the command group would only add to that cost. Everything else goes
through the click group in cli.py.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and argv[1:2] not in (["install"], ["uninstall"]):
        from .hook.runner import main as hook_main

        _exit_now(hook_main(argv[1:]))
    from .cli import main as cli_main

    cli_main()


def _exit_now(status: int) -> NoReturn:
    """End the hook without the interpreter's teardown (freeing every module and
    object: 6-7 ms, an eighth of a hook call). Nothing is lost: the hook writes
    its answer and its log through raw descriptors and has closed its store, so
    only the standard text streams could hold anything, and they are flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed or unwritable: the hook has said what it could
            pass
    os._exit(status)
