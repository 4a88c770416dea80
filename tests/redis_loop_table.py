"""A Redis store asked as ``mcp-gateway`` asks it, for the store suites.

``LoopTable`` wraps a ``RedisStore``: its count without a policy and its end are made by
``stores.redis_loop`` on an event loop of the table's own (the gateway's path), the rest
by the store as the gateway's worker pool makes it. So the shared store suite
(tests/test_stores.py) and the fault tests (tests/test_store_redis.py) hold the loop's
path to the memory brake and to the store's promises (timeouts, the breaker, recovery).
"""

from __future__ import annotations

import asyncio
from typing import Any

from loop_brake_cli.stores.redis_loop import RedisLoop
from loop_brake_cli.stores.redis_store import RedisStore

DEADLINE = 120.0  # a hang guard: these tests bound a call by the store's own timeout


class LoopTable:
    """``store`` with its count (without a policy) and end on a private event loop."""

    def __init__(self, store: RedisStore, connections: int = 4) -> None:
        on_loop = RedisLoop.for_store(store, connections)
        assert on_loop is not None, "the URL is not one the gateway asks on its loop"
        self.store = store
        self.on_loop = on_loop
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Any = None,
        now: float | None = None,
    ) -> Any:
        if policy is not None or now is not None:  # the worker pool's, as in the gateway
            return self.store.count_call(session, tool, digest, call_id, max_repeats, policy, now)
        deadline = self.loop.time() + DEADLINE
        return self._run(self.on_loop.count(session, tool, digest, call_id, deadline))

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool:
        return self._run(self.on_loop.end(session, call_id, self.loop.time() + DEADLINE))

    def close(self) -> None:
        """The loop's connections closed (their sockets once the loop has run the
        closing), then the store's; as the store, it may be used again (it connects)."""
        self.on_loop.close()
        self._run(asyncio.sleep(0))
        self.store.close()
