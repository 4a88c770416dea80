"""One Redis connection for a process that makes a decision or two and exits (the hook).

redis-py costs about 0.25 CPU s to import (its package imports its asyncio client,
logging, and OpenTelemetry where that is installed), ten times the rest of a hook
call: on every tool call of every agent of a fleet. This module speaks the few
commands ``RedisStore`` sends (its three scripts by ``EVALSHA``, ``HGETALL``,
``UNLINK``, ``SCAN``, pipelined ``HMGET``) over one socket, and leaves reading the
replies to hiredis, the Redis project's own reply parser (hiredis-py, installed with
the ``redis`` extra). It is not a second client: it is used only

* where ``RedisStore(short_lived=True)`` asks for it (the hook, whose one decision
  is made and the process gone), and
* for a URL whose every part it reads as redis-py reads it (``target``: ``redis://``
  or ``unix://``, user and password, the database, the two socket time-outs); TLS
  (``rediss://``), RESP3 or any other option goes to redis-py, as does everything
  when hiredis is not installed.

What the store sees is redis-py's: the same replies (bytes, integers, lists, None;
``HGETALL`` a dict), a script flushed from the server said as ``RespNoScript``
(``redis_link.Script`` loads it again, as for redis-py), failures sorted as
redis-py sorts them: ``RespUnavailable`` where redis-py raises ``ConnectionError``,
``TimeoutError`` or ``BusyLoadingError`` (the server could not be asked), with the
words ``RedisStore`` gives those, ``RespError`` for any other error reply (the text
after its code, as redis-py's parser strips it). The shared store suite
(``tests/test_stores.py``) and the fault tests (``tests/test_store_redis.py``) run
against both.
"""

from __future__ import annotations

# _socket, not socket: socket imports enum and selectors (4 ms of a hook call's 45)
# for what this module does not use; _socket is the same sockets without them.
import _socket as socket
from urllib.parse import parse_qs, unquote, urlsplit

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

try:
    import hiredis
except ImportError:  # pragma: no cover - the redis extra installs it
    hiredis = None  # type: ignore[assignment]  # available() says so before any use

__all__ = [
    "Pipeline",
    "RespConnection",
    "RespError",
    "RespNoScript",
    "RespUnavailable",
    "Target",
    "available",
    "failure",
    "is_error",
    "pack",
    "target",
]

READ_SIZE = 65536
UNDERSTOOD = frozenset({"db", "socket_timeout", "socket_connect_timeout", "username", "password"})
"""Query options read here (redis-py's names and parsing); any other: redis-py."""

# Error codes redis-py's parser strips from the message (``_parsers/base.py``), and
# those it raises as a connection failure (authentication; the dataset loading).
_STRIPPED = frozenset(
    "ERR OOM WRONGPASS EXECABORT LOADING NOSCRIPT READONLY NOAUTH NOPERM ASK TRYAGAIN "
    "MOVED CLUSTERDOWN CROSSSLOT MASTERDOWN".split()
)
_AUTH_FAILED = "authentication failed"


class RespUnavailable(Exception):
    """The server could not be asked (redis-py: ConnectionError, TimeoutError,
    BusyLoadingError); the message is what ``RedisStore`` says of it."""


class RespError(Exception):
    """The server answered with an error (redis-py: any other RedisError)."""


class RespNoScript(RespError):
    """The server does not hold the script run by its sha1 (redis-py: NoScriptError)."""


class Target:
    """Where a URL points and how to log in, as redis-py reads it."""

    __slots__ = ("address", "db", "password", "timeout", "connect_timeout", "unix", "username")

    def __init__(
        self,
        unix: bool,
        address: Any,
        db: int,
        username: str | None,
        password: str | None,
        timeout: float,
        connect_timeout: float,
    ) -> None:
        self.unix = unix
        self.address = address  # a socket path, or (host, port)
        self.db = db
        self.username = username
        self.password = password
        self.timeout = timeout
        self.connect_timeout = connect_timeout


def available() -> bool:
    """Whether hiredis is installed (else redis-py connects)."""
    return hiredis is not None


