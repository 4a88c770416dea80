"""Paired, alternating runs of a few commands on one input: for a loaded machine.

    python bench/paired.py --rounds 5 --input events \\
        "node=node $PWD/bench/reference.mjs {input}" \\
        "old=env PYTHONPATH=/tmp/old python -m loop_brake_cli filter {input}" \\
        "new=env PYTHONPATH=$PWD python -m loop_brake_cli filter {input}"

Each ``NAME=COMMAND`` runs once per round, in the order given, under the same
launcher as ``bench/run.py`` (wall time, user and system CPU of the child
measured separately). Prints each run, the medians and the highest peak RSS of
any round; ``--check`` compares the outputs of all commands byte for byte.
``{input}`` is one of the generated
inputs (events, sessions, claude, claude20, claude-calls: the Claude Code
transcript without message ids and usage; escaped-long: 1,000 distinct 94 KB
arguments each holding a \\u escape; near-limit: lines just under the 8 MiB line
limit) or a path.

The commands run in the data directory, not here: ``python -m`` puts the current
directory first on ``sys.path``, so from a checkout every ``PYTHONPATH=old`` run
would silently import the checkout. Give scripts by absolute path.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402
import run  # noqa: E402

INPUTS = {
    "events": lambda: run.data_file("events", 1_000_000, gen.events),
    "events100k": lambda: run.data_file("events", 100_000, gen.events),
    "sessions": lambda: run.data_file("sessions", 1_000_000, gen.distinct_sessions),
    "escaped-long": lambda: run.data_file("escaped-long", 1_000, gen.escaped_long),
    "near-limit": lambda: run.data_file("near-limit", 12, gen.near_limit),
    "claude": lambda: _claude(200),
    "claude20": lambda: _claude(20),
    "claude-calls": lambda: run.data_file(
        "claude", 200, lambda mb: gen.claude_transcript(mb << 20, usage=False)
    ),
}


def _claude(megabytes: int) -> Path:
    return run.data_file("claude-usage", megabytes, lambda mb: gen.claude_transcript(mb << 20))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--input", default="events")
    parser.add_argument("--check", action="store_true", help="outputs must be identical")
    parser.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    path = INPUTS[args.input]() if args.input in INPUTS else Path(args.input)
    size = path.stat().st_size
    cmds = []
    for spec in args.commands:
        name, _, text = spec.partition("=")
        cmds.append((name, shlex.split(text.replace("{input}", shlex.quote(str(path))))))
    run.DATA.mkdir(parents=True, exist_ok=True)  # a fresh machine: no input generated yet
    os.chdir(run.DATA)  # see above: never import a package from the caller's directory
    # one file per command and per run of this script: two runs at once (several
    # people on one machine) must not compare each other's outputs
    outputs = {name: run.DATA / f"paired-{os.getpid()}-{name}.out" for name, _ in cmds}
    try:
        _rounds(args, cmds, outputs, size, path)
    finally:
        for out in outputs.values():
            out.unlink(missing_ok=True)


def _rounds(
    args: argparse.Namespace, cmds: list, outputs: dict[str, Path], size: int, path: Path
) -> None:
    """Run every command once per round, in turn; print the runs, medians and check."""
    results: dict[str, list[dict]] = {name: [] for name, _ in cmds}
    for r in range(args.rounds):
        for name, cmd in cmds:
            res = run.run(cmd, outputs[name])
            results[name].append(res)
            print(
                f"round {r + 1} {name:<8} wall {res['wall']:6.2f}  user {res['user']:6.2f}"
                f"  sys {res['sys']:5.2f}  rss {res['rss_mb']:6.1f} MB",
                flush=True,
            )
    print(f"input {path.name}: {size / 1e6:.1f} MB; medians of {args.rounds}:")
    for name, _ in cmds:
        rs = results[name]
        wall = statistics.median(x["wall"] for x in rs)
        user = statistics.median(x["user"] for x in rs)
        system = statistics.median(x["sys"] for x in rs)
        cpu = statistics.median(x["user"] + x["sys"] for x in rs)
        rss = max(x["rss_mb"] for x in rs)
        print(
            f"  {name:<8} wall {wall:6.2f}  user {user:6.2f}  sys {system:5.2f}"
            f"  cpu {cpu:6.2f}  {size / 1e6 / wall:7.1f} MB/s (wall)  peak rss {rss:6.1f} MB"
        )
    if args.check:
        outs = {name: outputs[name].read_bytes() for name, _ in cmds}
        first = next(iter(outs.values()))
        for name, data in outs.items():
            print(f"  output {name}: {'identical' if data == first else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
