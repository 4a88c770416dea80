"""A corpus as independent pieces of work, for any scheduler (``replay -j``, Dask, a batch
system): ``plan`` lists the pieces in input order, ``partial_of`` replays one piece into a
partial report (plain JSON data), and ``loop-brake merge`` (or ``report.merge`` of
``partial.from_partial``) combines the partials, in the plan's order, into the report of
one ``loop-brake replay`` of the same paths.

Each piece is a file, or a run of row groups of a Parquet dataset; a piece needs
nothing from any other, and its result is small (the report of its sessions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analysis import Job, replay_job
from ..readers.reader import DEFAULT_MAX_LINE_BYTES
from .partial import to_partial
from .rows import pieces


def plan(
    paths: Sequence[str],
    *,
    max_repeats: int = 3,
    max_repeats_source: str = "default",
    pieces_per_file: int = 8,
    strict: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    cap: int | None = None,
    stop_after: int | None = None,
) -> list[Job]:
    """The pieces of ``paths`` (files, directories searched as replay searches them), in
    input order: each file one piece, a Parquet dataset up to ``pieces_per_file``.

    The settings must be the ones the single run would use (``loop-brake replay`` with
    no ``-m`` is maxRepeats 3 from ``default``) for its report to come out the same:
    ``cap`` is the top of its ``--sweep`` (None: none), ``stop_after`` the stop's K of
    its ``--outcomes`` (``replay --sweep 2..8 --outcomes FILE`` is ``cap=8,
    stop_after=2``; None: no stop points kept)."""
    from ..analysis.discover import discover

    jobs = []
    for found in discover(paths):
        if found.error is not None:
            continue  # replay names it; a plan has nothing to run for it
        for piece in pieces(found.path, pieces_per_file):
            jobs.append(
                Job(
                    found.path,
                    None,
                    max_repeats,
                    max_repeats_source,
                    max(cap or 0, max_repeats),
                    max_line_bytes,
                    found.in_directory,
                    strict,
                    timeline=True,
                    row_groups=piece,
                    stop_after=stop_after,
                )
            )
    return jobs


def partial_of(job: Job) -> dict[str, Any]:
    """Replay one piece; its partial report as JSON-ready data (no tool argument in it)."""
    return to_partial(replay_job(job))
