"""The longest polls in a set of transcripts: runs of identical calls whose results change.

    python bench/poll_runs.py [PATH ...] [--top 15] [--all]

The evidence behind the default ``progress_max`` (docs/policies.md, "A ceiling under
progress"). Every file under each PATH (default: ``samples/``, ``tests/fixtures/polls/``
and the workplace's real transcripts, ``../shared/samples-real``) is read by the adapter ``replay``
would choose, with its results, through a brake in the progress mode with a limit
no run reaches (1,000). Per session, each run of identical consecutive calls (same
tool, same hash; a call logged twice under one call id is one call) is listed with

* ``calls``: its length, the count ``progress_max`` is compared with;
* ``results``: how many of its calls had a result paired with them;
* ``changed``: how many of those differed from the result before them in the run
  (after the default ``result_ignore`` patterns), i.e. how often the progress mode
  restarted the streak;
* ``longest same``: the progress mode's highest count in the run (the longest stretch
  whose results did not change): the count ``max_repeats`` is compared with there.

A run whose results changed at least once is a poll the progress mode lets through
for longer than the streak rule would; the longest of those is what a default ceiling
must stay above. Nothing of the arguments or results is printed: tool names, hash
prefixes and counts only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from loop_brake_cli.core.brake import LoopBrake  # noqa: E402
from loop_brake_cli.core.policy import parse_policy  # noqa: E402
from loop_brake_cli.core.records import ToolCall, ToolResult  # noqa: E402

LIMIT = 1000
"""The streak limit of the brake that reads the runs: above any run, so nothing is
denied and every result is kept (a denied call's result is never progress)."""


@dataclass
class Run:
    """One run of identical consecutive calls of one session."""

    file: str
    session: str
    tool: str
    prefix: str
    first: str  # where its first call is (line or JSON path)
    calls: int = 0
    results: int = 0
    changed: int = 0
    longest_same: int = 0
    last_result: bytes | None = field(default=None, repr=False)


def files_under(paths: list[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith((".md", ".toml")):
                    yield os.path.join(root, name)


def runs_of(path: str) -> list[Run]:
    """Every run of identical calls in one file (a file no adapter reads gives none)."""
    from loop_brake_cli.formats import parse_records
    from loop_brake_cli.formats._detect import choose
    from loop_brake_cli.readers.pipeline import judge
    from loop_brake_cli.readers.reader import open_source

    policy = parse_policy("progress = true\n", "progress.toml")[0]
    brake = LoopBrake(LIMIT, policy=policy)
    source = open_source(path, 1 << 26)
    try:
        choice = choose(source.head(), source.name, None, True, False)
        if choice.adapter is None:
            return []
        done: list[Run] = []
        current: dict[str, Run] = {}
        latest: dict[str, Run] = {}  # the run of each session's latest call
        for record, verdict in judge(parse_records(choice.adapter, source, True), brake):
            if isinstance(record, ToolResult):
                run = latest.get(record.session)
                if run is not None and run.calls and run.results < run.calls:
                    _result(run, record, policy)
                continue
            if not isinstance(record, ToolCall) or verdict is None or verdict.duplicate:
                continue
            key, prefix = verdict.session_id, verdict.hash_prefix
            run = current.get(key)
            if run is None or (run.tool, run.prefix) != (verdict.tool_name, prefix):
                if run is not None:
                    done.append(run)
                where = f"line {record.line}" if record.line else str(record.path)
                run = Run(os.path.basename(path), key, verdict.tool_name, prefix, where)
                current[key] = run
            run.calls += 1
            run.longest_same = max(run.longest_same, verdict.count)
            latest[key] = run
        return done + list(current.values())
    finally:
        source.close()


def _result(run: Run, record: ToolResult, policy) -> None:
    from loop_brake_cli.core.progress import result_digest

    digest = record.digest or result_digest(record.result, policy.result_ignore)
    run.results += 1
    if run.last_result is not None and digest != run.last_result:
        run.changed += 1
    run.last_result = digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--top", type=int, default=15, help="runs shown (longest first)")
    parser.add_argument("--all", action="store_true", help="also runs whose results never changed")
    args = parser.parse_args(argv)
    root = HERE.parent
    paths = args.paths or [
        str(root / "samples"),
        str(root / "tests" / "fixtures" / "polls"),
        str(root.parent / "shared" / "samples-real"),
    ]
    runs = [run for path in files_under(paths) for run in runs_of(path) if run.calls >= 2]
    polls = [run for run in runs if run.changed or args.all]
    polls.sort(key=lambda run: (-run.calls, run.file, run.first))
    print(f"{len(runs)} runs of 2+ identical calls, {sum(1 for r in runs if r.changed)} "
          "with a changing result")  # fmt: skip
    head = f"{'calls':>5} {'results':>7} {'changed':>7} {'longest same':>12}  tool / hash / where"
    print(head)
    for run in polls[: args.top]:
        print(
            f"{run.calls:>5} {run.results:>7} {run.changed:>7} {run.longest_same:>12}  "
            f"{run.tool} {run.prefix} {run.file} {run.first} ({run.session})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
