"""A Redis store's two gateway commands made on the event loop: no thread hand-off.

``mcp-gateway --store redis://`` counts every ``tools/call`` in the store and tells
it every call's end. Handed to a worker thread and back (``mcp_gateway.store_calls``)
each round trip cost more than the round trip itself: 0.22-0.28 ms of a denial's
0.52-0.64 ms in ``bench/store_handoff.py``, and with 8 clients the workers' turns at
the GIL made a Redis decision cost 1.05 ms of CPU against 0.28 ms with the memory
store, under issue 37's 1,000 decisions a second. Here those two commands
(``redis_step.lua`` for a count without a policy, ``redis_end.lua`` for an end) are
written on asyncio connections of the loop that awaits them, and their replies read by
hiredis in the loop's own callback: a round trip is one write and one wake-up.

Everything else stays ``RedisStore``'s, made in the worker pool: a count under a
policy (a read and a compare-and-set, retried), a result, the ``maxmemory-policy``
check. So does every URL ``resp.target`` does not read whole (TLS, RESP3, other
options) and a cluster URL (redis-py's cluster client follows MOVED and ASK and sends
one pipeline per master; this module speaks to one server). What the store promises
holds here as there:

* the breaker is the store's own ``_Breaker``, asked before every command and told
  every outcome: a trial call after the cool-down, recovery within 1 s;
* failures are sorted and worded as ``resp`` sorts and words them (``resp.failure``),
  ``StoreUnavailable`` when the server could not be asked, else ``StoreError``;
* the store's timeout: a command unanswered that long closes its connection and fails
  every command waiting on it (the server could not be asked), as a socket time-out
  does to a redis-py connection;
* the decision's deadline is a loop timer: past it the command is answered with
  ``TimeoutError`` (the gateway decides without the store, counted), and its reply,
  when it comes, is dropped;
* a script flushed from the server (``NOSCRIPT``) is loaded again and run once more;
* a key that holds no streak is healed and said once (``RedisStore._stepped``).

A connection carries several commands at once (replies come in the order sent): a
command takes a connection whose write is still to go, else one with nothing waiting,
else opens one (up to ``connections``), else queues behind the connection with the
fewest waiting. The commands asked in one turn of the loop and the next go out in one
write, and an end waits for the next count (at most ``END_HOLD``) to go out with it: on
loopback a ``send`` also does the server's side of the work, and it was the Redis
path's largest cost in a profile under ``bench/gateway_load.py`` (waiting one more turn
took its CPU a request from 0.33-0.34 ms to 0.30-0.31 ms: the requests read in the next
turn ride the same write; a turn more gained nothing and added latency).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from hashlib import sha1
from typing import Any

from . import resp
from .base import StoreError, StoreUnavailable
from .redis_store import RedisStore, _key, _script, _step_args
from .resp import hiredis  # type: ignore[attr-defined]  # None without it: for_store says
from .rows import call_id_key

__all__ = ["END_HOLD", "RedisLoop"]

END_HOLD = 0.002
"""Seconds an end may wait for the next count to ride with: under load one comes
sooner (a call every 0.3 ms at 8 clients), and the two share a write and a read; idle,
the end's id is freed that much later (only a request reusing it waits)."""


class _Waiter:
    """One command's reply, awaited on ``future``; ``timer`` fires at the decision's
    deadline or the store's timeout, whichever comes first."""

    __slots__ = ("future", "timer", "timeout_at", "deadline_at")

    def __init__(self, future: asyncio.Future[Any], timeout_at: float, deadline_at: float) -> None:
        self.future = future
        self.timer: Any = None  # its asyncio.TimerHandle, set once made (it names the waiter)
        self.timeout_at = timeout_at
        self.deadline_at = deadline_at


