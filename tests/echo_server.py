"""A stand-in stdio server for the proxy's byte-level tests: echoes every line.

Not MCP: it copies stdin to stdout byte for byte (one write per line, flushed),
so whatever the proxy forwards comes back to the test unchanged. Options:

  --exit N         exit with status N at stdin EOF (default 0)
  --stderr TEXT    write TEXT and a newline to stderr at start
  --record FILE    append every line received to FILE
  --stay           ignore stdin EOF: keep running until a signal ends it
  --ignore-term    ignore SIGTERM as well, saying so on stderr (only SIGKILL ends it)

A line ``__exit__ N`` (or the JSON line ``{"__exit__":N}``, which the proxy
forwards: it answers lines that are not JSON itself) makes it exit with status N
at once. Each of SIGINT,
SIGTERM and SIGHUP (unless ignored) writes ``echo_server: got SIGxxx`` to
stderr and exits with 128 + the signal number.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def _on_signal(signum: int, frame: object) -> None:
    os.write(2, f"echo_server: got {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def _on_ignored(signum: int, frame: object) -> None:
    os.write(2, f"echo_server: ignored {signal.Signals(signum).name}\n".encode())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--stderr")
    parser.add_argument("--record")
    parser.add_argument("--stay", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    options = parser.parse_args()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    if options.ignore_term:  # said, so a test sees SIGTERM came before SIGKILL
        signal.signal(signal.SIGTERM, _on_ignored)
    record = open(options.record, "ab", buffering=0) if options.record else None  # noqa: SIM115
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    if options.stderr:  # after the handlers: a test may wait for this line, then signal
        os.write(2, options.stderr.encode() + b"\n")
    for line in iter(stdin.readline, b""):
        if line.startswith(b"__exit__ "):
            os._exit(int(line.split()[1]))
        if line.startswith(b'{"__exit__":'):
            os._exit(int(line[12:].strip().rstrip(b"}")))
        if record is not None:
            record.write(line)
        stdout.write(line)
        stdout.flush()
    while options.stay:
        time.sleep(0.05)
    sys.exit(options.exit)


if __name__ == "__main__":
    main()
