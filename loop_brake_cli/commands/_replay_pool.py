"""``replay -j``'s worker processes and the progress bar: the parts of replay that manage
processes and the terminal, kept apart from what the command decides."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..analysis import FileInfo, Job, Report, merge, replay_job

if TYPE_CHECKING:  # only in annotations: concurrent.futures is imported by -j N alone
    from concurrent.futures import Future

T = TypeVar("T")

PROGRESS_MIN_BYTES = 8 << 20
"""Below this many bytes in all, a replay is quick enough to need no progress bar..."""
PROGRESS_MIN_FILES = 200
"""...unless it has this many files: thousands of small ones take seconds (each is
opened and its format detected), which a person at a terminal should see moving."""


def replay_parallel(work: list[Job], jobs: int, progress: Progress | None) -> Report:
    """Each file in a worker process; reports merged in input order as they arrive."""
    merged: Report | None = None
    done = progress.future_done if progress else None
    for report in ordered_map(replay_job, work, [job.path for job in work], jobs, done):
        merged = report if merged is None else merge([merged, report])
    assert merged is not None
    return merged


def ordered_map(
    function: Callable[[Any], T],
    work: Sequence[Any],
    paths: Sequence[str],
    jobs: int,
    on_done: Callable[[Future[T]], None] | None = None,
) -> Iterator[T]:
    """``function`` of each item of ``work`` (item i reads file ``paths[i]``) in up to
    ``jobs`` worker processes, yielded in input order as they arrive; the workers
    stop with the parent (Ctrl-C, SIGTERM, SIGHUP, a failure)."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(work)), initializer=_worker_init)
    previous = _exit_on_signals()
    try:
        # Largest files first, so one big file started last cannot leave a worker idle;
        # results are still yielded in input order.
        futures: dict[int, Future[T]] = {}
        for index in sorted(range(len(work)), key=lambda i: -size_of(paths[i])):
            future = pool.submit(function, work[index])
            if on_done:
                future.add_done_callback(on_done)
            futures[index] = future
        for index in range(len(work)):
            yield futures.pop(index).result()
    except BaseException:
        # Ctrl-C (or a failure): do not wait for the workers to finish their files.
        # The executor has no public way to stop a running task, hence _processes.
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    pool.shutdown()


def _exit_on_signals() -> dict[int, object]:
    """SIGTERM and SIGHUP end the run like Ctrl-C does, through the clean-up that
    stops the workers (the default action would leave them running, holding the
    caller's stdout and stderr open). Exit status 128 + the signal number."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    return {
        signum: signal.signal(signum, stop)
        for signum in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
        if signum is not None
    }


def size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them: no traceback per worker.

    SIGTERM and SIGHUP get their default action back (a worker is forked while the
    parent's handlers that turn them into an exit are installed), so the parent's
    ``terminate()`` ends a worker at once. On Linux a worker also dies with its
    parent, even one killed with SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


class Progress:
    """A transient bar on stderr, by bytes read, for long inputs on a terminal."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("replaying"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.bar.add_task("replay", total=total)
        self.done = 0
        self.bar.start()

    def callbacks(self) -> tuple[Callable[[int], None], Callable[[FileInfo, Report | None], None]]:
        def on_progress(position: int) -> None:
            self.bar.update(self.task, completed=self.done + position)

        def on_file(info: FileInfo, report: Report | None) -> None:
            self.file_done(info)

        return on_progress, on_file

    def future_done(self, future: Future[Report]) -> None:
        if not future.cancelled() and future.exception() is None:
            self.file_done(future.result().files[0])

    def file_done(self, info: FileInfo) -> None:
        self.done += info.size
        self.bar.update(self.task, completed=self.done)

    def stop(self) -> None:
        self.bar.stop()


def stderr_is_terminal() -> bool:
    """Whether a progress bar may be drawn; a closed stderr (``2>&-``: None) is not."""
    stream = sys.stderr
    return stream is not None and stream.isatty() and os.environ.get("TERM") != "dumb"


def progress_bar(files: list[str]) -> Progress | None:
    if not stderr_is_terminal():
        return None
    total = sum(size_of(path) for path in files if path != "-")
    many = total >= PROGRESS_MIN_BYTES or len(files) >= PROGRESS_MIN_FILES
    return Progress(total) if many else None
