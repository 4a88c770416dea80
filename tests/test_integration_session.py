"""What every framework integration shares (``integrations/_session.py``), where it is
not a framework's own behaviour: counting from many threads at once."""

from __future__ import annotations

import sys
import threading

from loop_brake_cli.integrations._session import SessionBrake, make_brake


def test_judge_from_many_threads_loses_no_count() -> None:
    # Parallel tool calls of one turn run in threads (LangGraph's sync ToolNode,
    # smolagents): without the lock a read-count-write interleaves and counts are lost
    # (198 of 4,000 in one run here), so a loop is never denied. A tiny switch interval makes
    # the interleaving all but certain without one.
    seam = SessionBrake(
        make_brake(None, 10**9), session_key=None, default_key=lambda ctx: "s", where="test"
    )

    def work(thread: int) -> None:
        for i in range(1000):
            seam.judge("s", "search", {"q": "x"}, f"{thread}-{i}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert seam.judge("s", "search", {"q": "x"}, "last").count == 4001
