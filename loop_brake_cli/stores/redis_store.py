"""Streaks shared by a fleet: one Redis (or Valkey) hash per session.

Several hooks, proxies or filters on several hosts count into one server, so
the third identical call is denied whichever process sees it. Per session one
key, ``lb:v1:{session}`` (the hash tag keeps it whole on Redis Cluster; a
decision touches that key alone), holding only what ``rows`` and
``policy_rows`` hold in SQLite: ``d`` the 32-byte digest, ``c`` the count,
``i``/``k`` the last call id as canonical JSON and as its comparison key,
``t`` the tool, ``u`` the time stamp, ``v`` a version bumped by every write,
and under a policy ``p``, the policy part. Never an argument, never a result.

A decision is atomic:

* the seed's rule is ``redis_step.lua``, one script and one round trip, a
  transcription of ``streak.step`` that a differential test holds to it;
* under a policy the decision is ``streak.policy_step`` in Python (the policy
  rules are stated once) and the write is ``redis_cas.lua``, a compare-and-set
  on the version read. A conflict returns the current hash and the decision
  is made again at once on it (sleeping on a state just received only lets
  other writers overtake again). After ``EAGER_RETRIES`` conflicts in a row
  (many writers on one session, a loaded host that deschedules a writer between
  its read and its write) it backs off with jitter and reads afresh, so the
  others drain and it gets its turn. A result (``streak.result_step``) is
  written the same way.
* a call's end (``end_call``) is ``redis_end.lua``: the id fields go when they
  are the ended call's, and the version is bumped.

Idle sessions expire (the key's TTL, ``idle_ttl``, refreshed by every counted
call) instead of being pruned; there is no session cap. So the server's
``maxmemory-policy`` must be ``noeviction``: under any other, a full server
evicts streaks (a ``volatile-*`` policy exactly those, the keys with a TTL) and
a loop starts over, silently. A long-lived store reads the policy on its first
answer and says once when it is another (``_check_eviction``; the hook, one
decision a process, leaves that to ``loop-brake doctor``).

A key that is not a streak (another type, written by someone else; a hash whose
slot is unreadable or impossible: no 32-byte digest, a count below 1, a garbage
version) is taken as no streak: the call starts a fresh one and overwrites it,
said once (``healed`` counts them), instead of failing open on every call of that
session. The scripts check the key's type first; a version is compared as the
bytes read, so no garbage makes every compare-and-set a conflict.

Failures: connect and read time out after ``timeout`` (0.2 s unless the URL's
``socket_timeout``/``socket_connect_timeout`` say otherwise), redis-py never
retries on its own, and after ``BREAKER_FAILURES`` unreachable answers in a
row a circuit breaker answers ``StoreUnavailable`` at once for a cool-down
(doubling up to ``BREAKER_MAX_COOLDOWN``, 0.5 s), then lets one call, the
trial, ask (half-open): once the server is back, calls are counted again
within 1 s whatever the outage's length (``_Breaker``). A timeout
is an unknown outcome: the call may have been counted; a host retrying it
with the same call id is not counted twice. Scripts flushed from the server
are loaded again by redis-py (``EVALSHA``, then ``SCRIPT LOAD`` on NOSCRIPT).
Messages name the server by ``redact(url)``: no user name, password or query.
"""

from __future__ import annotations

import importlib.util
import os
import time
from _thread import allocate_lock
from urllib.parse import urlsplit

from ..core.canonical import canonical_json
from ..core.streak import PolicySlot, Slot, policy_step, result_step
from .base import DEFAULT_IDLE_TTL, StoreError, StoreUnavailable
from .policy_rows import decode_policy_state, encode_policy_state
from .rows import SessionRow, call_id_key, decode_call_id, session_row

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's start-up)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = [
    "CLUSTER_SCHEMES",
    "KEY_PREFIX",
    "REDIS_SCHEMES",
    "RedisStore",
    "cluster_client",
    "redact",
]

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
REDIS_SCHEMES = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)
KEY_PREFIX = b"lb:v1:"
DEFAULT_TIMEOUT = 0.2
BREAKER_FAILURES = 3
BREAKER_COOLDOWN = 0.1
BREAKER_MAX_COOLDOWN = 0.5  # bounds recovery: denials resume within 1 s of the return
MAX_CONFLICTS = 256  # compare-and-set retries of one decision before giving up
EAGER_RETRIES = 8  # conflicts retried at once on the state returned; then back off and reread
_HERE = os.path.dirname(os.path.abspath(__file__))
_SLOT_FIELDS = (b"d", b"c", b"i", b"t", b"u")


