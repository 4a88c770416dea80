"""Replay a corpus on Dask: every piece on a worker process, one partial report per piece.

    python docs/recipes/dask_replay.py [--cap N --stop-after K] CORPUS... PARTS_DIR

Each piece (a file, or some row groups of a Parquet dataset) is replayed by the
same function ``replay -j`` uses, on a local cluster of worker processes; the
partials are written in the plan's order, so ``loop-brake merge PARTS_DIR/*.json``
prints what ``loop-brake replay CORPUS...`` prints (with ``--cap 8 --stop-after 2``,
the partials keep each run's stop points, and ``merge --sweep 2..8 --outcomes FILE``
prints what ``replay --sweep 2..8 --outcomes FILE`` prints). On a real cluster, give
``Client`` the scheduler's address instead of the ``LocalCluster``: the rest is
the same code.
"""

import json
import sys
from pathlib import Path

import dask.bag as db
from dask.distributed import Client, LocalCluster

from loop_brake_cli.corpus.work import partial_of, plan


def main(corpus: list[str], parts: Path, cap: int | None = None, stop: int | None = None) -> None:
    jobs = plan(corpus, cap=cap, stop_after=stop)  # maxRepeats 3, as replay with no -m
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster),
    ):  # fmt: skip
        partials = db.from_sequence(jobs, npartitions=len(jobs)).map(partial_of).compute()
    parts.mkdir(parents=True, exist_ok=True)
    for number, partial in enumerate(partials):  # in the plan's order: merge keeps it
        (parts / f"part-{number:05d}.json").write_text(json.dumps(partial) + "\n")
    print(f"{len(partials)} partial reports in {parts}", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {"--cap": None, "--stop-after": None}
    while args and args[0] in options:
        options[args[0]] = int(args[1])
        args = args[2:]
    main(args[:-1], Path(args[-1]), options["--cap"], options["--stop-after"])
