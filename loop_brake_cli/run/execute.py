"""One ``loop-brake run``: inject, check, start, watch, end, report; the exit status.

The order matters for the guarantees: nothing is started before the hook's
command has passed its canary decision (a brake that cannot be installed is
exit 7 and the agent never runs); the agent's stream is read in a thread of its
own while this thread waits for the agent, so a Ctrl-C or a SIGTERM to the run
ends the agent's process group (``process``), never leaves it running; and the
outputs are written only after every process of the agent is gone.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..core.brake import LoopBrake
from ..core.exitcodes import ExitStatus
from .hook_log import HookLog
from .launch import Launch, LaunchError, agent_for, prepare
from .outputs import RunResult
from .progress import Progress
from .watch import Decision, Passthrough, Watch

__all__ = ["RunOptions", "execute"]

PROG = "loop-brake run"


@dataclass
class RunOptions:
    """The command line of ``loop-brake run``, resolved by the command."""

    argv: list[str]
    max_repeats: int
    max_repeats_source: str
    policy: Any = None
    agent: str | None = None
    store: str | None = None
    session: str | None = None
    stop_after: int = 2
    grace: float = 10.0
    output: str | None = None
    json_path: str | None = None
    html_path: str | None = None
    junit_path: str | None = None
    quiet: bool = False
    view: Any = None  # how progress is drawn on a terminal (render/run_view.py); None: lines
    max_line_bytes: int = 8 * 1024 * 1024
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


class _Interrupted(Exception):
    pass


def _say(message: str) -> None:
    from ..render.visible import visible

    try:
        sys.stderr.write(f"{PROG}: {visible(message, lines=True)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def _hook_words(opts: RunOptions, store: str, log: str) -> tuple[str, ...] | str:
    """The injected hook's program and options, or why there is none."""
    from ..hook.install import running_program

    program = running_program()
    if program is None:
        return (
            "cannot tell where the loop-brake program is (run as `python -m`?): "
            "run the loop-brake command itself"
        )
    words = [program, "--store", store, "--log", log, "-m", str(opts.max_repeats)]
    if opts.policy is not None and opts.policy.path is not None:
        words += ["--policy", os.path.abspath(opts.policy.path)]
    if opts.session is not None:
        words += ["--session", opts.session]
    return tuple(words)


def _install(opts: RunOptions, workdir: str) -> Launch | tuple[int, str]:
    """The launch with the hook injected and checked, or (status, why not)."""
    try:
        spec = agent_for(opts.argv, opts.agent)
    except LaunchError as exc:
        return ExitStatus.USAGE, str(exc)
    store = opts.store or opts.env.get("LOOP_BRAKE_STORE") or os.path.join(workdir, "state.db")
    log = os.path.join(workdir, "hook-log.jsonl")
    words: tuple[str, ...] | str = ()
    if spec.hook_agent is not None:
        words = _hook_words(opts, store, log)
        if isinstance(words, str):
            return ExitStatus.NOT_INSTALLED, f"the brake could not be installed: {words}"
    policy = opts.policy
    try:
        launch = prepare(
            spec,
            opts.argv,
            words,  # type: ignore[arg-type]
            workdir,
            opts.env,
            progress=policy is not None and policy.reads_results,
            user_turns=policy is not None and policy.reset_on_user_turn,
        )
    except LaunchError as exc:
        if exc.usage:
            return ExitStatus.USAGE, str(exc)
        return ExitStatus.NOT_INSTALLED, f"the brake could not be installed: {exc}"
    if launch.hook_command is not None:
        from ..hook.check import check_command, forget

        check = check_command(launch.hook_command, spec.hook_agent or "", launch.env)
        forget(store, spec.hook_agent or "", check.session, launch.env)
        if not check.ok:
            return (
                ExitStatus.NOT_INSTALLED,
                f"the brake could not be installed: the injected hook failed its check "
                f"({check.reason}); the agent was not started",
            )
    return launch


def _open_output(path: str | None) -> BinaryIO:
    if path is None:
        return sys.stdout.buffer
    return open(path, "wb")  # noqa: SIM115 - closed by execute


