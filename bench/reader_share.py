"""How many event lines made from real transcripts the C reader answers.

    python bench/reader_share.py [SAMPLES_DIR]

SAMPLES_DIR: default ``$LOOP_BRAKE_SAMPLES``, else ``../shared/samples-real``.

Each tool call the adapters find in a real transcript becomes an event line three
ways: the four members alone; with the other top-level members of the transcript
line it came from (timestamps, uuids, paths, versions: real metadata, which the
event line drops) written by ``json.dumps`` (ASCII, so ``\\u`` escapes, as Python
producers write them); and the same written by orjson. Prints, for each, how many
lines ``_event_scan.scan_event`` answered and how many it declined to the Python
path; a fourth adds the float and nanosecond timestamps loggers write (``ts``,
``ns``: 17 significant digits and 19-digit integers). Arguments are the
transcripts' own, so the args' share is what real calls give; nothing of a line
is printed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import orjson

from loop_brake_cli import formats
from loop_brake_cli.core.records import ToolCall
from loop_brake_cli.readers import _event_scan
from loop_brake_cli.readers.reader import open_source

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parent.parent / "shared" / "samples-real"  # the workplace's, beside the checkout
CONTENT = {"message", "payload", "content", "messages", "history", "trajectory", "result"}


def _calls(path: Path) -> list[tuple[ToolCall, dict]]:
    """The calls of one transcript, each with its source line's top-level metadata."""
    head = path.read_bytes()[:65536]
    try:
        adapter = formats.detect(head, path.name)
    except Exception:
        return []
    lines = path.read_bytes().splitlines()
    found = []
    source = open_source(str(path))
    try:
        records = list(formats.parse_records(adapter, source))
    finally:
        source.close()
    for record in records:
        if record.__class__ is not ToolCall or not isinstance(record.call_id, str):
            continue
        obj = None
        if record.line and record.line <= len(lines):
            try:
                obj = json.loads(lines[record.line - 1])
            except ValueError:
                pass
        meta = {k: v for k, v in obj.items() if k not in CONTENT} if isinstance(obj, dict) else {}
        found.append((record, meta))
    return found


def _event(call: ToolCall, meta: dict) -> dict:
    event = {k: v for k, v in meta.items() if k not in ("tool", "args", "sessionId", "callId")}
    event.pop("agentId", None)
    event.pop("agent_id", None)
    event.update(tool=call.tool, args=call.args, sessionId=call.session, callId=call.call_id)
    return event


def main() -> None:
    root = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(os.environ.get("LOOP_BRAKE_SAMPLES", DEFAULT))
    )
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".md")]
    if not files:
        print(f"no transcripts under {root}: give SAMPLES_DIR (or $LOOP_BRAKE_SAMPLES)")
        sys.exit(2)
    ways = {
        "tool/args/sessionId/callId only": lambda c, m: orjson.dumps(_event(c, {})),
        "with the line's metadata, json.dumps (ASCII)": lambda c, m: json.dumps(
            _event(c, m)
        ).encode(),
        "with the line's metadata, orjson": lambda c, m: orjson.dumps(_event(c, m)),
        "with the metadata and a logger's float and nanosecond times": lambda c, m: orjson.dumps(
            _event(
                c,
                {
                    **m,
                    "ts": (c.line or 1) * 0.137 + 1733097600.0,
                    "ns": (c.line or 1) * 137 + 10**18,
                },
            )
        ),
    }
    calls = [pair for path in files for pair in _calls(path)]
    print(f"{len(calls)} calls from {len(files)} real transcripts under {root}")
    for name, write in ways.items():
        answered = sum(_event_scan.scan_event(write(c, m)) is not None for c, m in calls)
        share = 100 * answered / max(len(calls), 1)
        print(f"  {name}: {answered} answered, {len(calls) - answered} declined ({share:.1f}%)")


if __name__ == "__main__":
    main()
