"""``loop-brake replay``: saved transcripts through the brake, and where it would have bitten.

The command only parses options, resolves maxRepeats (exit 2 before reading any
input if it is unusable) and chooses an output; finding files is discover.py,
counting is analysis/, drawing is render.py.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import Future

import click

from ..analysis import (
    FileInfo,
    Job,
    Report,
    merge,
    parse_sweep,
    replay_files,
    replay_job,
    report_to_json,
    sweep,
)
from ..brake import LoopBrake
from ..discover import discover
from ..exitcodes import EXIT_CODES_HELP, ExitStatus
from ..formats import names
from ._options import config_option, max_line_bytes_option, max_repeats_option, resolve_or_report

PROGRESS_MIN_BYTES = 8 << 20
"""Below this many bytes in all, a replay is quick enough to need no progress bar."""


def _fail(message: str) -> None:
    click.echo(f"loop-brake replay: {message}", err=True)


@click.command(
    "replay",
    epilog=EXIT_CODES_HELP,
    short_help="Replay saved transcripts: where the brake would have stopped the agent.",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(allow_dash=True))
@max_repeats_option(
    "Deny the call that brings a streak to N "
    "(default: --config, else $DSH_LOOP_BRAKE_MAX_REPEATS, else 3)."
)
@config_option(
    "Take maxRepeats from these cordis.patch.yml layers, in composition order (repeatable)."
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(names()),
    default=None,
    help="Read every file as this format (default: detected per file).",
)
@click.option(
    "--continue-sessions",
    is_flag=True,
    help="Let streaks continue across files (default: each file is its own run).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
@click.option(
    "--verdicts",
    is_flag=True,
    help="Print the filter's verdict lines instead of a summary (as `filter --format X`).",
)
@click.option(
    "--sweep",
    "sweep_text",
    metavar="LOW..HIGH",
    default=None,
    help="Also tabulate what each maxRepeats in LOW..HIGH (e.g. 2..10) would deny.",
)
@click.option("--fail-on-deny", is_flag=True, help="Exit 1 if any call would be denied.")
@click.option("--expect-deny", is_flag=True, help="Exit 1 unless at least one call would be.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Replay files in N worker processes (each file its own run; output in input order).",
)
@max_line_bytes_option("Longer lines are unreadable records (and are never held in memory whole).")
def replay_command(
    paths: tuple[str, ...],
    max_repeats: int | None,
    config_paths: tuple[str, ...],
    format_name: str | None,
    continue_sessions: bool,
    as_json: bool,
    verdicts: bool,
    sweep_text: str | None,
    fail_on_deny: bool,
    expect_deny: bool,
    jobs: int,
    max_line_bytes: int,
) -> int:
    """Replay transcripts from PATHS (files, directories searched recursively, or -)
    through the brake and summarise where it would have stopped each agent.

    \b
    Every file is its own run; its format is detected from its content
    (--format forces one) and .gz files are read transparently. The summary
    lists sessions, their longest identical streak, each denial and how many
    more identical calls the agent made after it, a histogram of streak lengths,
    and what the exact match cannot catch (A/B alternation, same tool with
    changing arguments). Unreadable files get a located error on stderr, the
    other files are still reported, and the exit status is 3.

    \b
      loop-brake replay ~/.codex/sessions --sweep 2..10
      loop-brake replay golden/ --fail-on-deny     # CI: healthy runs stay unbraked
      loop-brake replay stuck/ --expect-deny       # CI: known loops are caught

    Tool arguments never appear in any output: only tool names, session ids,
    call ids, 12-hex hash prefixes and locations.
    """
    if as_json and verdicts:
        _fail("--json and --verdicts are different outputs: choose one")
        return ExitStatus.USAGE
    if verdicts and sweep_text is not None:
        _fail("--sweep is part of the summary (and --json), not of --verdicts")
        return ExitStatus.USAGE
    if jobs > 1 and continue_sessions:
        _fail("-j cannot be combined with --continue-sessions (streaks would cross workers)")
        return ExitStatus.USAGE
    limits = None
    if sweep_text is not None:
        try:
            limits = parse_sweep(sweep_text)
        except ValueError as exc:
            _fail(f"--sweep: {exc}")
            return ExitStatus.USAGE
    resolved = resolve_or_report("loop-brake replay", max_repeats, config_paths)
    if resolved is None:
        return ExitStatus.USAGE
    value, source = resolved

    files: list[str] = []
    missing: list[str] = []
    for found in discover(paths):
        if found.error is None:
            files.append(found.path)
        else:
            missing.append(found.path)
            _fail(f"{found.path}: {found.error}")
    if not files:
        _fail("nothing to replay")
        return ExitStatus.NOT_FOUND

    if verdicts:
        bad, denied = _print_verdicts(
            files, value, source, format_name, continue_sessions, max_line_bytes
        )
        unreadable = bad or bool(missing)
    else:
        cap = max(limits.stop - 1 if limits else 0, value)
        report = _replay(
            files, value, source, cap, format_name, continue_sessions, max_line_bytes, jobs
        )
        for error in report.errors:
            _fail(str(error))
        if report.unreadable > len(report.errors):
            _fail(f"... and {report.unreadable - len(report.errors)} more unreadable record(s)")
        rows = sweep(report, limits) if limits else None
        if as_json:
            doc = report_to_json(report, rows)
            text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
            sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
            sys.stdout.flush()
        else:
            from ..render import print_replay_summary

            print_replay_summary(report, rows)
        denied = report.denied > 0
        unreadable = report.unreadable > 0 or bool(missing)
    if unreadable:
        return ExitStatus.UNREADABLE
    if fail_on_deny and denied:
        return ExitStatus.BRAKE
    if expect_deny and not denied:
        _fail("--expect-deny: no call would be denied")
        return ExitStatus.BRAKE
    return ExitStatus.OK


def _replay(
    files: list[str],
    value: int,
    source: str,
    cap: int,
    format_name: str | None,
    continue_sessions: bool,
    max_line_bytes: int,
    jobs: int,
) -> Report:
    progress = _progress(files)
    try:
        if jobs > 1 and len(files) > 1 and "-" not in files:
            return _replay_parallel(
                files, value, source, cap, format_name, max_line_bytes, jobs, progress
            )
        on_progress, on_file = progress.callbacks() if progress else (None, None)
        return replay_files(
            files,
            max_repeats=value,
            max_repeats_source=source,
            cap=cap,
            format_name=format_name,
            max_line_bytes=max_line_bytes,
            continue_sessions=continue_sessions,
            on_file=on_file,
            on_progress=on_progress,
        )
    finally:
        if progress:
            progress.stop()


def _replay_parallel(
    files: list[str],
    value: int,
    source: str,
    cap: int,
    format_name: str | None,
    max_line_bytes: int,
    jobs: int,
    progress: _Progress | None,
) -> Report:
    """Each file in a worker process; reports merged in input order as they arrive."""
    from concurrent.futures import ProcessPoolExecutor

    work = [Job(path, format_name, value, source, cap, max_line_bytes) for path in files]
    merged: Report | None = None
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(files)), initializer=_worker_init)
    previous = _exit_on_signals()
    try:
        # Largest files first, so one big file started last cannot leave a worker idle;
        # results are still merged in input order.
        futures: dict[int, Future[Report]] = {}
        for index in sorted(range(len(work)), key=lambda i: -_size(work[i].path)):
            future = pool.submit(replay_job, work[index])
            if progress:
                future.add_done_callback(progress.future_done)
            futures[index] = future
        for index in range(len(work)):
            report = futures.pop(index).result()
            merged = report if merged is None else merge([merged, report])
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
    assert merged is not None
    return merged


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


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them: no traceback per worker.

    On Linux a worker also dies with its parent, even one killed with SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _print_verdicts(
    files: list[str],
    value: int,
    source: str,
    format_name: str | None,
    continue_sessions: bool,
    max_line_bytes: int,
) -> tuple[bool, bool]:
    """Verdict lines exactly as ``filter --format X`` prints them; (unreadable, denied)."""
    from ..analysis import internal_error
    from ..formats import UnknownFormatError, detect, get
    from ..output import LineWriter
    from ..pipeline import Tally, write_verdicts
    from ..reader import UnreadableInputError, open_source

    brake = LoopBrake(value, source=source)
    out = LineWriter(sys.stdout.buffer)
    tally = Tally()
    label = len(files) > 1
    unreadable = False
    for index, path in enumerate(files):
        if index and not continue_sessions:
            brake.reset()
        try:
            src = open_source(path, max_line_bytes, on_wait=out.flush)
        except OSError as exc:
            out.flush()
            _fail(f"{path}: cannot read: {exc.strerror or exc}")
            unreadable = True
            continue
        file_label = src.name if label else None
        name = format_name
        before = tally.calls
        try:
            adapter = get(format_name) if format_name else detect(src.head(), src.name)
            name = adapter.INFO.name
            write_verdicts(adapter.parse(src), brake, tally, out, file=file_label)
        except UnknownFormatError as exc:
            out.flush()
            _fail(str(exc))
            unreadable = True
        except UnreadableInputError as exc:
            out.flush()
            _fail(f"{src.name}: {exc}")
            unreadable = True
        except Exception as exc:  # an adapter's bug: report it, go on with the next file
            out.flush()
            _fail(f"{src.name}: {internal_error(name, tally.calls - before, exc)}")
            unreadable = True
        finally:
            src.close()
    out.flush()
    return unreadable or tally.errors > 0, tally.denied > 0


class _Progress:
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


def _stderr_is_terminal() -> bool:
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def _progress(files: list[str]) -> _Progress | None:
    if not _stderr_is_terminal():
        return None
    total = sum(_size(path) for path in files if path != "-")
    return _Progress(total) if total >= PROGRESS_MIN_BYTES else None
