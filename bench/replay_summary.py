"""``loop-brake replay DIR``'s text summary on a directory of 10,000 sessions: wall, user
and system time, with every row drawn (as before ``--rows``) and with the default bound.

    python bench/replay_summary.py [--sessions 10000] [--rounds 3] [--columns 120]

Generates bench/html_report.py's ``--sessions`` sessions (2 to 40 calls each, a fifth of
them stuck in a loop the brake denies; imported, not copied), one file per session, in
a temporary directory, then runs the real CLI as a subprocess, rounds alternating:

- ``replay DIR`` with stdout a file (plain text, the summary's non-terminal form);
- the same with rich told it is on a terminal ``--columns`` wide (``TTY_COMPATIBLE=1``,
  ``COLUMNS``): what a person at a terminal waits for;
- each with ``--rows all`` (every session a row: the summary before the bound) and
  with the default ``--rows 50``;
- ``replay DIR --html -``: reading, judging and the page, no text summary, for scale.

It prints the median wall time and the median user and system CPU seconds of each
(from ``os.wait4``: the child alone, unlike wall time on a busy machine), and the
summary's line count. A second part times the stages in-process on the same
directory, once: reading and judging (``replay_files``), the format detection within
it (each file's 64 KiB head through the sniffs), the summary's plain-text drawing with
every row and with the bound.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from html_report import many_sessions  # noqa: E402


def session_files(directory: Path, sessions: int) -> int:
    """html_report's sessions, one file per session (a directory of transcripts)."""
    whole = directory / "all.jsonl"
    many_sessions(whole, sessions)
    by_session: dict[str, list[str]] = {}
    with whole.open(encoding="utf-8") as lines:
        for line in lines:
            by_session.setdefault(json.loads(line)["sessionId"], []).append(line)
    whole.unlink()
    target = directory / "sessions"
    target.mkdir()
    for session, rows in by_session.items():
        (target / f"{session}.jsonl").write_text("".join(rows), encoding="utf-8")
    return len(by_session)


def run(args: list[str], env: dict[str, str], out: Path) -> tuple[float, float, float, int]:
    """Wall, user and system seconds of one real CLI run, and the lines it printed."""
    start = time.perf_counter()
    with out.open("wb") as stdout:
        child = subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", *args],
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
        )
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 3):
        raise SystemExit(f"{args}: exit {child.returncode}")
    lines = out.read_bytes().count(b"\n")
    return wall, usage.ru_utime, usage.ru_stime, lines


def stages(directory: Path) -> None:
    """Reading and judging, then drawing the plain summary with every row and with the bound."""
    from loop_brake_cli.analysis import replay_files
    from loop_brake_cli.analysis.discover import discover
    from loop_brake_cli.analysis.summary import SUMMARY_ROWS
    from loop_brake_cli.formats import detect
    from loop_brake_cli.readers.reader import CHUNK_SIZE, DEFAULT_MAX_LINE_BYTES
    from loop_brake_cli.render.terminal import print_replay_summary

    found = [f for f in discover([str(directory)]) if f.error is None]
    files = [f.path for f in found]
    start = time.process_time()
    report = replay_files(
        files,
        max_repeats=3,
        max_repeats_source="default",
        cap=3,
        format_name=None,
        max_line_bytes=DEFAULT_MAX_LINE_BYTES,
        in_directory=set(files),
    )
    print(f"  reading and judging {len(files):,} files: {time.process_time() - start:.2f} s CPU")
    heads = []
    for path in files:
        with open(path, "rb") as file:
            heads.append(file.read(CHUNK_SIZE))
    start = time.process_time()
    for head in heads:
        detect(head, "bench")
    print(f"    of which format detection (every sniff): {time.process_time() - start:.2f} s CPU")
    for label, rows in (("every row", None), (f"--rows {SUMMARY_ROWS}", SUMMARY_ROWS)):
        start = time.process_time()
        with redirect_stdout(io.StringIO()):
            print_replay_summary(report, max_rows=rows)
        print(f"  plain summary, {label}: {time.process_time() - start:.2f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--columns", type=int, default=120)
    options = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_BRAKE_", "DSH_"))}
    base.pop("NO_COLOR", None)
    plain = {**base, "TTY_COMPATIBLE": "0"}
    terminal = {**base, "TTY_COMPATIBLE": "1", "COLUMNS": str(options.columns)}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        count = session_files(work, options.sessions)
        directory = str(work / "sessions")
        print(f"{count:,} sessions, one file each: replay DIR (median of {options.rounds})")
        cases = [
            ("summary, not a terminal, --rows all", [directory, "--rows", "all"], plain),
            ("summary, not a terminal", [directory], plain),
            (
                f"summary, terminal {options.columns} wide, --rows all",
                [directory, "--rows", "all"],
                terminal,
            ),
            (f"summary, terminal {options.columns} wide", [directory], terminal),
            ("--html - (no text summary)", [directory, "--html", "-"], plain),
        ]
        times: dict[str, list[tuple[float, float, float, int]]] = {c[0]: [] for c in cases}
        for _ in range(options.rounds):
            for label, args, env in cases:
                times[label].append(run(["replay", *args], env, work / "out"))
        for label, _, _ in cases:
            rounds = times[label]
            wall, user, system = (statistics.median(r[i] for r in rounds) for i in range(3))
            print(
                f"  {label:<45} wall {wall:6.2f} s   user {user:6.2f} s   sys {system:5.2f} s"
                f"   {rounds[0][3]:,} lines"
            )
        print("stages, in-process (CPU seconds, one run):")
        stages(work / "sessions")


if __name__ == "__main__":
    main()