def execute(opts: RunOptions) -> int:
    """Run the agent with the brake; the exit status (see the exit table)."""
    workdir = tempfile.mkdtemp(prefix="loop-brake-run-")
    try:
        return _execute(opts, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _execute(opts: RunOptions, workdir: str) -> int:
    launch = _install(opts, workdir)
    if isinstance(launch, tuple):
        _say(launch[1])
        return launch[0]
    try:
        out = _open_output(opts.output)
    except OSError as exc:
        _say(f"cannot write --output {opts.output}: {exc.strerror or exc}")
        return ExitStatus.OUTPUT
    try:
        return _supervise(opts, launch, out, workdir)
    finally:
        if opts.output is not None:
            out.close()


def _supervise(opts: RunOptions, launch: Launch, out: BinaryIO, workdir: str) -> int:
    from ..analysis import Analyzer
    from ..formats import get, parse_records
    from ..readers.pipeline import judge
    from ..readers.reader import Source
    from .process import AgentProcess

    progress = Progress(opts.quiet, opts.view)
    if launch.injection is not None:
        progress.note(f"hook injected: {launch.injection} (checked: one canary decision)", None)
    else:
        progress.note(
            f"{launch.spec.name} has no command hook: braked from its stream alone "
            "(the run ends at the first denial)",
            None,
        )
    hook_log = HookLog(os.path.join(workdir, "hook-log.jsonl")) if launch.injection else None
    brake = LoopBrake(opts.max_repeats, source=opts.max_repeats_source, policy=opts.policy)
    analyzer = Analyzer(
        opts.max_repeats, opts.max_repeats_source, opts.max_repeats, opts.html_path is not None
    )
    adapter = get(launch.spec.format)
    info = analyzer.start_file(opts.output or f"<{os.path.basename(opts.argv[0])} stream>")
    info.format = adapter.INFO.name
    try:
        agent = AgentProcess(launch.argv, launch.env, opts.grace, progress.owns_terminal)
    except OSError as exc:
        _say(f"cannot start {opts.argv[0]}: {exc.strerror or exc}")
        return ExitStatus.NO_AGENT

    def decided(decision: Decision) -> None:
        progress.decision(decision.text())
        agent.stop()

    watch = Watch(
        brake,
        analyzer,
        opts.stop_after,
        reachable=launch.injection is not None,
        on_call=progress.call,
        on_decision=decided,
        session_key=opts.session,
    )

    def closed() -> None:
        watch.decide(Decision("output"))

    through = Passthrough(out, closed, progress.whole_lines)

    def on_chunk() -> None:
        if hook_log is not None:
            for reason in hook_log.poll():
                progress.note(f"the hook failed open: {reason}")

    from .watch import _Tee

    source = Source(
        _Tee(agent.stdout_fd, through, on_chunk),  # type: ignore[arg-type]
        "<agent stream>",
        opts.max_line_bytes,
    )
    failure: list[str] = []

    def read() -> None:
        try:
            records = watch.records(
                parse_records(adapter, source, brake.progress, brake.user_turns)
            )
            for record, verdict in judge(records, brake):
                watch.see(record, verdict)
        except Exception as exc:  # an adapter's bug: pass the rest through, unjudged
            failure.append(exc.__class__.__name__)
        try:  # what is left after an adapter failed, or after its last record
            while source.stream.read1(1 << 16):  # type: ignore[attr-defined]
                pass
        except OSError:
            pass

    reader = threading.Thread(target=read, name="loop-brake-run-reader", daemon=True)
    threads = [reader]
    if agent.stderr_fd is not None:  # a live panel: the agent's stderr is drawn above it
        threads.append(
            threading.Thread(
                target=_relay_stderr,
                args=(agent.stderr_fd, progress),
                name="loop-brake-run-stderr",
                daemon=True,
            )
        )
    progress.start(launch.spec.name, opts.stop_after, lambda: watch.ignored)
    status: int | None = None
    try:
        for thread in threads:
            thread.start()
        status = _wait(agent, watch)
        agent.end_group()
        for thread in threads:
            thread.join()
        through.finish()  # an unfinished last line held for the terminal, if any
    finally:
        progress.close(_outcome(watch.decision, status))
    if failure:
        _say(f"internal error reading the stream ({failure[0]}); the rest was passed through")
    if hook_log is not None:
        for reason in hook_log.poll():
            progress.note(f"the hook failed open: {reason}")
    return _finish(opts, launch, watch, analyzer, hook_log, status, through)


def _relay_stderr(fd: int, progress: Progress) -> None:
    """The agent's stderr (and its hooks'), line by line, to the view, until every
    process holding it is gone."""
    with os.fdopen(fd, "rb", closefd=False) as stream:
        try:
            while line := stream.readline(1 << 16):  # a longer line: in pieces
                progress.agent_line(line)
        except (OSError, ValueError):
            pass


def _wait(agent: Any, watch: Watch) -> int:
    """Wait for the agent; Ctrl-C or SIGTERM to the run ends it (and is remembered)."""
    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum: int, frame: Any) -> None:
        raise _Interrupted

    try:
        signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (a library caller): no handler
        previous = None
    try:
        while True:
            try:
                return agent.wait()
            except (KeyboardInterrupt, _Interrupted):
                watch.decide(Decision("interrupted"))
                agent.stop()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _outcome(decision: Decision | None, agent_status: int | None) -> str | None:
    """How the run ended, for a view's last frame (a decision it was already shown)."""
    if decision is not None or agent_status is None:
        return None
    return f"the agent exited with status {agent_status}; the brake did not act"


