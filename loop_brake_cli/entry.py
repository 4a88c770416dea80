"""The console entry point: ``loop-brake hook`` skips click entirely.

The hook runs before every tool call an agent makes, so its start-up is paid on
every call; it parses its own options (hook/runner.py), and importing click
and the command group would only add to that cost. Everything else goes
through the click group in cli.py.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and argv[1:2] not in (["install"], ["uninstall"]):
        from .hook.runner import main as hook_main

        sys.exit(hook_main(argv[1:]))
    from .cli import main as cli_main

    cli_main()
