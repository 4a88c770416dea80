"""What ``args_ignore`` costs per call (issue 29, item 5), in process.

    python bench/args_ignore.py [--calls 100000] [--rounds 5]

The calls of the generated event stream (``gen.events``: search, read_file,
run_shell, edit_file) are parsed once; then, per round, each is hashed by
``fast_canonical.fast_digest`` alone (what ``filter``'s exact path does without
the key) and through ``Policy.args_digest`` under three policies: no
``args_ignore`` (the look-up of the tool's rule only), one tool with one path
that is mostly absent, every tool with three paths. Prints the median CPU time of
each and the cost per call over ``fast_digest``. The end-to-end figures come from
``bench/paired.py`` (the commands are in docs/policies.md, "Cost").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import gen  # noqa: E402
import run  # noqa: E402

from loop_brake_cli.core.canonical import parse_json  # noqa: E402
from loop_brake_cli.core.policy import parse_policy  # noqa: E402
from loop_brake_cli.readers.fast_canonical import fast_digest  # noqa: E402

POLICIES = {
    "no args_ignore": '[[tools]]\nmatch = "search"\nmax_repeats = 3\n',
    "one tool, one path": '[[tools]]\nmatch = "search"\nargs_ignore = ["$.temperature"]\n',
    "every tool, 3 paths": (
        '[[tools]]\nmatch = "*"\nargs_ignore = ["$.timeout", "$.filters.lang", "$.edits[*].text"]\n'
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    path = run.data_file("events", args.calls, gen.events)
    calls = [(o["tool"], o["args"]) for o in map(parse_json, path.read_bytes().splitlines())]
    policies = {name: parse_policy(text, name)[0] for name, text in POLICIES.items()}
    times: dict[str, list[float]] = {"fast_digest": [], **{name: [] for name in policies}}
    for _ in range(args.rounds):
        start = time.process_time()
        for tool, value in calls:
            fast_digest(tool, value)
        times["fast_digest"].append(time.process_time() - start)
        for name, policy in policies.items():
            digest = policy.args_digest
            start = time.process_time()
            for tool, value in calls:
                digest(tool, value, fast_digest)
            times[name].append(time.process_time() - start)
    base = statistics.median(times["fast_digest"])
    print(f"{len(calls)} calls, median CPU of {args.rounds} rounds:")
    for name, values in times.items():
        cpu = statistics.median(values)
        extra = (cpu - base) / len(calls) * 1e6
        print(
            f"  {name:<22} {cpu:6.3f} s  {'' if name == 'fast_digest' else f'+{extra:.2f} us/call'}"
        )


if __name__ == "__main__":
    main()
