"""Shared test helpers: run (or start) the real CLI in a subprocess, find Node.js.

Kept small on purpose; each test module owns its own fixtures beyond these.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# In CI (CI set) a skip that is not meant fails the run: tests/ci_skips.py
pytest_plugins = ["ci_skips"]

ROOT = Path(__file__).resolve().parent.parent
JS_DIR = Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")
NO_NODE_REASON = (
    "node is not on PATH: the Node.js reference cannot run here (the fixed vectors still do)"
)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: no inherited maxRepeats, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "DSH_LOOP_BRAKE_MAX_REPEATS"}
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run_cli(
    *args: str,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m loop_brake_cli ARGS`` for real: bytes in, bytes out, status."""
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", *args],
        input=input,
        capture_output=True,
        env=env if env is not None else cli_env(),
        timeout=timeout,
        cwd=ROOT,
    )


def spawn_cli(
    *args: str, env: dict[str, str] | None = None, bufsize: int = -1
) -> subprocess.Popen[bytes]:
    """``python -m loop_brake_cli ARGS`` started with pipes on all three streams (live tests)."""
    return subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env if env is not None else cli_env(),
        cwd=ROOT,
        bufsize=bufsize,
    )


@pytest.fixture(autouse=True)
def _own_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test its own ``$XDG_STATE_HOME``: the default store and the hook's fail-open
    notices (``hook/notice.py``) live there, per user; tests run in parallel and in
    any order, so none may share the real one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))


# System call numbers by machine, for wait_in_syscall (Linux's /proc/PID/task/TID/syscall).
SYSCALLS = {
    "x86_64": {"read": {0}, "write": {1}, "select": {7, 23, 232, 270, 271, 281}},
    "aarch64": {"read": {63}, "write": {64}, "select": {22, 72, 73}},
}


def wait_in_syscall(
    pid: int, kind: str, fd: int | None = None, threads: int = 1, within: float = 120
) -> None:
    """Until ``threads`` threads of ``pid`` are blocked in a ``kind`` system call ("read",
    "write", or "select": select, poll or epoll), on descriptor ``fd`` if given: the event
    a test acts on (a process blocked reading its stdin, waiting on a full pipe), never a
    guessed delay. ``within`` only turns a hang into a failure. Skips where Linux's
    /proc/PID/syscall cannot be read (no other way to see it)."""
    import platform
    import time

    numbers = SYSCALLS.get(platform.machine(), {}).get(kind)
    if numbers is None or not os.path.exists(f"/proc/{pid}/syscall"):
        pytest.skip(f"needs Linux's /proc/PID/syscall (x86_64 or aarch64) to see {kind}(2)")
    deadline = time.monotonic() + within
    while True:
        blocked = 0
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            tids = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/syscall") as handle:
                    words = handle.read().split()
            except OSError:  # the thread ended, or the kernel refused
                continue
            if words and words[0].isdigit() and int(words[0]) in numbers:
                if fd is None or int(words[1], 16) == fd:
                    blocked += 1
        if blocked >= threads:
            return
        assert os.path.exists(f"/proc/{pid}"), f"process {pid} is gone"
        assert time.monotonic() < deadline, f"{pid}: never {threads} thread(s) in {kind}(2)"
        time.sleep(0.01)


SHARED_SKIP = (
    "needs the workplace's real samples, shared/samples-real: absent here; "
    "set LOOP_BRAKE_SHARED=/path/to/shared to run it (see docs/DEVELOPING.md)"
)


def shared_dir() -> Path:
    """The workplace's shared folder: $LOOP_BRAKE_SHARED, else ../shared beside the repo."""
    override = os.environ.get("LOOP_BRAKE_SHARED")
    return Path(override) if override else ROOT.parent / "shared"


@pytest.fixture
def shared_samples() -> Path:
    """shared/samples-real (real transcripts we may not copy), or a skip that says why."""
    samples = shared_dir() / "samples-real"
    if not samples.is_dir():
        pytest.skip(SHARED_SKIP)
    return samples


def node_canonical(node: str, payload: bytes, timeout: float = 120) -> list[dict]:
    """What tests/js/canonical_reference.mjs prints for ``payload`` (a JSON list of
    ``{"tool", "raw"}``): one ``{canonical, hash}`` or ``{error}`` per item, in order."""
    result = subprocess.run(
        [node, str(JS_DIR / "canonical_reference.mjs")],
        input=payload,
        capture_output=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(result.stdout)


@pytest.fixture
def node() -> str:
    """The node executable, or a skip that says why."""
    if NODE is None:
        pytest.skip(NO_NODE_REASON)
    return NODE


@pytest.fixture(params=["c-reader", "pure-python"])
def event_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fast-path test run twice: with the C reader of event lines (``_event_scan.c``)
    and without it (``LOOP_BRAKE_PURE_PYTHON``), whose paths must give the same bytes."""
    if request.param == "pure-python":
        monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")
        return request.param
    monkeypatch.delenv("LOOP_BRAKE_PURE_PYTHON", raising=False)
    from loop_brake_cli.readers import fastpath

    if fastpath.scanner() is None:
        pytest.skip("the C reader loop_brake_cli.readers._event_scan is not built")
    return request.param


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server for the session (tests/redis_server.py), stopped by pid."""
    from redis_server import RedisServer

    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The session's redis-server, flushed: a fresh store for each test."""
    redis_server.command("FLUSHALL")
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A real three-master Redis Cluster for the session (tests/redis_cluster.py),
    on free loopback ports, stopped by pid: one per xdist worker."""
    from redis_cluster import RedisCluster

    cluster = RedisCluster(tmp_path_factory.mktemp("redis-cluster")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_cluster_url(redis_cluster) -> str:
    """The session's cluster, every master flushed: ``redis+cluster://`` to one node."""
    redis_cluster.flush()
    return redis_cluster.url
