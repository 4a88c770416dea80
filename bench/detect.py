"""Format detection's cost per head: every adapter's ``sniff`` and the whole ``detect``.

    python bench/detect.py [--repeat 200]

Heads: one session file of bench/html_report.py's sessions (tool-call events, the
file a ``replay DIR`` of many small sessions reads thousands of; imported, not
copied) and the first fixture of every format in tests/fixtures/<format>/. Each head
is a file's first 64 KiB (decompressed), as ``Source.head()`` reads it.

It prints, per head, the microseconds of each adapter's sniff (median of ``--repeat``
calls, in ``FORMATS`` order, ``*`` marking the sniff that recognises the head) and of
``detect`` (every sniff up to the first yes): the figure a directory replay pays per
file.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from html_report import many_sessions  # noqa: E402

from loop_brake_cli import formats  # noqa: E402
from loop_brake_cli.readers.reader import CHUNK_SIZE  # noqa: E402


def events_head() -> bytes:
    """The head of one small session of tool-call events."""
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "all.jsonl"
        many_sessions(whole, 20)
        lines = whole.read_bytes().splitlines(keepends=True)
    first = lines[0].split(b'"sessionId"')[1]
    return b"".join(line for line in lines if first in line)[:CHUNK_SIZE]


def heads() -> list[tuple[str, bytes]]:
    found = [("events (bench session)", events_head())]
    for name in formats.names():
        folder = ROOT / "tests" / "fixtures" / name
        files = sorted(p for p in folder.glob("*") if p.is_file() and p.suffix != ".md")
        if files:
            data = files[0].read_bytes()
            if files[0].suffix == ".gz":
                data = gzip.decompress(data)
            found.append((f"{name} ({files[0].name})", data[:CHUNK_SIZE]))
    return found


def detected(head: bytes) -> str:
    try:
        return str(formats.detect(head, "bench").INFO.name)
    except formats.UnknownFormatError:
        return "none"


def microseconds(call: object, head: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call(head)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    adapters = formats.ADAPTERS
    width = max(len(name) for name in formats.names())
    for label, head in heads():
        print(f"{label}: {len(head)} bytes")
        for adapter in adapters:
            cost = microseconds(adapter.sniff, head, args.repeat)
            mark = "*" if adapter.sniff(head) else " "
            print(f"  {mark} {adapter.INFO.name:<{width}} {cost:9.1f} us")
        total = microseconds(detected, head, args.repeat)
        found = detected(head)
        print(f"    {'detect -> ' + found:<{width}} {total:9.1f} us per file")


if __name__ == "__main__":
    main()