class _Connection(asyncio.Protocol):
    """One connection to the server; writes made before it is open wait in order."""

    def __init__(self, link: RedisLoop) -> None:
        self.link = link
        self.transport: Any = None  # an asyncio.Transport once connected
        self.reader = hiredis.Reader()
        self.waiting: deque[_Waiter] = deque()
        """Written, awaiting replies, in the order written."""
        self.held: list[tuple[bytes, _Waiter]] = []
        """Asked before the connection was open (and logged in): written then."""
        self.ready = False
        """Open and logged in: a command is written at the next turn's end."""
        self.unsent: list[bytes] | None = None
        """Commands asked and not yet written: at the end of the next turn of the loop, or
        (ends only) with the next count, at most ``end_hold`` seconds later."""
        self.soon = False
        """A write at the end of the next turn is due."""
        self.hold: Any = None
        """The timer of the held ends' write (an ``asyncio.TimerHandle``)."""
        self.failed: Exception | None = None

    # -- asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        waiting = self.waiting
        while True:
            try:
                reply = reader.gets()
            except hiredis.ProtocolError as exc:
                self.fail(resp.RespError(f"Protocol error: {exc}"))
                return
            if reply is False:
                return
            if not waiting:  # a reply to nothing asked: the stream cannot be trusted
                self.fail(resp.RespUnavailable("cannot connect (ConnectionError)"))
                return
            waiter = waiting.popleft()
            waiter.timer.cancel()
            if not waiter.future.done():  # else past its deadline: dropped
                waiter.future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.fail(resp.RespUnavailable("cannot connect (ConnectionError)"))  # closed

    # -- commands --------------------------------------------------------------------

    def send(self, data: bytes, deadline_at: float, urgent: bool = True) -> _Waiter:
        """Write ``data``, a packed command (or hold it until the connection is open); its reply is
        awaited on the waiter's future. Not ``urgent`` (an end: no one awaits it but
        the id it frees), it waits for the next urgent command, up to ``end_hold``."""
        link = self.link
        loop = link.loop
        waiter = _Waiter(loop.create_future(), loop.time() + link.timeout, deadline_at)
        waiter.timer = loop.call_at(min(waiter.timeout_at, deadline_at), self._expired, waiter)
        if self.ready:
            self.waiting.append(waiter)
            if self.unsent is None:
                self.unsent = [data]
            else:
                self.unsent.append(data)
            if urgent:
                if not self.soon:
                    self.soon = True
                    loop.call_soon(loop.call_soon, self.flush)  # the next turn's end
            elif self.hold is None and not self.soon:
                self.hold = loop.call_later(link.end_hold, self.flush)
        else:
            self.held.append((data, waiter))
        return waiter

    def flush(self) -> None:
        """The commands asked during two turns of the loop go out as one write: each
        ``send`` on loopback also does the server's side of the work, and the replies
        then come back in one read (``bench/gateway_load.py``: a call's count and the
        previous call's end, and other clients' commands, share them)."""
        self.soon = False
        if self.hold is not None:
            self.hold.cancel()
            self.hold = None
        unsent, self.unsent = self.unsent, None
        if unsent and self.transport is not None:
            self.transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))

    def write_held(self) -> None:
        """The connection is open and logged in: what was asked meanwhile goes out."""
        held, self.held = self.held, []
        self.ready = True
        for _data, waiter in held:
            self.waiting.append(waiter)
        if held:
            self.transport.write(b"".join([data for data, _waiter in held]))

    def _expired(self, waiter: _Waiter) -> None:
        """A waiter's timer: past the decision's deadline, the command is answered
        ``TimeoutError`` (its reply will be dropped) and the timer set again for the
        store's timeout; past the store's timeout, the connection fails."""
        if waiter.deadline_at < waiter.timeout_at:
            if not waiter.future.done():
                waiter.future.set_exception(TimeoutError())
            waiter.deadline_at = waiter.timeout_at  # next time: the store's timeout
            waiter.timer = self.link.loop.call_at(waiter.timeout_at, self._expired, waiter)
            return
        self.fail(resp.RespUnavailable(f"no answer within {self.link.timeout:g} s"))

    def fail(self, error: Exception) -> None:
        """The connection is lost (or cannot be trusted): closed, every command waiting
        on it answered with ``error``, and it is not used again. A command no one awaits
        any more (past its deadline) is still a failure to reach the server for the
        breaker, as a worker thread's timed-out call is."""
        if self.failed is not None:
            return
        self.failed = error
        self.ready = False
        self.unsent = None
        if self.hold is not None:
            self.hold.cancel()
            self.hold = None
        self.link.forget(self)
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.abort()
        waiters = [*self.waiting, *(waiter for _data, waiter in self.held)]
        self.waiting.clear()
        self.held = []
        for waiter in waiters:
            waiter.timer.cancel()
            if not waiter.future.done():
                waiter.future.set_exception(error)
            elif isinstance(error, resp.RespUnavailable):
                self.link.store._breaker.failed()

    async def request(self, command: tuple[Any, ...]) -> Any:
        """Send and await, within the store's timeout (the handshake's own commands,
        written at once, before what is held)."""
        loop = self.link.loop
        at = loop.time() + self.link.timeout
        waiter = _Waiter(loop.create_future(), at, at)
        waiter.timer = loop.call_at(at, self._expired, waiter)
        self.waiting.append(waiter)
        self.transport.write(resp.pack(command))
        return await waiter.future


