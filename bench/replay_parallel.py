"""``replay -j N``: wall time and speed-up on a generated set of Claude Code transcripts.

    python bench/replay_parallel.py [--files 8] [--mb 8] [--rounds 3] [--jobs 1,2]

Writes ``--files`` transcripts of about ``--mb`` MB each (bench/gen.py's
deterministic Claude Code generator, a different seed per file) into a
temporary directory, then runs ``loop-brake replay DIR --json -j N`` as a real
subprocess for each N, alternating the job counts round by round, and prints
the median wall time, throughput, speed-up over ``-j 1`` and efficiency
(speed-up / N). It also checks that every run printed the same JSON document:
files are replayed independently and merged in input order, so ``-j`` must not
change the answer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402


def generate(directory: Path, files: int, megabytes: float) -> int:
    total = 0
    for i in range(files):
        path = directory / f"session-{i:03d}.jsonl"
        total += gen.write(str(path), gen.claude_transcript(int(megabytes * 1e6), seed=100 + i))
    return total


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def calibrate(jobs: int, rounds: int) -> float:
    """The machine's own parallel capacity: the speed-up of ``jobs`` processes that
    only burn CPU. On a shared or oversubscribed host it is well under ``jobs``, and
    no ``-j`` figure can beat it."""
    from concurrent.futures import ProcessPoolExecutor

    n = 4_000_000
    serial, parallel = [], []
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_burn, [1] * jobs))  # start the workers
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(jobs):
                _burn(n)
            serial.append(time.perf_counter() - start)
            start = time.perf_counter()
            list(pool.map(_burn, [n] * jobs))
            parallel.append(time.perf_counter() - start)
    return statistics.median(serial) / statistics.median(parallel)


def run(directory: Path, jobs: int) -> tuple[float, bytes]:
    command = [sys.executable, "-m", "loop_brake_cli", "replay", str(directory), "--json"]
    command += ["-j", str(jobs)]
    env = {k: v for k, v in os.environ.items() if k != "DSH_LOOP_BRAKE_MAX_REPEATS"}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"replay -j {jobs} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=float, default=8.0, help="size of each file in MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", default="1,2", help="comma-separated job counts")
    options = parser.parse_args()
    job_counts = [int(j) for j in options.jobs.split(",")]

    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        directory = Path(tmp)
        size = generate(directory, options.files, options.mb)
        times: dict[int, list[float]] = {j: [] for j in job_counts}
        outputs: set[bytes] = set()
        run(directory, 1)  # warm the page cache and the interpreter's .pyc files
        capacity: dict[int, list[float]] = {j: [] for j in job_counts if j > 1}
        for _ in range(options.rounds):
            for jobs in job_counts:
                elapsed, output = run(directory, jobs)
                times[jobs].append(elapsed)
                outputs.add(output)
                if jobs > 1:
                    capacity[jobs].append(calibrate(jobs, 1))

    cpus = os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"replay -j: {options.files} Claude Code transcripts, {size / 1e6:.1f} MB in all, "
        f"{cpus} CPU(s), median of {options.rounds} rounds (wall time of the whole command)"
    )
    print(f"load average after the runs: {load} (other work on the machine skews the figures)")
    print(
        f"{'jobs':>4}  {'median s':>9}  {'best s':>7}  {'MB/s':>7}  {'speed-up':>8}"
        f"  {'efficiency':>10}  {'speed-up (best)':>15}"
    )
    first = job_counts[0] == 1
    base = statistics.median(times[1]) if first else None
    base_best = min(times[1]) if first else None
    for jobs in job_counts:
        median, best = statistics.median(times[jobs]), min(times[jobs])
        speedup = base / median if base else float("nan")
        speedup_best = base_best / best if base_best else float("nan")
        print(
            f"{jobs:>4}  {median:>9.2f}  {best:>7.2f}  {size / 1e6 / median:>7.1f}"
            f"  {speedup:>7.2f}x  {speedup / jobs:>9.0%}  {speedup_best:>14.2f}x"
        )
    for jobs, values in capacity.items():
        ceiling = statistics.median(values)
        print(
            f"machine capacity in the same rounds: {jobs} processes burning CPU run "
            f"{ceiling:.2f}x one (the ceiling for -j {jobs} here)"
        )
        if base:
            achieved = base / statistics.median(times[jobs])
            print(f"-j {jobs} speed-up / machine capacity: {achieved / ceiling:.0%}")
    same = "identical" if len(outputs) == 1 else f"DIFFERENT ({len(outputs)} variants)"
    print(f"JSON output across job counts and rounds: {same}")
    if len(outputs) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