def redact(url: str) -> str:
    """The URL as messages show it: scheme, host, port and path only (no user name,
    password or query string, which may carry ``password=``)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


def cluster_client(url: str, options: dict[str, Any]) -> Any:
    """redis-py's cluster client for ``redis+cluster://[user:password@]host:port[,host:port
    ...][/0][?query]`` (``rediss+cluster://``: TLS): the first node as redis-py's URL,
    the others as more nodes to start from; the client finds every master and its
    slots, follows MOVED and ASK, and reads the slots again after a failover. A
    master that cannot be asked fails only the sessions whose slots it holds
    (``require_full_coverage=False``: the others go on)."""
    from redis.cluster import ClusterNode, RedisCluster

    parts = urlsplit(url)
    login, at, hosts = parts.netloc.rpartition("@")
    first, *others = hosts.split(",")
    scheme = parts.scheme.lower().partition("+")[0]
    query = f"?{parts.query}" if parts.query else ""
    single = f"{scheme}://{login}{at}{first}{parts.path}{query}"
    nodes = []
    for node in others:
        host, _, port = node.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"a cluster node is host:port, not {node!r}")
        # redis-py declares no types on ClusterNode's constructor
        nodes.append(ClusterNode(host.strip("[]"), int(port)))  # type: ignore[no-untyped-call]
    return RedisCluster.from_url(
        single, startup_nodes=nodes, require_full_coverage=False, **options
    )


def _script(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as handle:
        return handle.read()


def _key(session: str) -> bytes:
    return KEY_PREFIX + b"{" + session.encode("utf-8", "surrogatepass") + b"}"


def _session_of(key: bytes) -> str | None:
    if not (key.startswith(KEY_PREFIX + b"{") and key.endswith(b"}")):
        return None
    return key[len(KEY_PREFIX) + 1 : -1].decode("utf-8", "surrogatepass")


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogatepass")


class _Breaker:
    """Whether to ask the server: closed, open or half-open.

    Closed, every call asks. After ``threshold`` unreachable answers in a row it
    opens: calls fail at once, not asked, until the cool-down ends. Then it is
    half-open: one call, the trial, asks the server while every other call still
    fails at once; an answer closes it, a failure opens it again for twice the
    cool-down, up to ``max_cooldown``. The cap is what bounds recovery: once the
    server is back, the next call after at most ``max_cooldown`` is the trial and is
    counted (0.5 s by default: denials resume within 1 s of the server's return,
    however long the outage was; issue 37). A dead server is asked at most once per
    cool-down, by one call at a time, never by every caller at once. ``clock`` is
    monotonic seconds (a test gives its own). Thread-safe: a trial is granted once."""

    def __init__(
        self,
        failures: int,
        cooldown: float,
        max_cooldown: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.threshold = failures
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.failures = 0
        self.open_until = 0.0
        self.trial = False
        """A trial call is asking the server (half-open): the others are not asked."""
        self._lock = allocate_lock()

    def check(self, label: str) -> bool:
        """Whether this call is the trial, if it may ask the server (closed: False);
        else ``StoreUnavailable`` at once."""
        if self.failures < self.threshold:
            return False
        with self._lock:
            if self.failures < self.threshold:
                return False
            left = self.open_until - self.clock()
            if left <= 0 and not self.trial:
                self.trial = True
                return True
        when = "a trial call is asking it" if left <= 0 else f"next try in {left:.1f} s"
        raise StoreUnavailable(
            f"redis store {label}: not asked (circuit open after "
            f"{self.failures} failures in a row; {when})"
        )

    def failed(self) -> None:
        with self._lock:
            self.failures += 1
            self.trial = False
            if self.failures >= self.threshold:
                wait = self.cooldown * 2 ** (self.failures - self.threshold)
                self.open_until = self.clock() + min(wait, self.max_cooldown)

    def release(self) -> None:
        """The trial ended with neither an answer nor a failure to reach the server (a
        bug, an interrupt): the next call may try."""
        self.trial = False

    def succeeded(self) -> None:
        """The server answered (with an error too: it is reachable): closed."""
        if self.failures or self.trial:
            with self._lock:
                self.failures = 0
                self.trial = False


class RedisStore:
    """The fleet's streaks on a Redis or Valkey server (``redis://``, ``rediss://``,
    ``unix://``). Connects on first use; ``close`` drops the connection pool."""

    def __init__(
        self,
        url: str,
        *,
        idle_ttl: float = DEFAULT_IDLE_TTL,
        timeout: float = DEFAULT_TIMEOUT,
        breaker_failures: int = BREAKER_FAILURES,
        breaker_cooldown: float = BREAKER_COOLDOWN,
        breaker_max_cooldown: float = BREAKER_MAX_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
        short_lived: bool = False,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """``clock`` times the breaker's cool-down (seconds, monotonic): a test passes
        one it moves by hand, so no test sleeps until a cool-down has passed.
        ``short_lived``: the process makes a decision or two and exits (the hook), so
        it connects through ``resp.RespConnection`` where that reads the URL as redis-py
        does and hiredis is installed, and never imports redis-py (a quarter of a CPU
        second); elsewhere redis-py connects. ``warn`` hears the store's one-line
        notices: a ``maxmemory-policy`` that evicts streaks, a key healed."""
        self.url = url
        self.short_lived = short_lived
        self.cluster = urlsplit(url).scheme.lower() in CLUSTER_SCHEMES
        """A Redis Cluster (``redis+cluster://``): redis-py's cluster client, even in
        the hook (``resp`` speaks to one server and follows no redirection)."""
        self.label = redact(url)
        self.idle_ttl = idle_ttl
        self.timeout = timeout
        self.last_version = 0
        """The version the last counted call wrote: the store's order of decisions."""
        self.conflicts = 0
        """Compare-and-set conflicts retried (policy decisions and results)."""
        self._ttl_ms = str(max(1, int(idle_ttl * 1000)))
        self.clock = clock
        self._breaker = _Breaker(
            breaker_failures, breaker_cooldown, max(breaker_cooldown, breaker_max_cooldown), clock
        )
        self._client: Any = None
        self._link: Any = None
        self._step: Any = None
        self._cas: Any = None
        self._end: Any = None
        self._unavailable: tuple[type[BaseException], ...] = ()
        self._failed: tuple[type[BaseException], ...] = ()
        self._worded = False
        self._warn = warn
        self.healed = 0
        """Keys that held no streak (another type, an impossible slot), overwritten."""
        self._eviction_checked = short_lived  # the hook: doctor says it, not every call
        if importlib.util.find_spec("redis") is None:
            raise StoreError(
                f"redis store {self.label}: redis-py is not installed "
                "(pip install 'loop-brake-cli[redis]')"
            )

    # -- connection and failures ------------------------------------------------

    def _connect(self) -> Any:
        if self._client is None and self.short_lived:
            from . import resp

            where = resp.target(self.url, self.timeout) if resp.available() else None
            if where is not None:
                self._unavailable, self._failed = (resp.RespUnavailable,), (resp.RespError,)
                self._worded = True  # its failures say what _why says of redis-py's
                self.timeout = where.timeout
                self._use(resp.RespConnection(where))
        if self._client is None:
            import redis
            import redis.exceptions as errors
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            unavailable = (errors.ConnectionError, errors.TimeoutError, errors.BusyLoadingError)
            self._unavailable = unavailable
            self._failed = (errors.RedisError,)
            options = {
                "socket_timeout": self.timeout,
                "socket_connect_timeout": self.timeout,
                "retry": Retry(NoBackoff(), 0),
            }
            try:
                if self.cluster:
                    # before it is made: the cluster client asks a node for the slots
                    self._unavailable += (errors.ClusterError, errors.RedisClusterException)
                    client = cluster_client(self.url, options)
                    kwargs = client.nodes_manager.connection_kwargs
                else:
                    client = redis.Redis.from_url(self.url, retry_on_timeout=False, **options)
                    kwargs = client.connection_pool.connection_kwargs
            except ValueError as exc:  # a malformed URL or query value
                raise StoreError(f"redis store {self.label}: {self._scrub(str(exc))}") from None
            self.timeout = kwargs["socket_timeout"]  # the URL's, if it gives one
            self._use(client)
        return self._client

    def _use(self, client: Any) -> None:
        """Count through ``client`` (redis-py's, or a ``resp.RespConnection``), its
        commands sent through a ``redis_link`` link."""
        from .redis_link import Script, link_for

        link = link_for(client)
        self._link = link
        self._step = Script(link, _script("redis_step.lua"))
        self._cas = Script(link, _script("redis_cas.lua"))
        self._end = Script(link, _script("redis_end.lua"))
        self._client = client

    def _ask(self, work: Callable[[Any], Any]) -> Any:
        """Run ``work(client)``: the breaker first, every failure of the client as one
        line."""
        breaker = self._breaker
        trial = breaker.check(self.label)
        client = None
        try:
            client = self._connect()
            result = work(client)
        except self._unavailable as exc:
            breaker.failed()
            raise StoreUnavailable(f"redis store {self.label}: {self._why(exc)}") from None
        except self._failed as exc:
            breaker.succeeded()  # an error reply: the server is reachable
            raise StoreError(f"redis store {self.label}: {self._why(exc)}") from None
        except BaseException:
            if trial:
                breaker.release()  # a trial must not wedge the breaker half-open
            raise
        breaker.succeeded()
        if not self._eviction_checked:
            self._eviction_checked = True
            self._check_eviction(client)
        return result

    @property
    def eviction_checked(self) -> bool:
        """Whether the server's ``maxmemory-policy`` was read (or is not to be: the hook)."""
        return self._eviction_checked

    def connect(self) -> None:
        """Connect now, and read the server's ``maxmemory-policy`` now (said once when
        it evicts streaks, ``_check_eviction``) rather than at the first decision: a
        long-lived front-end (``mcp-gateway``) says it at start. Raises as a decision
        would (``StoreUnavailable``, ``StoreError``); then the policy is read at the
        first answer."""
        self._ask(lambda client: client.ping())

    def _ask_many(self, work: Callable[[Any], list[Any]], size: int) -> list[Any]:
        """``_ask`` for ``work(client)`` that answers ``size`` calls, a client's failure in
        place of a call it left undecided: each such failure becomes a ``StoreError``
        (``StoreUnavailable`` when the server could not be asked: the breaker hears one
        failure for the write); a failure before any answer, every call's."""
        breaker = self._breaker
        try:
            trial = breaker.check(self.label)
            client = self._connect()
            answers = work(client)
        except StoreError as exc:  # the circuit is open, or the URL cannot be used
            return [exc] * size
        except self._unavailable as exc:
            breaker.failed()
            unavailable = StoreUnavailable(f"redis store {self.label}: {self._why(exc)}")
            return [unavailable] * size
        except self._failed as exc:
            breaker.succeeded()
            return [StoreError(f"redis store {self.label}: {self._why(exc)}")] * size
        except BaseException:
            if trial:
                breaker.release()
            raise
        said: dict[int, StoreError] = {}
        lost = False
        for index, answer in enumerate(answers):
            if isinstance(answer, BaseException) and not isinstance(answer, StoreError):
                if id(answer) not in said:
                    message = f"redis store {self.label}: {self._why(answer)}"
                    if isinstance(answer, self._unavailable):
                        lost = True
                        said[id(answer)] = StoreUnavailable(message)
                    else:
                        said[id(answer)] = StoreError(message)
                answers[index] = said[id(answer)]
        if lost:
            breaker.failed()
            return answers
        breaker.succeeded()
        if not self._eviction_checked:
            self._eviction_checked = True
            self._check_eviction(client)
        return answers

    def _say(self, message: str) -> None:
        if self._warn is not None:
            self._warn(f"redis store {self.label}: {message}")

    def _check_eviction(self, client: Any) -> None:
        """Say once when the server's ``maxmemory-policy`` may evict streaks (any but
        ``noeviction``: every streak key has a TTL). Read from ``INFO memory`` (which
        managed services answer), else ``CONFIG GET``; a server that answers neither
        is not asked again and nothing is said (``loop-brake doctor`` says it). On a
        cluster, every master is asked: the first one that evicts is said."""
        servers = [client]
        if self.cluster:
            servers = [node.redis_connection for node in client.get_primaries()]
        policies = [
            _eviction_policy(server, self._failed + self._unavailable) for server in servers
        ]
        policy = next((found for found in policies if found not in (None, "noeviction")), None)
        if policy is None:
            return
        which = (
            "exactly the streaks (the keys with a TTL)"
            if policy.startswith("volatile")
            else ("any key, streaks among them")
        )
        self._say(
            f"maxmemory-policy is {policy}: once memory is full Redis evicts {which}, and "
            "a session evicted starts over, its repeated call not denied; set "
            "maxmemory-policy noeviction (docs/scaling.md)"
        )

    def _healed(self, kind: str) -> None:
        """A key that held no streak was overwritten with a fresh one: counted, and
        said the first time."""
        self.healed += 1
        if self.healed == 1:
            what = "a hash that is not a streak" if kind == "hash" else f"a {kind}, not a hash"
            self._say(
                f"a session's key held {what}; it was counted as a fresh streak and "
                "overwritten (said once; later ones are healed the same way)"
            )

    def _read(self, client: Any, key: bytes) -> tuple[dict[bytes, bytes], bool]:
        """A session's hash, and whether the key holds another type (read as no hash:
        ``redis_cas.lua`` overwrites it and says which type it was)."""
        try:
            return _fields(self._link.call("HGETALL", key)), False
        except self._failed as exc:
            if not self._wrong_type(exc):
                raise
            return {}, True

    def _wrong_type(self, exc: BaseException) -> bool:
        """Whether a failure is the server's WRONGTYPE: the key holds no hash."""
        return isinstance(exc, self._failed) and str(exc).startswith("WRONGTYPE")

    def _why(self, exc: BaseException) -> str:
        """A client's failure in a few words, credentials scrubbed (``resp`` words its
        own as this does redis-py's)."""
        if self._worded:
            return self._scrub(str(exc))
        import redis.exceptions as errors

        if isinstance(exc, errors.TimeoutError):
            return f"no answer within {self.timeout:g} s"
        if isinstance(exc, errors.AuthenticationError):
            return "authentication failed"
        if isinstance(exc, errors.ConnectionError):
            cause = exc.__cause__ or exc.__context__
            reason = getattr(cause, "strerror", None) or exc.__class__.__name__
            if isinstance(cause, TimeoutError):
                reason = f"no connection within {self.timeout:g} s"
            return f"cannot connect ({self._scrub(str(reason))})"
        return self._scrub(" ".join(str(exc).split()) or exc.__class__.__name__)

    def _scrub(self, text: str) -> str:
        """Remove the URL and its password from a message, in case a library or the
        server quoted them (the messages above are built from error classes and
        ``strerror``; a password shorter than 4 characters is not searched for, so
        that words are not garbled)."""
        password = urlsplit(self.url).password
        text = text.replace(self.url, self.label)
        if password and len(password) >= 4:
            text = text.replace(password, "***")
        return text

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing a dead connection must not fail a decision
                pass

    # -- reading a session ------------------------------------------------------

    def _state(self, fields: dict[bytes, bytes], policy: Any) -> tuple[Any, float, bytes]:
        """A hash as (the policy state or None, its stamp, its version field as read:
        ``redis_cas.lua`` compares those bytes)."""
        version = fields.get(b"v", b"")
        slot, stamp = self._slot(fields)
        if slot is None:
            return None, 0.0, version
        text = fields.get(b"p")
        try:
            part = _text(text) if text else None
        except UnicodeDecodeError:
            part = None  # unreadable: the policy part starts afresh
        return decode_policy_state(slot, stamp, part, policy), stamp, version

    @staticmethod
    def _slot(fields: dict[bytes, bytes]) -> tuple[Slot | None, float]:
        try:
            digest, count, tool, stamp = fields[b"d"], int(fields[b"c"]), fields[b"t"], fields[b"u"]
            call_id = fields.get(b"i")
            if len(digest) != 32 or count < 1:
                return None, 0.0
            slot = Slot(
                digest, count, decode_call_id(_text(call_id) if call_id else None), _text(tool)
            )
            return slot, float(stamp)
        except (KeyError, ValueError, UnicodeDecodeError):
            return None, 0.0

    @staticmethod
    def _pairs(slot: Slot, stamp: float, state: PolicySlot) -> list[Any]:
        pairs: list[Any] = [b"d", slot.digest, b"c", slot.count, b"t", _encode(slot.tool)]
        pairs += [b"u", repr(stamp), b"p", encode_policy_state(state, stamp)]
        if slot.call_id is not None:
            pairs += [b"i", canonical_json(slot.call_id), b"k", call_id_key(slot.call_id)]
        return pairs

    # -- the decision -----------------------------------------------------------

    def _after_conflict(
        self, client: Any, key: bytes, conflict: int, returned: list[bytes]
    ) -> dict[bytes, bytes]:
        """The hash for the next try of a compare-and-set after ``conflict`` conflicts:
        the one the script returned, at once, for ``EAGER_RETRIES`` conflicts; then,
        after a jittered back-off, a fresh read."""
        self.conflicts += 1
        if conflict < EAGER_RETRIES:
            return _as_dict(returned)
        import random

        time.sleep(random.uniform(0, min(0.05, 0.001 * 2 ** (conflict - EAGER_RETRIES))))
        return self._read(client, key)[0]

    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Any = None,
        now: float | None = None,
    ) -> tuple[Slot | PolicySlot, bool]:
        """Count one call atomically (``redis_step.lua``, or ``policy_step`` and a
        compare-and-set under ``policy``): the session's state after it and whether it
        was a duplicate (``core.table.SessionTable``)."""
        at = time.time() if now is None else now
        call = (session, tool, digest, call_id)
        if policy is not None:
            answer = self.count_calls([call], max_repeats, policy, at)[0]
            if isinstance(answer, StoreError):
                raise answer
            return answer
        args = [self._ttl_ms, repr(at), *_step_args(tool, digest, call_id)]
        reply = self._ask(lambda client: self._step([_key(session)], args))
        return self._stepped(reply, (call,))[0]

    def count_calls(
        self,
        calls: Sequence[tuple[str, str, bytes, Any]],
        max_repeats: int = 0,
        policy: Any = None,
        now: float | None = None,
    ) -> list[Any]:
        """Count several calls, each ``(session, tool, digest, call_id)``, as
        ``count_call`` would one after the other, in one round trip (two under a
        policy): each session's calls go in their order in one script run
        (``redis_step.lua``) or one compare-and-set, the sessions' runs in one write.
        Per call, ``(state, duplicate)``, or the ``StoreError`` that left it undecided
        (a failure mid-write leaves the calls answered before it decided)."""
        at = time.time() if now is None else now
        groups: dict[str, list[int]] = {}
        for index, call in enumerate(calls):
            groups.setdefault(call[0], []).append(index)
        if policy is None:
            return self._ask_many(lambda client: self._step_calls(calls, groups, at), len(calls))
        return self._ask_many(
            lambda client: self._policy_calls(client, calls, groups, max_repeats, at, policy),
            len(calls),
        )

    def _step_calls(
        self, calls: Sequence[tuple[str, str, bytes, Any]], groups: dict[str, list[int]], at: float
    ) -> list[Any]:
        runs = []
        stamp = repr(at)
        for session, indexes in groups.items():
            args = [self._ttl_ms, stamp]
            for index in indexes:
                args += _step_args(*calls[index][1:])
            runs.append(([_key(session)], args))
        answers: list[Any] = [None] * len(calls)
        for indexes, reply in zip(groups.values(), self._step.many(runs), strict=True):
            if isinstance(reply, BaseException):
                for index in indexes:
                    answers[index] = reply
                continue
            stepped = self._stepped(reply, [calls[index] for index in indexes])
            for index, answer in zip(indexes, stepped, strict=True):
                answers[index] = answer
        return answers

    def _stepped(
        self, reply: list[Any], calls: Sequence[tuple[str, str, bytes, Any]]
    ) -> list[tuple[Slot, bool]]:
        """A ``redis_step.lua`` reply as each call's ``(slot, duplicate)``."""
        if reply[0]:
            self._healed(_text(reply[0]))
        answers = []
        at = 1
        for _session, tool, digest, call_id in calls:
            count, duplicate, version, stored_digest, stored_tool = reply[at : at + 5]
            at += 5
            if not duplicate:
                self.last_version = version
                answers.append((Slot(digest, count, call_id, tool), False))
                continue
            try:
                stored = _text(stored_tool)
            except UnicodeDecodeError:  # a duplicate of a call whose stored tool is garbage
                stored = tool
            answers.append((Slot(stored_digest, count, call_id, stored), True))
        return answers

    def _policy_calls(
        self,
        client: Any,
        calls: Sequence[tuple[str, str, bytes, Any]],
        groups: dict[str, list[int]],
        max_repeats: int,
        at: float,
        policy: Any,
    ) -> list[Any]:
        """Each session's calls decided by ``policy_step`` in their order on the hash read,
        written by one compare-and-set; a conflict decides that session's calls again on
        the hash returned (``_after_conflict``)."""
        keys = [_key(session) for session in groups]
        answers: list[Any] = [None] * len(calls)
        todo: dict[str, dict[bytes, bytes]] = {}
        reads = self._link.pipeline([("HGETALL", key) for key in keys])
        for session, read in zip(groups, reads, strict=True):
            if isinstance(read, BaseException) and not self._wrong_type(read):
                for index in groups[session]:
                    answers[index] = read
                continue
            todo[session] = {} if isinstance(read, BaseException) else _fields(read)
        conflict = 0
        while todo:
            conflict += 1
            if conflict > MAX_CONFLICTS:
                failed = StoreError(
                    f"redis store {self.label}: {MAX_CONFLICTS} conflicting writers"
                )
                for session in todo:
                    for index in groups[session]:
                        answers[index] = failed
                break
            writes = []
            for session, fields in todo.items():
                prev, _stamp, version = self._state(fields, policy)
                state, decided = prev, []
                for index in groups[session]:
                    _session, tool, digest, call_id = calls[index]
                    after, duplicate = policy_step(
                        state, tool, digest, call_id, max_repeats, policy
                    )
                    decided.append((index, (after, duplicate)))
                    if not duplicate:
                        state = after
                if state is prev:  # duplicates only: nothing to write
                    for index, answer in decided:
                        answers[index] = answer
                    continue
                garbage = bool(fields) and prev is None  # a hash that is not a streak
                args = [version, self._ttl_ms, *self._pairs(state.slot, at, state)]
                writes.append((session, garbage, decided, ([_key(session)], args)))
            results = self._cas.many([write[3] for write in writes]) if writes else []
            todo = {}
            for (session, garbage, decided, _run), result in zip(writes, results, strict=True):
                if isinstance(result, BaseException):
                    for index, _answer in decided:
                        answers[index] = result
                    continue
                written, payload, *kind = result
                if not written:
                    todo[session] = self._after_conflict(client, _key(session), conflict, payload)
                    continue
                self.last_version = payload
                if garbage or kind[0]:
                    self._healed(_text(kind[0]) if kind[0] else "hash")
                for index, answer in decided:
                    answers[index] = answer
        return answers

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Any,
        error: bool = False,
        now: float | None = None,
    ) -> bool:
        """Pair a result's digest with the session's latest call (``streak.result_step``),
        written by compare-and-set keeping the key's expiry; creates nothing."""
        key = _key(session)

        def work(client: Any) -> bool:
            fields = self._read(client, key)[0]  # another type: no streak to pair with
            for conflict in range(1, MAX_CONFLICTS + 1):
                prev, stamp, version = self._state(fields, policy)
                if prev is None:
                    return False
                state, paired = result_step(prev, call_id, digest, error)
                if state is prev or state is None:
                    return paired
                pairs = self._pairs(state.slot, stamp, state)
                written, payload, *_ = self._cas(keys=[key], args=[version, "", *pairs])
                if written:
                    return paired
                fields = self._after_conflict(client, key, conflict, payload)
            raise StoreError(f"redis store {self.label}: {MAX_CONFLICTS} conflicting writers")

        return self._ask(work)

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool:
        """Forget the session's call id when it is ``call_id`` (``redis_end.lua``, one
        atomic step comparing ``rows.call_id_key``s); returns whether it did."""
        if call_id is None:
            return False
        key, id_key = _key(session), call_id_key(call_id)
        return bool(self._ask(lambda client: self._end(keys=[key], args=[id_key])))

    # -- state list / reset -----------------------------------------------------

    def _keys(self, client: Any, session: str | None) -> list[bytes]:
        if session is not None:
            return [_key(session)]
        return list(client.scan_iter(match=KEY_PREFIX + b"*", count=1000))

    def sessions(self, session: str | None = None) -> tuple[list[SessionRow], int]:
        """Every live session (or one), most recently updated first, and how many keys
        under our prefix were skipped as not ours. Read-only."""

        def work(client: Any) -> tuple[list[SessionRow], int]:
            keys = self._keys(client, session)
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.hmget(key, *_SLOT_FIELDS)
            shown: list[SessionRow] = []
            skipped = 0
            for key, values in zip(keys, pipe.execute(raise_on_error=False), strict=True):
                row = _row(key, values)
                if row is not None:
                    shown.append(row)
                elif not (isinstance(values, list) and not any(values)):
                    skipped += 1  # not expired meanwhile: a hash not written by us
            shown.sort(key=lambda row: row.updated, reverse=True)
            return shown, skipped

        return self._ask(work)

    def reset(self, session: str | None = None) -> int:
        """Forget one session's streak, or every one under our prefix."""

        def work(client: Any) -> int:
            keys = self._keys(client, session)
            removed = 0
            for start in range(0, len(keys), 500):
                removed += client.unlink(*keys[start : start + 500])
            return removed

        return self._ask(work)


