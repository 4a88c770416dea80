"""``loop-brake replay`` on a generated Parquet corpus: rows per second and peak RSS.

    python bench/corpus.py [--rows 4000] [--rounds 3]

Writes three Parquet datasets of generated OpenHands runs (the layout of
``nebius/SWE-rebench-openhands-trajectories``: ``instance_id``, ``trajectory`` of
chat messages with ``tool_calls``; 24 calls a run, some of them loops) into a
temporary directory:

* ``small``: ``--rows`` runs whose tool results are 200 bytes;
* ``large``: the same runs with 20 kB results, a file about 30 times larger;
* ``double``: 2 x ``--rows`` runs of 200 bytes.

and runs ``loop-brake replay FILE --rows 1 > /dev/null`` on each as a real
subprocess, ``--rounds`` times (the text summary: ``--json`` would add the
building of one document listing every run to the figures), printing the
median wall and CPU time (user + system: other processes on a shared machine
disturb it less), rows per second of each, MB per CPU second and the peak RSS
of the replay (``ru_maxrss`` of its process).
``small`` against ``large`` is the claim that memory does not grow with the
file's size (one row group at a time, 16 rows at a time, two columns); ``small``
against ``double`` is what does grow: the report, one entry per run. It also
checks that ``--json -j 2`` prints the same document as ``--json``. Numbers only, never arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS = 24
GROUP_ROWS = 500


def run_row(n: int, result_bytes: int, rng: random.Random) -> dict:
    trajectory = [
        {"role": "system", "content": "You are OpenHands.", "tool_calls": None},
        {"role": "user", "content": "Fix the issue." * 20, "tool_calls": None},
    ]
    made = 0
    while made < CALLS:
        tool = rng.choice(["execute_bash", "str_replace_editor", "think"])
        args = json.dumps({"command": f"step {rng.randint(0, 5)}"})
        for _ in range(min(rng.choice([1, 1, 1, 2, 4]), CALLS - made)):
            call_id = f"toolu_{made:03d}"
            trajectory.append(
                {
                    "role": "assistant",
                    "content": "Let me run it.",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": args},
                        }
                    ],
                }
            )
            trajectory.append(
                {
                    "role": "tool",
                    "content": "x" * result_bytes,
                    "name": tool,
                    "tool_call_id": call_id,
                }
            )
            made += 1
    return {"instance_id": f"owner__repo-{n % 500}", "trajectory": trajectory, "resolved": False}


def write(path: Path, rows: int, result_bytes: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(27)
    writer = None
    for start in range(0, rows, GROUP_ROWS):
        batch = [run_row(n, result_bytes, rng) for n in range(start, min(rows, start + GROUP_ROWS))]
        table = pa.Table.from_pylist(batch)
        if writer is None:
            # Uncompressed and plain: the file's size is the data's, as the size claim needs.
            writer = pq.ParquetWriter(path, table.schema, compression="none", use_dictionary=False)
        writer.write_table(table, row_group_size=GROUP_ROWS)
    assert writer is not None
    writer.close()
    return path.stat().st_size


MEASURE = (
    "import hashlib, resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE).stdout\n"
    "took = time.perf_counter() - start\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(took, use.ru_utime + use.ru_stime, use.ru_maxrss, hashlib.sha256(out).hexdigest())\n"
)


def measure(args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS in KiB, and a digest of stdout, of one replay
    process (in a process of its own, so the RSS is that replay's)."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, check=True
    )
    took, cpu, rss, digest = done.stdout.split()
    return float(took), float(cpu), int(rss), digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    replay = [sys.executable, "-m", "loop_brake_cli", "replay"]
    with tempfile.TemporaryDirectory(prefix="loop-brake-corpus-") as tmp:
        cases = [
            ("small", options.rows, 200),
            ("large", options.rows, 20_000),
            ("double", 2 * options.rows, 200),
        ]
        print(f"loop-brake replay on Parquet corpora ({CALLS} calls a run, {os.cpu_count()} CPUs)")
        print(
            f"{'corpus':8} {'rows':>7} {'MB':>7} {'wall s':>7} {'CPU s':>6} {'rows/s':>7} "
            f"{'rows/CPU s':>10} {'MB/CPU s':>8} {'peak RSS MB':>11}"
        )
        for name, rows, result_bytes in cases:
            path = Path(tmp) / f"{name}.parquet"
            size = write(path, rows, result_bytes)
            runs = [measure([*replay, str(path), "--rows", "1"]) for _ in range(options.rounds)]
            took = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            rss = max(r[2] for r in runs) / 1024
            one = measure([*replay, str(path), "--json"])
            two = measure([*replay, str(path), "--json", "-j", "2"])
            same = "" if one[3] == two[3] else "  (-j 2 DIFFERS)"
            print(
                f"{name:8} {rows:>7,} {size / 1e6:>7.1f} {took:>7.2f} {cpu:>6.2f} "
                f"{rows / took:>7,.0f} {rows / cpu:>10,.0f} {size / 1e6 / cpu:>8.1f} {rss:>11.1f}"
                + same
            )


if __name__ == "__main__":
    main()
