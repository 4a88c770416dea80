"""``replay -j N``: wall time and speed-up on a generated set of Claude Code transcripts.

    python bench/replay_parallel.py [--files 16] [--mb 16] [--rounds 3] [--jobs 1,2]

Writes ``--files`` transcripts of about ``--mb`` MB each (bench/gen.py's
deterministic Claude Code generator, a different seed per file) into a
temporary directory, then runs ``loop-brake replay DIR --json -j N`` as a real
subprocess for each N, alternating the job counts round by round, and prints
the median wall time, throughput, speed-up over ``-j 1`` and efficiency
(speed-up / N). It also checks that every run printed the same JSON document:
files are replayed independently and merged in input order, so ``-j`` must not
change the answer.

Between the rounds it measures the machine's parallel capacity (two processes that
only burn CPU), the ceiling no ``-j 2`` can beat on a shared host, and at the end
the command's fixed cost at each job count (two tiny files): start-up and the
worker pool, which no ``-j`` hides. The default corpus, 256 MB, takes about four
seconds at ``-j 1``; on a one-second corpus the fixed cost alone holds ``-j 2``
near two thirds of the capacity, and the last line says what it allows.
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


def fixed_cost(directory: Path, jobs: int, rounds: int) -> float:
    """Median wall seconds of the command on two tiny files: start-up (interpreter,
    imports), and with ``jobs`` > 1 the worker pool (its import, the forks, the
    workers' own imports). No ``-j`` can hide it, so on a small corpus it caps the
    speed-up well under the machine's capacity."""
    tiny = directory / "tiny"
    tiny.mkdir(exist_ok=True)
    for i in range(2):
        gen.write(str(tiny / f"tiny-{i}.jsonl"), gen.claude_transcript(20_000, seed=900 + i))
    return statistics.median(run(tiny, jobs)[0] for _ in range(rounds))


def measure(files: int, megabytes: float, rounds: int, job_counts: list[int]) -> dict:
    """Wall times per job count, the machine's capacity measured between them, the
    fixed cost per job count, and whether every run printed the same document."""
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        directory = Path(tmp) / "corpus"
        directory.mkdir()
        size = generate(directory, files, megabytes)
        times: dict[int, list[float]] = {j: [] for j in job_counts}
        outputs: set[bytes] = set()
        run(directory, 1)  # warm the page cache and the interpreter's .pyc files
        capacity: dict[int, list[float]] = {j: [] for j in job_counts if j > 1}
        for _ in range(rounds):
            for jobs in job_counts:
                elapsed, output = run(directory, jobs)
                times[jobs].append(elapsed)
                outputs.add(output)
                if jobs > 1:
                    capacity[jobs].append(calibrate(jobs, 1))
        fixed = {jobs: fixed_cost(Path(tmp), jobs, max(3, rounds)) for jobs in job_counts}
    return {
        "size": size,
        "times": times,
        "capacity": {jobs: statistics.median(values) for jobs, values in capacity.items()},
        "fixed": fixed,
        "identical": len(outputs) == 1,
        "variants": len(outputs),
    }


def shares(result: dict) -> list[tuple[int, float, float]]:
    """(jobs, speed-up over ``-j 1``, that speed-up's share of the capacity) per ``-j`` > 1."""
    base = statistics.median(result["times"][1])
    out = []
    for jobs, ceiling in result["capacity"].items():
        speedup = base / statistics.median(result["times"][jobs])
        out.append((jobs, speedup, speedup / ceiling))
    return out


def report(result: dict, files: int, rounds: int) -> None:
    """Print the table."""
    times, size, fixed = result["times"], result["size"], result["fixed"]
    cpus = os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"replay -j: {files} Claude Code transcripts, {size / 1e6:.1f} MB in all, "
        f"{cpus} CPU(s), median of {rounds} rounds (wall time of the whole command)"
    )
    print(f"load average after the runs: {load} (other work on the machine skews the figures)")
    print(
        f"{'jobs':>4}  {'median s':>9}  {'best s':>7}  {'MB/s':>7}  {'speed-up':>8}"
        f"  {'efficiency':>10}  {'speed-up (best)':>15}  {'fixed s':>7}"
    )
    base = statistics.median(times[1]) if 1 in times else None
    base_best = min(times[1]) if 1 in times else None
    for jobs, values in times.items():
        median, best = statistics.median(values), min(values)
        speedup = base / median if base else float("nan")
        speedup_best = base_best / best if base_best else float("nan")
        print(
            f"{jobs:>4}  {median:>9.2f}  {best:>7.2f}  {size / 1e6 / median:>7.1f}"
            f"  {speedup:>7.2f}x  {speedup / jobs:>9.0%}  {speedup_best:>14.2f}x"
            f"  {fixed[jobs]:>7.2f}"
        )
    print("fixed s: the same command on two tiny files (start-up, and the worker pool)")
    for jobs, ceiling in result["capacity"].items():
        print(
            f"machine capacity in the same rounds: {jobs} processes burning CPU run "
            f"{ceiling:.2f}x one (the ceiling for -j {jobs} here)"
        )
        if base:
            achieved = base / statistics.median(times[jobs])
            # Amdahl with the measured fixed costs: what -j N can reach on this corpus
            work = base - fixed[1]
            reachable = base / (fixed[jobs] + work / ceiling)
            print(
                f"-j {jobs} speed-up / machine capacity: {achieved / ceiling:.0%}"
                f" (the fixed cost allows {reachable / ceiling:.0%} on this corpus)"
            )
    same = "identical" if result["identical"] else f"DIFFERENT ({result['variants']} variants)"
    print(f"JSON output across job counts and rounds: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--mb", type=float, default=16.0, help="size of each file in MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", default="1,2", help="comma-separated job counts")
    options = parser.parse_args()
    job_counts = [int(j) for j in options.jobs.split(",")]
    if job_counts[0] != 1:
        job_counts.insert(0, 1)  # the speed-up is against -j 1, measured in the same rounds
    result = measure(options.files, options.mb, options.rounds, job_counts)
    report(result, options.files, options.rounds)
    if not result["identical"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
