"""Exit statuses a script can rely on; documented in the README and in --help."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    BRAKE = 1  # a call was (or would be) denied where the caller asked to fail, or a check failed
    USAGE = 2  # bad options or configuration (including an invalid maxRepeats)
    UNREADABLE = 3  # input that could not be read (with --strict: any unreadable line)
    NOT_FOUND = 4  # the thing to check is not there (e.g. no loop-brake row)
    OUTPUT = 5  # standard output could not be written: closed, disk full, file size limit
    INTERRUPTED = 130  # Ctrl-C


EXIT_CODES_HELP = (
    "Exit status: 0 ok; 1 a call was denied (--fail-on-deny) or a check failed; "
    "2 usage or configuration error; 3 unreadable input; 4 not found; "
    "5 output could not be written; 130 interrupted."
)