def _eviction_policy(server: Any, failures: tuple[type[BaseException], ...]) -> str | None:
    """A server's ``maxmemory-policy`` (``INFO memory``, else ``CONFIG GET``), or None
    when it answers neither."""
    policy = None
    try:
        policy = server.info("memory").get("maxmemory_policy")
        if policy is None:
            policy = server.config_get("maxmemory-policy").get("maxmemory-policy")
    except failures:
        return None
    if isinstance(policy, bytes):
        policy = policy.decode("utf-8", "replace")
    return None if policy is None else str(policy)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _as_dict(flat: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def _fields(reply: Any) -> dict[bytes, bytes]:
    """An ``HGETALL`` reply as a dict: RESP2 answers a flat list (read raw by
    ``redis_link.PooledLink``), RESP3 and redis-py's cluster callback a dict."""
    return reply if isinstance(reply, dict) else _as_dict(reply)


def _step_args(tool: str, digest: bytes, call_id: Any) -> list[Any]:
    """One call's four arguments to ``redis_step.lua``."""
    if call_id is None:
        return [digest, _encode(tool), "", ""]
    if call_id.__class__ is str:  # the common id: its key is its JSON (rows.call_id_key)
        text = canonical_json(call_id)
        return [digest, _encode(tool), text, text]
    return [digest, _encode(tool), canonical_json(call_id), call_id_key(call_id)]


def _row(key: bytes, values: Any) -> SessionRow | None:
    """A hash as ``state list`` shows it, or None (absent, or not ours)."""
    session = _session_of(key)
    if (
        session is None
        or not isinstance(values, list)
        or not all(values[i] is not None for i in (0, 1, 3, 4))
    ):
        return None
    digest, count, call_id, tool, stamp = values
    try:
        parsed = (session, _text(tool), int(count), digest, None, float(stamp))
        call_json = _text(call_id) if call_id is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    return session_row(parsed[:4] + (call_json,) + parsed[5:])