class RedisLoop:
    """``store``'s count (without a policy) and end on the running event loop (module
    docstring). ``for_store`` says whether a store can be asked this way."""

    def __init__(self, store: RedisStore, where: resp.Target, connections: int) -> None:
        self.store = store
        self.target = where
        self.timeout = where.timeout
        self.connect_timeout = where.connect_timeout
        self.connections = connections
        self.end_hold = END_HOLD
        """Seconds an end waits for a count to go out with (``END_HOLD``)."""
        self.pool: list[_Connection] = []
        self.loop: Any = None
        self._opening: set[asyncio.Task[None]] = set()
        self._step = _evalsha(_script("redis_step.lua"))
        self._end = _evalsha(_script("redis_end.lua"))

    @classmethod
    def for_store(cls, store: Any, connections: int) -> RedisLoop | None:
        """A ``RedisLoop`` for ``store`` when it is a Redis store whose URL ``resp.target``
        reads whole (one server: it takes no cluster URL) and hiredis is installed; else
        None (the pool asks it)."""
        if not isinstance(store, RedisStore) or not resp.available():
            return None
        where = resp.target(store.url, store.timeout)
        return None if where is None else cls(store, where, connections)

    # -- what the gateway asks ------------------------------------------------------

    async def count(
        self, session: str, tool: str, digest: bytes, call_id: Any, deadline_at: float
    ) -> tuple[Any, bool]:
        """``RedisStore.count_call`` without a policy: the session's slot after the call
        and whether it was a duplicate. Raises ``StoreError`` (``StoreUnavailable``), or
        ``TimeoutError`` past ``deadline_at`` (the loop's clock)."""
        store = self.store
        args = [store._ttl_ms, repr(time.time()), *_step_args(tool, digest, call_id)]
        reply = await self._script(self._step, _key(session), args, deadline_at)
        return store._stepped(reply, ((session, tool, digest, call_id),))[0]

    async def end(self, session: str, call_id: Any, deadline_at: float) -> bool:
        """``RedisStore.end_call``: whether the session's call id was ``call_id`` and is
        forgotten. Raises as ``count`` does."""
        if call_id is None:
            return False
        args = [call_id_key(call_id)]
        return bool(await self._script(self._end, _key(session), args, deadline_at, False))

    def close(self) -> None:
        """Every connection closed, the commands still waiting failed (a closed loop
        cannot close them: their sockets close with their transports)."""
        if self.loop is None or self.loop.is_closed():
            self.pool = []
            self._opening = set()
            return
        for connection in list(self.pool):
            connection.fail(resp.RespUnavailable("cannot connect (the gateway is stopping)"))
        for task in list(self._opening):
            task.cancel()

    # -- commands ---------------------------------------------------------------------

    async def _script(
        self,
        script: tuple[str, bytes],
        key: bytes,
        args: list[Any],
        deadline_at: float,
        urgent: bool = True,
    ) -> Any:
        command = b"*%d\r\n%s%s" % (len(args) + 4, script[1], resp.bulks((key, *args)))
        try:
            return await self._ask(command, deadline_at, urgent)
        except resp.RespNoScript:  # flushed from the server: loaded again, run once more
            pass
        await self._ask(resp.pack(("SCRIPT", "LOAD", script[0])), deadline_at)
        try:
            return await self._ask(command, deadline_at)
        except resp.RespNoScript as exc:
            store = self.store
            raise StoreError(f"redis store {store.label}: {store._scrub(str(exc))}") from None

    async def _ask(self, command: bytes, deadline_at: float, urgent: bool = True) -> Any:
        """One command's (packed) reply through the store's breaker; a failure as the
        store's (``RespNoScript`` raised as it is, for ``_script`` to load the script)."""
        store = self.store
        breaker = store._breaker
        trial = breaker.check(store.label)
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # another loop (a new asyncio.run): start afresh
            self.close()
            self.loop = loop
        try:
            reply = await self._pick().send(command, deadline_at, urgent).future
        except resp.RespUnavailable as exc:
            breaker.failed()
            raise StoreUnavailable(f"redis store {store.label}: {store._scrub(str(exc))}") from None
        except resp.RespError as exc:  # the server answered what cannot be read
            breaker.succeeded()
            raise StoreError(f"redis store {store.label}: {store._scrub(str(exc))}") from None
        except BaseException:  # past the deadline, or cancelled
            if trial:
                breaker.release()
            raise
        if resp.is_error(reply):
            error = resp.failure(reply)
            if isinstance(error, resp.RespUnavailable):  # authentication, loading
                breaker.failed()
                raise StoreUnavailable(f"redis store {store.label}: {store._scrub(str(error))}")
            breaker.succeeded()
            if isinstance(error, resp.RespNoScript):
                raise error
            raise StoreError(f"redis store {store.label}: {store._scrub(str(error))}")
        breaker.succeeded()
        return reply

    def _pick(self) -> _Connection:
        """A connection whose write is still to go (the command rides in
        it, and its reply in the same read), else one with nothing waiting, else a new
        one (up to ``connections``), else the one with the fewest waiting."""
        best = None
        for connection in self.pool:
            if connection.unsent is not None:
                return connection
        for connection in self.pool:
            if not connection.waiting and not connection.held:
                return connection
            if best is None or _queued(connection) < _queued(best):
                best = connection
        if best is None or len(self.pool) < self.connections:
            best = _Connection(self)
            self.pool.append(best)
            task = self.loop.create_task(self._open(best))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)
        return best

    def forget(self, connection: _Connection) -> None:
        if connection in self.pool:
            self.pool.remove(connection)

    async def _open(self, connection: _Connection) -> None:
        """Connect and log in (AUTH and SELECT, as ``resp.RespConnection`` does), then
        write what was asked meanwhile; a failure fails those commands."""
        where, loop = self.target, self.loop
        try:
            try:
                if where.unix:
                    opening = loop.create_unix_connection(lambda: connection, where.address)
                else:
                    opening = loop.create_connection(lambda: connection, *where.address)
                await asyncio.wait_for(opening, self.connect_timeout)
            except (TimeoutError, asyncio.TimeoutError):
                raise resp.RespUnavailable(f"no answer within {self.timeout:g} s") from None
            except OSError as exc:
                why = os.strerror(exc.errno) if exc.errno else "OSError"
                raise resp.RespUnavailable(f"cannot connect ({why})") from None
            await self._login(connection)
        except (resp.RespUnavailable, resp.RespError) as exc:
            if connection.transport is not None:
                connection.transport.abort()
            connection.fail(exc)
            return
        except asyncio.CancelledError:
            connection.fail(resp.RespUnavailable("cannot connect (the gateway is stopping)"))
            raise
        if connection.failed is None:
            connection.write_held()

    async def _login(self, connection: _Connection) -> None:
        where = self.target
        if where.username or where.password:
            login = [where.password or ""]
            if where.username:
                login.insert(0, where.username)
            reply = await connection.request(("AUTH", *login))
            if resp.is_error(reply) and len(login) == 2:
                if str(reply) == "ERR wrong number of arguments for 'auth' command":
                    reply = await connection.request(("AUTH", login[1]))
            if reply != b"OK":
                raise resp.RespUnavailable("authentication failed")
        if where.db:
            if await connection.request(("SELECT", where.db)) != b"OK":
                raise resp.RespUnavailable("cannot connect (ConnectionError)")


def _evalsha(script: str) -> tuple[str, bytes]:
    """A script's text (for ``SCRIPT LOAD``) and its ``EVALSHA`` command's fixed part
    packed (the name, the sha, one key), the rest packed per call: packing in Python
    was a cost in the gateway's profile."""
    return script, resp.bulks(("EVALSHA", sha1(script.encode("utf-8")).hexdigest(), 1))


def _queued(connection: _Connection) -> int:
    return len(connection.waiting) + len(connection.held)
