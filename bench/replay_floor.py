"""The least a CPython loop does per line of a Claude Code transcript: replay's floor.

    python bench/replay_floor.py FILE   # e.g. $TMPDIR/loop-brake-bench/claude-usage-200.jsonl

Reads the lines as ``replay`` does (``readers.reader.Source``), skips those without
the bytes ``"usage"`` or ``"tool_use"``, parses the others with orjson, keeps each
message's four usage figures in a dict and hashes each ``tool_use`` the fast way
(``fast_canonical.fast_digest``) into a one-slot streak per session: no records, no
duplicates, no errors, no analysis, no summary. Prints the calls counted, and the
CPU seconds (and MB per CPU second) of the loop and of the process, start-up included.
What ``replay`` adds to this loop is everything its report needs; issue 41 goal 5
asks 150 MB per CPU second of the whole command (docs/performance.md).
"""

from __future__ import annotations

import os
import sys
import time

import orjson

from loop_brake_cli.readers.fast_canonical import fast_digest
from loop_brake_cli.readers.reader import Source


def floor(path: str) -> int:
    """Calls counted; the loop described above."""
    slots: dict[str, tuple[bytes, int]] = {}
    turns: dict[tuple[str, str], tuple[object, ...]] = {}
    calls = 0
    with open(path, "rb") as handle:
        for _, raw in Source(handle, path).lines():
            if raw is None or (raw.find(b'"usage"') < 0 and raw.find(b'"tool_use"') < 0):
                continue
            line = orjson.loads(raw)
            if line.get("type") != "assistant":
                continue
            message, session = line["message"], line["sessionId"]
            usage = message["usage"]
            turns[session, message["id"]] = (
                usage.get("input_tokens"),
                usage.get("output_tokens"),
                usage.get("cache_read_input_tokens"),
                usage.get("cache_creation_input_tokens"),
            )
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    digest = fast_digest(block["name"], block["input"])
                    prev = slots.get(session)
                    count = prev[1] + 1 if prev is not None and prev[0] == digest else 1
                    slots[session] = (digest, count)
                    calls += 1
    return calls


def main() -> None:
    path = sys.argv[1]
    size = os.path.getsize(path) / 1e6
    begin = time.process_time()
    calls = floor(path)
    end = time.process_time()
    print(
        f"{calls} calls, {size:.1f} MB: loop {end - begin:.2f} CPU s"
        f" ({size / (end - begin):.1f} MB per CPU second); the process, start-up included,"
        f" {end:.2f} ({size / end:.1f})"
    )


if __name__ == "__main__":
    main()
