"""The store's round trips off the event loop: a bounded pool of threads, a deadline each.

With ``--store`` every ``tools/call`` the gateway forwards is counted in a shared
store (Redis, SQLite) and its end is told to it: a network or disk round trip. Made
on the event loop, one slow store stalled every request the gateway served, even
those that never touch it (``tools/list``, the GET stream): 150 ms of store latency
made 40 calls take 8 s and ``tools/list`` wait 2 s (issue 37). Here each round trip
runs in a worker thread (``workers`` of them: a RedisStore's client is a thread-safe
pool; a store that keeps one connection, as SQLite does, gets one worker), and the
request that needs it awaits it; everything else goes on. The two round trips every
call makes on a Redis server, the count without a policy and the end, are made on the
event loop itself where the URL allows (``stores.redis_loop``: no hand-off to a thread,
which cost more than the round trip); the rest (a policy's count, a result, a cluster,
TLS) goes through the pool.

A decision waits at most ``deadline`` seconds (queueing included): then the call is
decided without the store (``LoopBrake.uncounted``: allowed, or denied with
``--fail-closed``), counted in ``GatewayCounters.fail_open_deadline``. A round trip
still queued when its deadline passes is never made; one already running finishes
in its thread (bounded by the store's own timeout) and its answer is dropped (on the
loop: a loop timer answers it, and its reply is dropped when it comes).

Only the verdict's wording and the brake's failure state are touched on the event
loop's thread (``LoopBrake.slot_verdict``, ``uncounted``, ``store_answered``):
the worker threads only ask the table.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..core.brake import LoopBrake
from ..core.table import StoreError, StoreUnavailable
from ..core.verdicts import Verdict
from .counters import GatewayCounters

if TYPE_CHECKING:
    from ..stores.redis_loop import RedisLoop

__all__ = ["DEFAULT_DEADLINE", "DEFAULT_WORKERS", "StoreCalls", "concurrent_store"]

DEFAULT_DEADLINE = 1.0  # seconds a decision waits for the store
DEFAULT_WORKERS = 16  # threads asking the store at once (per gateway process)


def concurrent_store(store: Any) -> bool:
    """Whether ``store`` may be asked from several threads at once (redis-py's client is
    a thread-safe connection pool; SQLite's store keeps one connection)."""
    from ..stores.redis_store import RedisStore

    return isinstance(store, RedisStore)


class StoreCalls:
    """The worker pool between the event loop and ``brake``'s store (module docstring)."""

    def __init__(
        self,
        brake: LoopBrake,
        counters: GatewayCounters,
        *,
        workers: int = DEFAULT_WORKERS,
        deadline: float = DEFAULT_DEADLINE,
        on_loop: bool = True,
    ) -> None:
        """``workers``: threads (and, on the loop, connections) asking the store at once;
        ``on_loop`` False: every round trip through the pool (``bench/store_handoff.py``
        compares the two)."""
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.brake = brake
        self.table = brake.table
        self.counters = counters
        self.deadline = deadline
        self.workers = workers if concurrent_store(brake.store) else 1
        if self.workers > 1:  # redis-py imported now, not by the first call's worker
            import redis  # noqa: F401
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="loop-brake-store")
        self.on_loop: RedisLoop | None = None
        """The count without a policy and the end, on the event loop (``redis_loop``)."""
        if on_loop:
            from ..stores.redis_loop import RedisLoop

            self.on_loop = RedisLoop.for_store(brake.store, self.workers)
        self._eviction_asked = False
        self._ending: set[asyncio.Task[None]] = set()  # ends told in the background

    async def drain(self) -> None:
        """The gateway stops: the ends still being told to the store are awaited (each
        within the deadline), so none is lost and no task is left pending."""
        if self._ending:
            await asyncio.gather(*list(self._ending), return_exceptions=True)

    def close(self) -> None:
        """Round trips still queued are dropped; running ones end in their threads (on
        the loop: their connections are closed)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.on_loop is not None:
            self.on_loop.close()

    async def _timed(self, work: Callable[[], Any]) -> Any:
        """``work()`` in the pool, within the deadline; its time told to the hooks.
        Raises ``TimeoutError`` past the deadline, or what ``work`` raised."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            future = loop.run_in_executor(self.pool, work)
        except RuntimeError:  # the pool is shut: the gateway is stopping
            raise StoreUnavailable(f"store {self.table.label}: the gateway is stopping") from None
        try:
            return await asyncio.wait_for(future, self.deadline)
        finally:
            self.counters.store_answered_in(time.monotonic() - started)

    async def _looped(self, work: Awaitable[Any]) -> Any:
        """``work`` made on the loop (``redis_loop``, its deadline a loop timer); its time
        told to the hooks. The first answer has the server's ``maxmemory-policy`` read in
        the pool, if the start could not (``RedisStore.connect``)."""
        started = time.monotonic()
        try:
            answer = await work
        finally:
            self.counters.store_answered_in(time.monotonic() - started)
        if not self._eviction_asked:
            self._eviction_asked = True
            if not self.brake.store.eviction_checked:
                asyncio.get_running_loop().run_in_executor(self.pool, self._read_eviction)
        return answer

    def _read_eviction(self) -> None:
        """The server's ``maxmemory-policy``, read (and said once) in a worker thread; a
        failure now is the store's (its breaker hears it), and the policy is not read."""
        try:
            self.brake.store.connect()
        except StoreError:
            pass

    def _deadline(self) -> float:
        """The decision's deadline on the loop's clock."""
        return asyncio.get_running_loop().time() + self.deadline

    async def count(
        self, session: str, tool: str, digest: bytes, call_id: Any, brake: LoopBrake | None = None
    ) -> Verdict:
        """The verdict for one call, counted in the store by a worker; decided without
        the store when it fails or misses the deadline (never raised). ``brake``: the
        call's tenant's (``tenants``: its own limits and policy, the same store)."""
        brake = self.brake if brake is None else brake  # not ``or``: a brake has a len()
        table = brake.table
        max_repeats, policy = brake.max_repeats, brake.policy
        self.counters.store_decisions += 1
        try:
            if self.on_loop is not None and policy is None and table is self.on_loop.store:
                state, duplicate = await self._looped(
                    self.on_loop.count(session, tool, digest, call_id, self._deadline())
                )
            else:
                state, duplicate = await self._timed(
                    lambda: table.count_call(session, tool, digest, call_id, max_repeats, policy)
                )
        except TimeoutError:
            self.counters.fail_open_deadline += 1
            late = StoreUnavailable(
                f"store {table.label}: no decision within {self.deadline:g} s (--store-deadline)"
            )
            return brake.uncounted(late, session, tool, digest, call_id)
        except StoreError as exc:
            self.counters.fail_open_store += 1
            return brake.uncounted(exc, session, tool, digest, call_id)
        brake.store_answered()
        return brake.slot_verdict(state, session, call_id, duplicate)

    async def result(self, session: str, call_id: Any, result: Any, brake: LoopBrake) -> None:
        """A call's result told to the store by a worker (``LoopBrake.observe_result``'s
        work: its digest and error flag made here, the state written there); a failure
        is the store's (said once), a missed deadline leaves the result unread."""
        from ..core.progress import result_digest, result_error

        policy, table = brake.policy, brake.table
        digest = result_digest(result, policy.result_ignore)
        error = result_error(result)
        try:
            await self._timed(lambda: table.observe_result(session, call_id, digest, policy, error))
        except TimeoutError:
            return
        except StoreError as exc:
            brake.store_failed(exc)
        else:
            brake.store_answered()

    def end(
        self,
        session: str,
        call_id: Any,
        then: Callable[[], None],
        brake: LoopBrake | None = None,
    ) -> None:
        """Tell the store that ``call_id`` of ``session`` ended (its id may count again),
        in the background; ``then()`` runs on the loop once the store heard it, failed,
        or missed the deadline. Without a running loop, told here and now."""
        brake = self.brake if brake is None else brake
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            brake.end_call(session, call_id)
            then()
            return
        task = loop.create_task(self._end(session, call_id, then, brake))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _end(
        self, session: str, call_id: Any, then: Callable[[], None], brake: LoopBrake
    ) -> None:
        table = brake.table
        try:
            if self.on_loop is not None and table is self.on_loop.store:
                await self._looped(self.on_loop.end(session, call_id, self._deadline()))
            else:
                await self._timed(lambda: table.end_call(session, call_id))
        except TimeoutError:
            self.counters.end_calls_late += 1
        except StoreError as exc:
            brake.store_failed(exc)
        else:
            brake.store_answered()
        finally:
            then()
