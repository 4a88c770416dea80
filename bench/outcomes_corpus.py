"""The limits checked against real outcomes: ``replay --sweep 2..8 --outcomes`` on 500 public runs.

    python bench/outcomes_corpus.py MIRROR [--stop-after K ...]

MIRROR is a clone (or bare git directory) of gruckion/mini-swe-agent at
d12a71affd95403b036b2bdbd827349b77bfffb9: its ``swebench_results/
20251118_gemini-3-pro-74pct/`` holds the 500 trajectories of the SWE-bench
bash-only submission ``20251118_mini-v1.15.0_gemini-3-pro-preview-20251118``
(mini-swe-agent 1.15.0 with Gemini 3 Pro Preview on SWE-bench Verified; MIT) and
the harness's per-instance ``report.json`` of each. The trajectories stay out of
this repository: the script extracts them with ``git archive`` into a temporary
directory, checks that the reports give the labels committed in
``bench/outcomes/mini-swe-agent-gemini-3-pro-swebench-verified.csv``, and prints
the outcome part of ``loop-brake replay trajs --sweep 2..8 --outcomes logs`` for
each K of ``--stop-after`` asked (default: 2, then 0), as docs/ci.md quotes it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

COMMIT = "d12a71affd95403b036b2bdbd827349b77bfffb9"
RUN = "swebench_results/20251118_gemini-3-pro-74pct"
LABELS = Path(__file__).parent / "outcomes" / "mini-swe-agent-gemini-3-pro-swebench-verified.csv"


def extract(mirror: str, target: Path) -> Path:
    archive = subprocess.run(
        ["git", "--git-dir", _git_dir(mirror), "archive", COMMIT, f"{RUN}/trajs", f"{RUN}/logs"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / RUN


def _git_dir(mirror: str) -> str:
    path = Path(mirror)
    return str(path / ".git") if (path / ".git").exists() else str(path)


def check_labels(run: Path) -> None:
    with LABELS.open(encoding="utf-8") as stream:
        committed = {
            row["instance_id"]: row["resolved"] == "true" for row in csv.DictReader(stream)
        }
    found = {
        report.parent.name: json.loads(report.read_text(encoding="utf-8"))["resolved"]
        for report in (run / "logs").glob("*/report.json")
    }
    if found != committed:
        sys.exit(f"the reports of {RUN} do not give the labels of {LABELS}")
    print(f"{len(found)} runs, {sum(found.values())} resolved: the labels of {LABELS.name}")


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    mirror, rest = argv[0], argv[1:]
    ks = [rest[i + 1] for i, arg in enumerate(rest) if arg == "--stop-after"] or ["2", "0"]
    with tempfile.TemporaryDirectory() as scratch:
        run = extract(mirror, Path(scratch))
        check_labels(run)
        for k in ks:
            command = [
                sys.executable, "-m", "loop_brake_cli", "replay", "trajs", "--sweep", "2..8",
                "--outcomes", "logs", "--stop-after", k, "-j", "2",
            ]  # fmt: skip
            print(f"\n$ loop-brake replay trajs --sweep 2..8 --outcomes logs --stop-after {k} -j 2")
            out = subprocess.run(command, cwd=run, capture_output=True, text=True, check=False)
            lines = out.stdout.splitlines()
            print("\n".join(lines[:4]))
            start = next(i for i, line in enumerate(lines) if line.startswith("Sweep:"))
            print("\n".join(lines[start:]))


if __name__ == "__main__":
    main(sys.argv[1:])
