"""How ``RedisStore`` sends its commands: one at a time, or many in one write.

A decision is one script run (``EVALSHA``); under a policy a read and a
compare-and-set. redis-py's ``Redis.execute_command`` wraps every command in its
retry loop, its observability hooks and its reply callbacks: 84% of a decision was
spent inside it, and the store ran at 0.61-0.68x a bare ``evalsha`` loop (issue 41).
The store uses none of them (it never retries: its client is built with
``Retry(NoBackoff(), 0)``, the breaker decides when to ask again; the scripts' replies
need no callback), so on one server (``PooledLink``) a command borrows a connection
from redis-py's pool, writes the command (packed by ``resp.pack``: redis-py's packer
took a tenth of a batched decision), reads the reply through the connection
(redis-py's parser, hiredis where installed) and gives the connection back: what
``execute_command`` does without the wrappers. A socket failure leaves the
connection disconnected, as redis-py leaves it (its ``send_packed_command`` and
``read_response`` do that), and the pool opens a new one next time.

``pipeline`` sends several commands in one write and reads their replies in order:
``filter --store`` decides the calls it has already read in one round trip. Each
reply stands in its command's place, an error reply as the client's exception; when
the connection fails after some replies were read, those stand and every later
command gets the failure, the client's exception too: its outcome is unknown, as a
timed-out call's is. On a Redis Cluster (``ClusterLink``) the commands are split by the
master that holds their key, one redis-py cluster pipeline each (which follows
redirections): a master that cannot be asked fails only its own commands; the hook's own connection
(``RespLink``, ``resp.RespConnection``) reads every reply of a write or none.

A script flushed from the server (``NOSCRIPT``) is loaded again and its commands sent
once more, as redis-py's ``Script`` does.
"""

from __future__ import annotations

from hashlib import sha1

from .resp import pack

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's start-up)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    Command = tuple[Any, ...]  # ("EVALSHA", sha, 1, key, *args): the words of one command

__all__ = ["ClusterLink", "PooledLink", "RespLink", "Script", "link_for"]


class PooledLink:
    """redis-py's ``Redis`` client on one server, its commands sent on a pooled
    connection without ``execute_command``'s wrappers (module docstring)."""

    def __init__(self, client: Any) -> None:
        from redis.exceptions import NoScriptError, RedisError, ResponseError

        self.client = client
        self.pool = client.connection_pool
        self._noscript = NoScriptError
        self._reply_error = ResponseError
        self._error = RedisError

    def call(self, *args: Any) -> Any:
        pool = self.pool
        conn = pool.get_connection()
        try:
            conn.send_packed_command([pack(args)])  # a list of chunks
            return conn.read_response()
        finally:
            pool.release(conn)

    def pipeline(self, commands: Sequence[Command]) -> list[Any]:
        pool = self.pool
        conn = pool.get_connection()
        answers: list[Any] = []
        try:
            conn.send_packed_command([b"".join([pack(command) for command in commands])])
            for _ in commands:
                try:
                    answers.append(conn.read_response())
                except self._reply_error as exc:  # read whole: the next reply follows
                    answers.append(exc)
        except self._error as exc:  # the connection failed: redis-py disconnected it
            answers += [exc] * (len(commands) - len(answers))
        finally:
            pool.release(conn)
        return answers

    def is_noscript(self, error: BaseException) -> bool:
        return isinstance(error, self._noscript)

    def load(self, text: str) -> None:
        self.call("SCRIPT", "LOAD", text)


class RespLink:
    """The hook's own connection (``resp.RespConnection``): a write's replies are read
    all together, or none."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, *args: Any) -> Any:
        return self.client.call(*args)

    def pipeline(self, commands: Sequence[Command]) -> list[Any]:
        from . import resp

        try:
            replies = self.client._round_trip(commands)
        except (resp.RespUnavailable, resp.RespError) as exc:
            return [exc] * len(commands)
        return [resp.failure(reply) if resp.is_error(reply) else reply for reply in replies]

    def is_noscript(self, error: BaseException) -> bool:
        from . import resp

        return isinstance(error, resp.RespNoScript)

    def load(self, text: str) -> None:
        self.call("SCRIPT", "LOAD", text)


class ClusterLink:
    """redis-py's cluster client: each command goes to the master of its key's slot."""

    def __init__(self, client: Any) -> None:
        from redis.exceptions import NoScriptError

        self.client = client
        self._noscript = NoScriptError

    def call(self, *args: Any) -> Any:
        return self.client.execute_command(*args)

    def pipeline(self, commands: Sequence[Command]) -> list[Any]:
        """One cluster pipeline per master, as the client's slot map places each key: the
        cluster pipeline fails whole when one master cannot be asked, and a master that
        cannot be asked must fail only the sessions whose slots it holds."""
        from redis.exceptions import RedisError

        client = self.client
        masters: dict[Any, list[int]] = {}
        for index, command in enumerate(commands):
            key = command[3] if command[0] == "EVALSHA" else command[1]
            try:
                master = client.nodes_manager.get_node_from_slot(client.keyslot(key)).name
            except RedisError:  # a slot no master holds: its own pipeline fails it
                master = None
            masters.setdefault(master, []).append(index)
        answers: list[Any] = [None] * len(commands)
        for indexes in masters.values():
            pipe = client.pipeline(transaction=False)
            for index in indexes:
                pipe.execute_command(*commands[index])
            try:
                replies = pipe.execute(raise_on_error=False)
            except RedisError as exc:  # this master could not be asked
                replies = [exc] * len(indexes)
            for index, reply in zip(indexes, replies, strict=True):
                answers[index] = reply
        return answers

    def is_noscript(self, error: BaseException) -> bool:
        return isinstance(error, self._noscript)

    def load(self, text: str) -> None:
        self.client.script_load(text)  # every master (redis-py's cluster routing)


def link_for(client: Any) -> PooledLink | RespLink | ClusterLink:
    """The link for a client ``RedisStore`` made: redis-py's ``Redis``, its
    ``RedisCluster``, or a ``resp.RespConnection``."""
    kind = client.__class__.__name__
    if kind == "RespConnection":
        return RespLink(client)
    if kind == "RedisCluster":
        return ClusterLink(client)
    return PooledLink(client)


class Script:
    """A Lua script run by its sha1 on a link, one command or a pipeline of them."""

    def __init__(self, link: PooledLink | RespLink | ClusterLink, text: str) -> None:
        self.link = link
        self.text = text
        self.sha = sha1(text.encode("utf-8")).hexdigest()

    def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """One run's reply; an error reply raised as the client raises it."""
        link = self.link
        try:
            return link.call("EVALSHA", self.sha, len(keys), *keys, *args)
        except Exception as exc:
            if not link.is_noscript(exc):
                raise
        link.load(self.text)
        return link.call("EVALSHA", self.sha, len(keys), *keys, *args)

    def many(self, runs: Sequence[tuple[Sequence[Any], Sequence[Any]]]) -> list[Any]:
        """Every run's reply, in order, sent in one write: an error reply, or a reply lost
        with the connection, stands as the client's exception."""
        commands = [("EVALSHA", self.sha, len(keys), *keys, *args) for keys, args in runs]
        link = self.link
        answers = link.pipeline(commands)
        lost = [
            index
            for index, answer in enumerate(answers)
            if isinstance(answer, Exception) and link.is_noscript(answer)
        ]
        if lost:
            link.load(self.text)
            again = link.pipeline([commands[index] for index in lost])
            for index, answer in zip(lost, again, strict=True):
                answers[index] = answer
        return answers