def target(url: str, timeout: float) -> Target | None:
    """The URL as redis-py's ``parse_url`` reads it, with ``timeout`` for both socket
    time-outs unless the URL gives its own; None when any part of it is not read here
    (then redis-py connects)."""
    head = url[:8].lower()
    if not head.startswith(("redis://", "unix://")):
        return None  # rediss:// (TLS) and anything else: redis-py
    try:
        parts = urlsplit(url)
        query = {name: values[0] for name, values in parse_qs(parts.query).items() if values}
        if not set(query) <= UNDERSTOOD:
            return None
        db = int(query["db"]) if "db" in query else None
        read = float(query["socket_timeout"]) if "socket_timeout" in query else timeout
        connect = (
            float(query["socket_connect_timeout"]) if "socket_connect_timeout" in query else timeout
        )
        username = unquote(parts.username) if parts.username else query.get("username")
        password = unquote(parts.password) if parts.password else query.get("password")
        if parts.scheme.lower() == "unix":
            if not parts.path:
                return None
            address: Any = unquote(parts.path)
            unix = True
        else:
            host = unquote(parts.hostname) if parts.hostname else "localhost"
            address = (host, parts.port if parts.port is not None else 6379)
            unix = False
            if parts.path and db is None:
                try:
                    db = int(unquote(parts.path).replace("/", ""))
                except ValueError:
                    pass
    except ValueError:  # a bad port or option value: redis-py says what
        return None
    return Target(unix, address, db or 0, username, password, read, connect)


def _arg(value: Any) -> bytes:
    """One argument as redis-py's encoder writes it."""
    if value.__class__ is bytes:
        return value
    if value.__class__ is str:
        return value.encode("utf-8")
    if value.__class__ is int:
        return b"%d" % value
    if value.__class__ is float:
        return repr(value).encode()
    raise RespError(f"Invalid input of type: '{type(value).__name__}'")


def pack(args: Sequence[Any]) -> bytes:
    """One command as RESP writes it (an array of bulk strings), its arguments encoded as
    redis-py's encoder encodes them."""
    parts = [b"*%d\r\n" % len(args)]
    for value in args:
        data = _arg(value)
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def bulks(args: Sequence[Any]) -> bytes:
    """``pack``'s arguments without its array header: a command's fixed head packed once
    (``redis_loop``: a script's EVALSHA and sha) and the rest per call."""
    return b"".join([b"$%d\r\n%s\r\n" % (len(data), data) for data in map(_arg, args)])


def is_error(reply: Any) -> bool:
    """Whether a reply read by ``RespConnection._round_trip`` is an error reply."""
    return isinstance(reply, hiredis.ReplyError)


def failure(error: Any) -> Exception:
    """An error reply as redis-py raises it: its class, and its text after the code."""
    text = str(error)
    code = text.split(" ")[0]
    if code in ("NOAUTH", "WRONGPASS") or text in (
        "ERR invalid password",
        "ERR wrong number of arguments for 'auth' command",
    ):
        return RespUnavailable(_AUTH_FAILED)
    if code in _STRIPPED:
        text = text[len(code) + 1 :]
    if code == "LOADING":
        return RespUnavailable(" ".join(text.split()) or "BusyLoadingError")
    return RespNoScript(text) if code == "NOSCRIPT" else RespError(text)


