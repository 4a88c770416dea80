"""The SQLite store under real concurrency: threads, each with its own connection, on
one file (issue 42). Every decision is one ``BEGIN IMMEDIATE`` transaction: the write
lock is taken before the session's row is read, so no two decisions read the same row
and none fails for want of upgrading a read to a write. With a deferred ``BEGIN`` some
would (``SQLITE_BUSY``): a ``StoreError``, a call the hook then allows uncounted.
"""

from __future__ import annotations

import threading
from pathlib import Path

from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import parse_policy
from loop_brake_cli.stores import StoreError
from loop_brake_cli.stores.sqlite_store import StateStore

THREADS, CALLS = 6, 900
DIGEST = call_digest("read", {"p": 1})


def _in_threads(path: Path, work) -> tuple[list, list[str]]:
    """``work(store, k, i)`` for ``CALLS`` calls in each of ``THREADS`` threads started
    together, each thread on its own ``StateStore``: what the calls returned and every
    StoreError's message."""
    StateStore(str(path)).count_call("warm-up", "read", DIGEST)  # the file and its mark
    start = threading.Barrier(THREADS)
    answers: list = []
    errors: list[str] = []
    lock = threading.Lock()

    def run(k: int) -> None:
        store = StateStore(str(path))
        start.wait()
        try:
            for i in range(CALLS):
                try:
                    answer = work(store, k, i)
                except StoreError as exc:
                    with lock:
                        errors.append(str(exc))
                    continue
                with lock:
                    answers.append(answer)
        finally:
            store.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers, errors


def test_six_threads_x_900_calls_lose_no_count(tmp_path: Path) -> None:
    """One session, 5,400 identical calls (each its own id): counts 1..5,400, each once."""

    def work(store: StateStore, k: int, i: int) -> int:
        return store.count_call("s", "read", DIGEST, f"t{k}-{i}")[0].count

    counts, errors = _in_threads(tmp_path / "state.db", work)
    assert errors == []
    assert sorted(counts) == list(range(1, THREADS * CALLS + 1))


def test_calls_and_their_ends_in_threads_never_fail(tmp_path: Path) -> None:
    """Each call ended right after it (its answer seen) from six threads at once: an end
    reads the row, then writes it when the call is still the latest; every
    transaction gets its lock, and the calls still count 1..5,400."""

    def work(store: StateStore, k: int, i: int) -> tuple[int, bool]:
        call_id = f"t{k}-{i}"
        count = store.count_call("s", "read", DIGEST, call_id)[0].count
        return count, store.end_call("s", call_id)

    answers, errors = _in_threads(tmp_path / "state.db", work)
    assert errors == []
    assert sorted(count for count, _ in answers) == list(range(1, THREADS * CALLS + 1))
    assert any(ended for _, ended in answers)  # some ends found their call the latest


def test_calls_and_their_results_in_threads_never_fail(tmp_path: Path) -> None:
    """The same with each call's result (a progress policy): a paired result reads the
    rows, then writes the policy row and ends the call."""
    policy = parse_policy("progress = true\n", "p.toml")[0]
    result = call_digest("result", {"r": 1})

    def work(store: StateStore, k: int, i: int) -> int:
        call_id = f"t{k}-{i}"
        state, _ = store.count_call("s", "read", DIGEST, call_id, 10**9, policy)
        store.observe_result("s", call_id, result, policy)
        return state.slot.count

    counts, errors = _in_threads(tmp_path / "state.db", work)
    assert errors == []
    assert sorted(counts) == list(range(1, THREADS * CALLS + 1))