def _exit_status(decision: Decision | None, agent_status: int) -> int:
    if decision is not None:
        if decision.kind in ("stop", "ignored", "unreachable"):
            return ExitStatus.STOPPED
        if decision.kind == "interrupted":
            return ExitStatus.INTERRUPTED
        return ExitStatus.OK  # the reader went away (| head): not a failure
    if agent_status < 0:
        return 128 - agent_status  # killed by a signal the run did not send, as a shell says
    return agent_status


def _finish(
    opts: RunOptions,
    launch: Launch,
    watch: Watch,
    analyzer: Any,
    hook_log: HookLog | None,
    agent_status: int,
    through: Passthrough,
) -> int:
    from .outputs import RunResult

    report = analyzer.finish()
    report.warns = opts.policy is not None and opts.policy.uses_warn
    status = _exit_status(watch.decision, agent_status)
    result = RunResult(
        agent=launch.spec.name,
        program=os.path.basename(opts.argv[0]),
        injection=launch.injection,
        status=int(status),
        agent_status=agent_status,
        decision=watch.decision,
        report=report,
        hook=hook_log,
        stop_after=opts.stop_after,
        ignored=watch.ignored,
        policy=opts.policy.path if opts.policy is not None else None,
        session_key=opts.session,
        stopped_sessions=set(watch.stopped_sessions),
    )
    if through.error is not None:
        _say(f"cannot write the agent's output: {through.error}")
        status = ExitStatus.OUTPUT
        result.status = int(status)
    return _write_outputs(opts, result, status)


def _write_outputs(opts: RunOptions, result: RunResult, status: int) -> int:
    from .outputs import dump_json, print_summary, run_json, step_summary, write_junit, write_text

    failed = False
    if not opts.quiet:
        print_summary(result)
    targets: list[tuple[str, Any]] = []
    if opts.json_path is not None:
        targets.append((opts.json_path, lambda path: write_text(path, dump_json(run_json(result)))))
    if opts.junit_path is not None:
        targets.append((opts.junit_path, lambda path: write_junit(result, path)))
    summary_path = opts.env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        targets.append(
            (summary_path, lambda path: write_text(path, step_summary(result), append=True))
        )
    for path, write in targets:
        try:
            write(path)
        except OSError as exc:
            _say(f"cannot write {path}: {exc.strerror or exc}")
            failed = True
    if opts.html_path is not None:
        from ..render.html import HtmlWriteError, page_data, render_page
        from ..render.html import write_html as write_page

        try:
            write_page(render_page(page_data(result.report, result.policy, None)), opts.html_path)
        except HtmlWriteError as exc:
            _say(str(exc))
            failed = True
    if failed and status in (ExitStatus.OK,):
        return ExitStatus.OUTPUT
    return status
