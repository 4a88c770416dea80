"""Closed, full and size-limited standard streams, FIFOs in directories, deep YAML.

Each case runs the real console script under a shell that sets the stream up
(``>&-``, ``<&-``, ``> /dev/full``, ``ulimit -f 0``): one stderr line, no
traceback, and the documented exit status (5: output could not be written;
3: input could not be read; 2: a configuration error).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, run_cli, spawn_cli

SAMPLE = "samples/stuck-agent.jsonl"
CONFIG = "samples/config/bundle/cordis.patch.yml"
LOOP_BRAKE = f"{sys.executable} -m loop_brake_cli"

WRITERS = [
    f"filter {SAMPLE}",
    f"replay {SAMPLE}",
    f"replay --json {SAMPLE}",
    f"replay --verdicts {SAMPLE}",
    "hash search '{\"q\":1}'",
    f"check-config {CONFIG}",
]


def shell(command: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, cwd=ROOT, env=cli_env(), timeout=timeout
    )


def assert_one_clean_line(result: subprocess.CompletedProcess[bytes], status: int) -> str:
    err = result.stderr.decode()
    assert result.returncode == status, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("args", WRITERS)
@pytest.mark.parametrize(
    "redirect, reason",
    [
        (">&-", "it is closed"),
        ("> /dev/full", "No space left on device"),
        ("> {tmp}/out", "File too large"),
    ],
)
def test_unwritable_stdout_is_one_line_and_exit_5(
    tmp_path: Path, args: str, redirect: str, reason: str
) -> None:
    if "/dev/full" in redirect and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    prefix = "ulimit -f 0; " if "{tmp}" in redirect else ""
    result = shell(f"{prefix}{LOOP_BRAKE} {args} {redirect.format(tmp=tmp_path)}")
    err = assert_one_clean_line(result, 5)
    assert f"loop-brake: cannot write to standard output ({reason})" in err


@pytest.mark.parametrize("args", ["filter", "filter -", "replay -", "replay --verdicts -"])
def test_closed_stdin_is_unreadable_input(args: str) -> None:
    err = assert_one_clean_line(shell(f"{LOOP_BRAKE} {args} <&-"), 3)
    assert "standard input is closed" in err


def test_closed_pipe_is_still_quiet_success() -> None:
    """A reader that stops early (``| head -1``) is not a failure: exit 0, no output error."""
    line = '{"tool":"t","args":{}}'
    result = shell(
        f"yes '{line}' | head -200000 | {LOOP_BRAKE} filter | head -1; "
        "echo status=${PIPESTATUS[2]} >&2"
    )
    assert b"Traceback" not in result.stderr
    assert b"status=0" in result.stderr
    assert b"cannot write" not in result.stderr
    assert result.stdout.count(b"\n") == 1


def test_every_non_blank_line_gets_one_verdict() -> None:
    """Only JSON whitespace makes a line blank: a vertical tab or form feed is content."""
    result = run_cli("filter", input=b'\x0b\n{"tool":"a"}\n\x0c\n \t\n')
    lines = result.stdout.decode().splitlines()
    assert [line.split('"line":')[1].split(",")[0] for line in lines] == ["1", "2", "3"]
    assert '"verdict":"error"' in lines[0] and '"verdict":"error"' in lines[2]


def test_a_directory_given_to_filter_is_unreadable_input(tmp_path: Path) -> None:
    result = run_cli("filter", str(tmp_path))
    assert result.returncode == 3
    assert b"Is a directory" in result.stderr


def _has_reader(fifo: Path) -> bool:
    """Whether some process holds ``fifo`` open for reading (a non-blocking open for
    writing succeeds only then; ENXIO otherwise)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_replay_of_a_directory_skips_a_fifo(tmp_path: Path, jobs: str) -> None:
    """Nobody writes the FIFO: a replay that opened it would block for ever. The test
    waits for the replay's exit, and any reader on the FIFO meanwhile gets EOF (a
    writer opened and closed) and fails the test: no timeout to outlast."""
    shutil.copy(ROOT / SAMPLE, tmp_path / "a.jsonl")
    fifo = tmp_path / "b.jsonl"
    os.mkfifo(fifo)
    proc = spawn_cli("replay", "-j", jobs, "--json", str(tmp_path))
    opened = False
    while proc.poll() is None:
        opened = _has_reader(fifo) or opened  # each reader then sees EOF and goes on
        time.sleep(0.01)
    out, err = proc.communicate()
    assert not opened, "replay opened the FIFO"
    assert proc.returncode == 0, err
    assert b'"a.jsonl"' in out or b"a.jsonl" in out
    assert b"b.jsonl" not in out


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 600 + "]" * 600 + "\n",
        "a: " + "{b: " * 600 + "1" + "}" * 600 + "\n",
        "".join(" " * i + "- \n" for i in range(0, 3000, 2)),
    ],
    ids=["flow-sequence", "flow-mapping", "block"],
)
@pytest.mark.parametrize("command", ["check-config", "filter --config", "replay --config"])
def test_deeply_nested_yaml_is_a_located_error(tmp_path: Path, text: str, command: str) -> None:
    path = tmp_path / "deep.yml"
    path.write_text(text)
    args = [*command.split(), str(path)]
    if command != "check-config":
        args.append(str(ROOT / SAMPLE))
    result = run_cli(*args)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "Traceback" not in err
    assert f"{path}:" in err and "nested too deep" in err


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_replay_workers_die_with_the_parent(tmp_path: Path, signame: str) -> None:
    """``replay -j 2`` stopped by a signal leaves no worker holding stdout/stderr open,
    nor running."""
    line = b'{"tool":"search","args":{"q":"weather"},"sessionId":"s"}\n'
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.jsonl").write_bytes(line * 400_000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "replay", "-j", "2", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=cli_env(),
    )
    try:
        workers = _wait_for_workers_reading(proc, tmp_path, 2)
        # Stopped, a worker cannot finish its file before the test looks: only the
        # parent's SIGTERM (pending until SIGCONT) can end it, and that is the event
        # waited for (a regression never sends it: the deadline turns that into a failure).
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        proc.send_signal(getattr(signal, signame))
        try:
            deadline = time.monotonic() + 120
            while not all(_sigterm_pending(pid) for pid in workers):
                assert time.monotonic() < deadline, "replay did not stop its workers"
                time.sleep(0.01)
        finally:
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):  # killed with the parent
                    os.kill(pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=120)  # EOF on both pipes: every holder is gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (130 if signame == "SIGINT" else 128 + getattr(signal, signame))
    assert b"Traceback" not in err
    for pid in workers:  # gone, not merely done with the pipes
        assert not _alive(pid), f"worker {pid} outlived replay"


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(word) for word in handle.read().split()]
    except OSError:
        return []


