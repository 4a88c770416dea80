"""Left from the policy work (issue 23): ``filter --only stop`` is accepted, and
``replay --compare-policy`` honours ``-j``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, cli_env, run_cli

SAMPLES = ROOT / "samples"
STUCK = str(SAMPLES / "stuck-agent.jsonl")
POLICY = str(SAMPLES / "policies" / "write-stdin.toml")


def test_filter_only_stop_prints_the_stops(tmp_path: Path) -> None:
    policy = tmp_path / "stop.toml"
    policy.write_text("[stop]\nafter_denials = 2\n", encoding="utf-8")
    every = run_cli("filter", "--policy", str(policy), STUCK)
    kinds = [json.loads(line)["verdict"] for line in every.stdout.splitlines()]
    assert "stop" in kinds and "deny" in kinds
    only = run_cli("filter", "--policy", str(policy), "--only", "stop", STUCK)
    assert only.returncode == 0, only.stderr
    stops = [json.loads(line) for line in only.stdout.splitlines()]
    assert [v["verdict"] for v in stops] == ["stop"] * kinds.count("stop")
    denials = run_cli("filter", "--policy", str(policy), "--only", "deny", STUCK)
    got = [json.loads(line)["verdict"] for line in denials.stdout.splitlines()]
    assert got == [kind for kind in kinds if kind in ("deny", "stop")]  # a stop is a denial


def test_compare_policy_with_jobs_gives_the_same_output() -> None:
    files = [str(SAMPLES / name) for name in sorted(os.listdir(SAMPLES)) if name.endswith("l")]
    for extra in ([], ["--json"]):
        one = run_cli("replay", "--compare-policy", POLICY, *extra, *files)
        three = run_cli("replay", "--compare-policy", POLICY, "-j", "3", *extra, *files)
        assert (three.returncode, three.stdout) == (one.returncode, one.stdout)


def test_compare_policy_with_jobs_reads_the_files_at_once(tmp_path: Path) -> None:
    """Two FIFOs, the second written first: one process reading them in turn waits on
    the first for ever; -j 2 opens both at once (it used to ignore -j)."""
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    os.mkfifo(first)
    os.mkfifo(second)
    command = [sys.executable, "-m", "loop_brake_cli", "replay", "--compare-policy", POLICY]
    command += ["-j", "2", str(first), str(second)]
    replay = subprocess.Popen(command, stdout=subprocess.PIPE, env=cli_env())
    try:
        for fifo, sample in ((second, STUCK), (first, str(SAMPLES / "healthy-session.jsonl"))):
            # a regression waits on the first FIFO for ever: the deadline only turns that
            # hang into a failure, generous enough for a loaded machine's start-up
            deadline = time.monotonic() + 300
            while True:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no reader yet
                    break
                except OSError:
                    assert replay.poll() is None, f"replay exited before opening {fifo.name}"
                    assert time.monotonic() < deadline, f"{fifo.name} was never opened"
                    time.sleep(0.01)
            os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as writer:
                writer.write(Path(sample).read_bytes())
        out, _ = replay.communicate(timeout=60)
    finally:
        replay.kill()
    assert replay.returncode == 0
    assert b"fix-flaky-test" in out and b"release-notes" in out
