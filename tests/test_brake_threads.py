"""One LoopBrake shared by threads counts every call once.

A framework may run an agent's tool calls on a thread pool with one brake. Without
a lock, two threads could read the same slot and both write count + 1: a call lost
from the streak, and a denial that comes late or never. Each call here has its own
id, so serialised counts are exactly 1..N (every call extends the one streak).
"""

from __future__ import annotations

import sys
import threading

import pytest

from loop_brake_cli import LoopBrake

THREADS, CALLS = 8, 1500


@pytest.fixture
def switch_often():
    """Let the interpreter switch threads every microsecond, so a race shows."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.parametrize("policy", [None, "warn_at = 2\n[window]\ncalls = 64\nmax_repeats = 60\n"])
def test_threads_sharing_a_brake_count_every_call_once(switch_often, tmp_path, policy) -> None:
    if policy is not None:
        path = tmp_path / "policy.toml"
        path.write_text(policy)
        policy = str(path)
    brake = LoopBrake(3, policy=policy)
    counts: list[int] = []
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        start.wait()
        mine = [
            brake.check("search", {"q": "canary"}, session_id="s", call_id=f"{t}-{i}").count
            for i in range(CALLS)
        ]
        counts.extend(mine)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(counts) == list(range(1, THREADS * CALLS + 1))