def _sigterm_pending(pid: int) -> bool:
    """Whether SIGTERM waits to be delivered to ``pid`` (a stopped process), per
    /proc/PID/status's pending masks; a process already gone counts as ended."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            masks = [line.split()[1] for line in handle if line.startswith(("SigPnd", "ShdPnd"))]
    except OSError:
        return True
    return any(int(mask, 16) & (1 << (signal.SIGTERM - 1)) for mask in masks)


def _alive(pid: int) -> bool:
    """Running, not a zombie (a reaped or re-parented worker that exited is neither)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _wait_for_workers_reading(proc: subprocess.Popen[bytes], folder: Path, count: int) -> list:
    """Until ``count`` children of ``proc`` each hold a file of ``folder`` open (Linux:
    /proc): the event the signal is sent on, not a guessed delay. Their pids."""
    if not os.path.isdir(f"/proc/{proc.pid}/task"):
        pytest.skip("needs Linux's /proc to see the replay's workers at work")
    prefix = str(folder) + os.sep
    while True:
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        busy = []
        for child in _children(proc.pid):
            try:
                fds = os.listdir(f"/proc/{child}/fd")
                if any(os.readlink(f"/proc/{child}/fd/{fd}").startswith(prefix) for fd in fds):
                    busy.append(child)
            except OSError:  # exited meanwhile, or not ours to read
                continue
        if len(busy) >= count:
            return busy
        time.sleep(0.01)


# Every command, each with output on stdout (issue 23: 7 of them exited 1 when
# stderr could not take the "cannot write" line either; CI reads 1 as "denied").
BOTH_FULL = WRITERS + [
    "check-config samples/config/typo/cordis.patch.yml",  # its errors go to stderr
    "state list",
    "hook install claude-code --dry-run",
    "--version",
    "replay --help",
    "filter --no-such-option",  # a usage error: its message is on stderr
    "mcp-proxy -- {python} tests/echo_server.py < samples/mcp-tools-list.jsonl",
]


@pytest.mark.parametrize("args", BOTH_FULL)
def test_stdout_and_stderr_both_full_is_exit_5(tmp_path: Path, args: str) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    (tmp_path / "home").mkdir()
    command = args.replace("{python}", sys.executable).replace(
        "samples/mcp-tools-list.jsonl", str(tmp_path / "requests.jsonl")
    )
    (tmp_path / "requests.jsonl").write_text(
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n', encoding="utf-8"
    )
    result = shell(
        f"HOME={tmp_path}/home LOOP_BRAKE_STATE={tmp_path}/state.db "
        f"{LOOP_BRAKE} {command} >/dev/full 2>/dev/full"
    )
    assert result.returncode == 5


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_replay_with_stderr_closed_still_writes_its_summary(jobs: str) -> None:
    result = shell(f"{LOOP_BRAKE} replay -j {jobs} {SAMPLE} 2>&-")
    assert result.returncode == 0
    assert b"denied" in result.stdout.lower() or b"deny" in result.stdout.lower()