class RespConnection:
    """One connection, opened on first use and again after a failure closed it."""

    def __init__(self, where: Target) -> None:
        if hiredis is None:  # pragma: no cover - RedisStore checks first
            raise RespError("hiredis is not installed")
        self.target = where
        self._sock: Any = None
        self._reader: Any = None

    # -- the socket ----------------------------------------------------------------

    def _open(self) -> Any:
        where = self.target
        try:
            if where.unix:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.settimeout(where.connect_timeout)
                    sock.connect(where.address)
                except BaseException:
                    sock.close()
                    raise
            else:
                sock = self._tcp(*where.address)
        except TimeoutError:  # before OSError: it is one
            raise RespUnavailable(self._no_answer()) from None
        except OSError as exc:
            raise RespUnavailable(f"cannot connect ({exc.strerror or 'OSError'})") from None
        sock.settimeout(where.timeout)
        self._sock, self._reader = sock, hiredis.Reader()
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise
        return sock

    def _tcp(self, host: str, port: int) -> Any:
        """As redis-py (and ``socket.create_connection``): each address in turn."""
        error: OSError | None = None
        name: str | bytes = host
        if host.isascii():  # as bytes, the resolver does not load the idna codec
            name = host.encode("ascii")
        for family, kind, proto, _, address in socket.getaddrinfo(
            name, port, 0, socket.SOCK_STREAM
        ):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(self.target.connect_timeout)
                sock.connect(address)
                return sock
            except OSError as exc:
                error = exc
                sock.close()
        raise error or OSError("socket.getaddrinfo returned an empty list")

    def _handshake(self) -> None:
        """AUTH and SELECT, as redis-py does them on RESP2 (a username refused by a
        server older than 6.0 is retried with the password alone)."""
        where = self.target
        if where.username or where.password:
            login = [where.password or ""]
            if where.username:
                login.insert(0, where.username)
            reply = self._round_trip([("AUTH", *login)], handshake=True)[0]
            if isinstance(reply, hiredis.ReplyError) and len(login) == 2:
                if str(reply) == "ERR wrong number of arguments for 'auth' command":
                    reply = self._round_trip([("AUTH", login[1])], handshake=True)[0]
            if reply != b"OK":
                raise RespUnavailable(_AUTH_FAILED)
        if where.db:
            if self._round_trip([("SELECT", where.db)], handshake=True)[0] != b"OK":
                raise RespUnavailable("cannot connect (ConnectionError)")  # "Invalid Database"

    def _no_answer(self) -> str:
        return f"no answer within {self.target.timeout:g} s"

    def close(self) -> None:
        sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    # -- commands ------------------------------------------------------------------

    def _round_trip(self, commands: Sequence[Sequence[Any]], handshake: bool = False) -> list[Any]:
        """Send the commands in one write and read one reply each (error replies
        returned as ``hiredis.ReplyError``). A failure closes the connection: the
        next command opens a new one (redis-py's pool does the same)."""
        if self._sock is None and not handshake:
            self._open()
        data = b"".join(pack(args) for args in commands)
        try:
            self._sock.sendall(data)
            replies: list[Any] = []
            reader = self._reader
            while len(replies) < len(commands):
                reply = reader.gets()
                if reply is False:
                    chunk = self._sock.recv(READ_SIZE)
                    if not chunk:
                        raise RespUnavailable("cannot connect (ConnectionError)")  # closed
                    reader.feed(chunk)
                    continue
                replies.append(reply)
            return replies
        except TimeoutError:
            self.close()
            raise RespUnavailable(self._no_answer()) from None
        except OSError as exc:
            self.close()
            raise RespUnavailable(f"cannot connect ({exc.strerror or 'OSError'})") from None
        except hiredis.ProtocolError as exc:
            self.close()
            raise RespError(f"Protocol error: {exc}") from None
        except RespUnavailable:
            self.close()
            raise

    def call(self, *args: Any) -> Any:
        """One command's reply; an error reply raised as redis-py would."""
        reply = self._round_trip([args])[0]
        if isinstance(reply, hiredis.ReplyError):
            raise failure(reply)
        return reply

    # -- what RedisStore calls, with redis-py's names and arguments -------------------

    def hgetall(self, key: bytes) -> dict[bytes, bytes]:
        flat = self.call("HGETALL", key)
        return dict(zip(flat[0::2], flat[1::2], strict=True))

    def unlink(self, *keys: bytes) -> int:
        return self.call("UNLINK", *keys)

    def scan_iter(self, match: bytes, count: int) -> Iterator[bytes]:
        cursor = b"0"
        while True:
            cursor, keys = self.call("SCAN", cursor, "MATCH", match, "COUNT", count)
            yield from keys
            if cursor == b"0":
                return

    def pipeline(self, transaction: bool = False) -> Pipeline:
        return Pipeline(self)


class Pipeline:
    """Commands sent in one write, their replies read together; an error reply stands
    in place of its command's (``execute(raise_on_error=False)``)."""

    def __init__(self, connection: RespConnection) -> None:
        self.connection = connection
        self.commands: list[tuple[Any, ...]] = []

    def hmget(self, key: bytes, *fields: bytes) -> None:
        self.commands.append(("HMGET", key, *fields))

    def execute(self, raise_on_error: bool = False) -> list[Any]:
        commands, self.commands = self.commands, []
        if not commands:
            return []
        replies = self.connection._round_trip(commands)
        failed = [failure(r) if isinstance(r, hiredis.ReplyError) else r for r in replies]
        if raise_on_error:
            for reply in failed:
                if isinstance(reply, Exception):
                    raise reply
        return failed
