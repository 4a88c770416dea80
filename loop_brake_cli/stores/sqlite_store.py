"""The hook's streaks on disk: one SQLite row per session, safe under concurrency.

Every hook invocation is its own process and several may run at once (Claude
Code runs the read-only tool calls of one message in parallel), so a decision
is one ``BEGIN IMMEDIATE`` transaction: read the session's row as a
``streak.Slot``, count the call with ``streak.step`` (the one statement of the
rule), write the new slot back unless the call was a duplicate. SQLite
serialises writers (WAL, a busy timeout), so no count is lost and no two calls
see the same count.

Which file may be used at all is ``sqlite_file``'s question (no link, nothing
but our marked store). A new store gets its mark and table in its first
transaction, in rollback-journal mode so the mark is in the file at once, then
switches to WAL. Only the hook moves a corrupt store (with the mark) aside.

A row is ``(session, digest, count, call_id_json, tool, updated)``: the 32-byte
call digest, never the arguments, and the last call id as canonical JSON text
(so the id ``7`` and the id ``"7"`` stay distinct). A row idle longer than the
TTL, or whose columns hold the wrong types, counts as absent, so pruning is
only about size: expired rows and the oldest rows beyond the cap are deleted
when a new session is inserted (never on a streak update), through an index
on ``updated``. A store written by an older layout (``SCHEMA_VERSION``) has
its table started afresh: streaks are ephemeral.

Under a policy (``streak.policy_step``), the rest of a session's state (the
cycle window, the consecutive denials, the last decision, which a duplicate
call gets) is a second row, in ``policy_state``, created only when a policy is
in use, as JSON text stamped with its streak row's ``updated``: a policy row
whose stamp differs from the streak row's (a reset, an expired or rewritten
streak) is ignored. Without a policy nothing of it is read or written.

A result (a post-tool event, under a policy that uses progress) is one more
``BEGIN IMMEDIATE`` transaction: the session's state is read as for a call,
``streak.result_step`` pairs the result's digest with the latest call, and
only the policy row is written back (stamped with its streak row's
``updated``, which stays as it is: a result is not a call), and the streak
row's call id is cleared (the call ended). A result for a session with no live
streak, or that does not pair, writes nothing. ``end_call`` (a front-end saw a
call's answer) clears that id alone, in a transaction of its own.

Durability is traded for start-up time on purpose: ``synchronous = OFF`` (see
``_open``). A lost count after a power cut costs at most one extra repeat.
"""

from __future__ import annotations

import sqlite3
import time

from ..core.streak import PolicySlot, Slot, call_ended, policy_step, result_step, step
from . import policy_rows
from .base import DEFAULT_IDLE_TTL, DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_SESSIONS
from .rows import (
    SessionRow,
    decode_call_id,
    encode_call_id,
    from_column,
    session_row,
    to_column,
    well_typed,
)
from .sqlite_file import (
    APPLICATION_ID,
    ENV_STATE,
    NotAStoreError,
    StoreError,
    StoreFile,
    claim,
    default_state_path,
    inspect,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_TTL",
    "ENV_STATE",
    "NotAStoreError",
    "SessionRow",
    "StateStore",
    "StoreError",
    "decode_call_id",
    "default_state_path",
    "encode_call_id",
]

DEFAULT_TTL = DEFAULT_IDLE_TTL
SCHEMA_VERSION = 2  # 2: call ids as canonical JSON text (1 kept them as TEXT)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS streaks ("
    " session TEXT PRIMARY KEY,"
    " digest BLOB NOT NULL,"
    " count INTEGER NOT NULL,"
    " call_id_json TEXT,"
    " tool TEXT NOT NULL,"
    " updated REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS streaks_updated ON streaks (updated)",
    f"PRAGMA application_id = {APPLICATION_ID}",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)
_SELECT = "SELECT digest, count, call_id_json, tool, updated FROM streaks WHERE session = ?"
_UPSERT = (
    "INSERT INTO streaks (session, digest, count, call_id_json, tool, updated)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (session) DO UPDATE SET digest = excluded.digest,"
    " count = excluded.count, call_id_json = excluded.call_id_json, tool = excluded.tool,"
    " updated = excluded.updated"
)
_END_CALL = "UPDATE streaks SET call_id_json = NULL WHERE session = ?"
# SQLite result codes that mean "this file is not a usable database".
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB


def _write_slot(conn: sqlite3.Connection, key: str | bytes, slot: Slot, at: float) -> None:
    """Store a session's slot (upsert), stamped ``at``; ``key`` is ``to_column(session)``."""
    stored_id = encode_call_id(slot.call_id)
    conn.execute(_UPSERT, (key, slot.digest, slot.count, stored_id, to_column(slot.tool), at))


def _old_layout(exc: sqlite3.OperationalError) -> bool:
    """A table of another schema version: a column this version reads is missing."""
    return "no such column" in str(exc)


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPT_CODES
    text = str(exc)
    return "not a database" in text or "malformed" in text


def _describe(exc: BaseException) -> str:
    """An SQLite or OS error as one line; these messages never contain row data."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or exc.__class__.__name__


class StateStore:
    """The on-disk streaks. ``warn`` receives the one-line notices (moved-aside files)."""

    def __init__(
        self,
        path: str,
        *,
        ttl: float = DEFAULT_TTL,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.label = path
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.lock_timeout = lock_timeout
        self._warn = warn or (lambda message: None)
        self._conn: sqlite3.Connection | None = None
        self._file: StoreFile | None = None

    # -- connection ---------------------------------------------------------

    def _open(self, write: bool, create: bool) -> sqlite3.Connection | None:
        """Check the file (``sqlite_file``) and connect; None: no store to use."""
        for _attempt in (0, 1):
            found = self._file = inspect(self.path, create=create, write=write)
            if found.kind == "missing" or (found.kind == "empty" and not create):
                return None
            conn = found.connect(write, self.lock_timeout)
            if conn is not None:
                break
        else:
            raise NotAStoreError(self.path, "was replaced twice while it was being opened")
        if write:
            try:
                # No fsync: still safe against a killed process (the common crash);
                # only an OS crash or power loss can lose the last counts or damage
                # the file. An fsync per hook (the WAL checkpoint when the last
                # connection closes) cost 5-10 ms here, for short-lived counters.
                conn.execute("PRAGMA synchronous = OFF")
            except BaseException:
                conn.close()
                raise
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """A store made in rollback-journal mode (so its mark is in the file at once)
        switches to WAL after its first commit; if busy, a later call does it."""
        assert self._file is not None
        if not self._file.wal:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.Error:
                pass

    def _move_aside(self, exc: sqlite3.DatabaseError) -> None:
        """Rename a corrupt store that carries our mark, so a fresh one can be made."""
        self.close()
        assert self._file is not None
        aside = self._file.move_aside()
        if aside is not None:
            self._warn(
                f"state store {self.path} was unreadable ({_describe(exc)}); "
                f"moved it to {aside} and started a new one"
            )

    def _run(
        self,
        work: Callable[[sqlite3.Connection], Any],
        *,
        write: bool = True,
        create: bool = True,
        absent: Any = None,
    ) -> Any:
        """Run ``work(conn)``, or return ``absent`` when there is no store to use.

        Only the hook (``create``) moves a corrupt store that carries our mark aside,
        once, and retries; a path that is not a store raises NotAStoreError, any other
        SQLite or OS failure StoreError (the caller's failure policy).
        """
        for attempt in (0, 1):
            try:
                if self._conn is None:
                    self._conn = self._open(write, create)
                    if self._conn is None:
                        return absent
                return work(self._conn)
            except sqlite3.DatabaseError as exc:
                movable = create and self._file is not None and self._file.kind == "ours"
                if (
                    attempt == 0
                    and movable
                    and _is_corrupt(exc)
                    and not isinstance(exc, sqlite3.OperationalError)
                ):
                    try:
                        self._move_aside(exc)
                    except OSError as move_exc:
                        raise StoreError(
                            f"state store {self.path} is unreadable ({_describe(exc)}) "
                            f"and could not be moved aside ({_describe(move_exc)})"
                        ) from None
                    continue
                self.close()
                raise StoreError(f"state store {self.path}: {_describe(exc)}") from None
            except OSError as exc:
                self.close()
                raise StoreError(f"state store {self.path}: {_describe(exc)}") from None
        raise StoreError(f"state store {self.path}: still unreadable after recreating it")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- the decision ---------------------------------------------------------

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
        """Count one call in one ``BEGIN IMMEDIATE`` transaction (under ``policy``, a
        ``policy.Policy``, with ``streak.policy_step``): the session's state after it
        and whether it was a duplicate (``core.table.SessionTable``)."""

        key = to_column(session)  # rows are keyed by it

        def work(conn: sqlite3.Connection) -> tuple[Slot | PolicySlot, bool]:
            counted: tuple[Slot | PolicySlot, bool]
            at = time.time() if now is None else now
            conn.execute("BEGIN IMMEDIATE")
            try:
                assert self._file is not None
                claim(conn, self._file, _SCHEMA)
                if policy is None:
                    counted = self._decide(conn, key, tool, digest, call_id, at)
                else:
                    counted = self._decide_policy(
                        conn, key, tool, digest, call_id, max_repeats, at, policy
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._use_wal(conn)
            return counted

        return self._run(work)

    def observe_result(
        self,
        session: str,
        call_id: Any,
        digest: bytes,
        policy: Any,
        error: bool = False,
        now: float | None = None,
    ) -> bool:
        """Record a result's digest for the session's latest call (``streak.result_step``)
        in one transaction; returns whether it paired. Nothing is created for a
        session the store does not hold."""

        def work(conn: sqlite3.Connection) -> bool:
            at = time.time() if now is None else now
            conn.execute("BEGIN IMMEDIATE")
            try:
                assert self._file is not None
                claim(conn, self._file, _SCHEMA)
                paired = self._record_result(
                    conn, to_column(session), call_id, digest, at, policy, error
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._use_wal(conn)
            return paired

        return self._run(work, create=False, absent=False)

    def end_call(self, session: str, call_id: Any, now: float | None = None) -> bool:
        """Forget the session's call id when it is ``call_id`` (``streak.call_ended``),
        in one ``BEGIN IMMEDIATE`` transaction; only that column changes (the row's
        ``updated`` stamps its policy row). Returns whether it did; nothing is created."""
        if call_id is None:
            return False
        key = to_column(session)

        def work(conn: sqlite3.Connection) -> bool:
            at = time.time() if now is None else now
            conn.execute("BEGIN IMMEDIATE")
            try:
                assert self._file is not None
                claim(conn, self._file, _SCHEMA)
                slot = self._live_slot(self._read_row(conn, key), at)
                ended = call_ended(slot, call_id) is not slot
                if ended:
                    conn.execute(_END_CALL, (key,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return ended

        return self._run(work, create=False, absent=False)

    def _record_result(
        self,
        conn: sqlite3.Connection,
        key: str | bytes,
        call_id: Any,
        digest: bytes,
        at: float,
        policy: Any,
        error: bool = False,
    ) -> bool:
        row = self._read_row(conn, key)
        slot = self._live_slot(row, at)
        if slot is None:
            return False
        prev = self._policy_state(conn, key, slot, row, policy)
        state, paired = result_step(prev, call_id, digest, error)
        if state is not prev and isinstance(state, PolicySlot):
            conn.execute(
                policy_rows.POLICY_UPSERT, (key, policy_rows.encode_policy_state(state, row[4]))
            )
            if state.slot.call_id is None and slot.call_id is not None:  # the call ended
                conn.execute(_END_CALL, (key,))
        return paired

    def _read_row(self, conn: sqlite3.Connection, key: str | bytes) -> Any:
        """The session's row, or None: the table is created if missing, and a table of
        an older layout is dropped and created afresh (streaks are ephemeral)."""
        try:
            return conn.execute(_SELECT, (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if _old_layout(exc):
                conn.execute("DROP TABLE streaks")
                self._warn(
                    f"state store {self.path} was written by an older version; "
                    "its streaks start afresh"
                )
            elif "no such table" not in str(exc):
                raise
        for statement in _SCHEMA:
            conn.execute(statement)
        return None

    def _decide(
        self,
        conn: sqlite3.Connection,
        key: str | bytes,
        tool: str,
        digest: bytes,
        call_id: Any,
        at: float,
    ) -> tuple[Slot, bool]:
        row = self._read_row(conn, key)
        prev = self._live_slot(row, at)
        slot, duplicate = step(prev, tool, digest, call_id)
        if not duplicate:
            _write_slot(conn, key, slot, at)
            if prev is None:
                self._prune(conn, at)
        return slot, duplicate

    def _decide_policy(
        self,
        conn: sqlite3.Connection,
        key: str | bytes,
        tool: str,
        digest: bytes,
        call_id: Any,
        max_repeats: int,
        at: float,
        policy: Any,
    ) -> tuple[PolicySlot, bool]:
        row = self._read_row(conn, key)
        slot = self._live_slot(row, at)
        prev = self._policy_state(conn, key, slot, row, policy)
        state, duplicate = policy_step(prev, tool, digest, call_id, max_repeats, policy)
        if not duplicate:
            _write_slot(conn, key, state.slot, at)
            conn.execute(
                policy_rows.POLICY_UPSERT, (key, policy_rows.encode_policy_state(state, at))
            )
            if slot is None:  # a new streak, as in _decide: no row, or an expired one
                self._prune(conn, at)
                conn.execute(policy_rows.POLICY_PRUNE)  # policy rows whose streak row is gone
        return state, duplicate

    def _policy_state(
        self, conn: sqlite3.Connection, key: str | bytes, slot: Slot | None, row: Any, policy: Any
    ) -> PolicySlot | None:
        """The live streak's policy state (None without one): its slot and the policy part
        stored beside it. The policy table is created on first use: a store written
        without a policy has none."""
        conn.execute(policy_rows.POLICY_SCHEMA)
        if slot is None:
            return None
        stored = conn.execute(policy_rows.POLICY_SELECT, (key,)).fetchone()
        return policy_rows.decode_policy_state(slot, row[4], stored[0] if stored else None, policy)

    def _live_slot(self, row: Any, at: float) -> Slot | None:
        """A row's slot, or None (no row, one past the TTL, one not ours): a new streak."""
        if row is not None and well_typed(*row) and row[4] >= at - self.ttl:
            try:
                tool = from_column(row[3])
            except UnicodeDecodeError:  # a BLOB this module did not write
                return None
            return Slot(row[0], row[1], decode_call_id(row[2]), tool)
        return None

    def _prune(self, conn: sqlite3.Connection, at: float) -> None:
        """Drop expired sessions, then the oldest beyond the cap (index on ``updated``)."""
        conn.execute("DELETE FROM streaks WHERE updated < ?", (at - self.ttl,))
        (total,) = conn.execute("SELECT count(*) FROM streaks").fetchone()
        excess = total - self.max_sessions
        if excess > 0:
            conn.execute(
                "DELETE FROM streaks WHERE session IN"
                " (SELECT session FROM streaks ORDER BY updated ASC, session ASC LIMIT ?)",
                (excess,),
            )

    # -- state list / reset ---------------------------------------------------

    def sessions(self, session: str | None = None) -> tuple[list[SessionRow], int]:
        """Every live session (or one), most recently updated first (none if no store),
        and how many rows were skipped because their columns hold the wrong types.
        Read-only: nothing is created, marked, moved or written."""

        def work(conn: sqlite3.Connection) -> tuple[list[SessionRow], int]:
            query = "SELECT session, tool, count, digest, call_id_json, updated FROM streaks"
            params: tuple[object, ...] = ()
            if session is not None:
                query += " WHERE session = ?"
                params = (to_column(session),)
            try:
                rows = conn.execute(query + " ORDER BY updated DESC", params).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc) or _old_layout(exc):
                    return [], 0  # an older layout starts afresh on the next call
                raise
            shown = [row for row in map(session_row, rows) if row is not None]
            return shown, len(rows) - len(shown)

        return self._run(work, write=False, create=False, absent=([], 0))

    def reset(self, session: str | None = None) -> int:
        """Forget one session's streak, or all of them; returns how many were removed."""

        def work(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if session is None:
                    cursor = conn.execute("DELETE FROM streaks")
                else:
                    cursor = conn.execute(
                        "DELETE FROM streaks WHERE session = ?", (to_column(session),)
                    )
                removed = cursor.rowcount
                conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                conn.execute("ROLLBACK")
                if "no such table" in str(exc):
                    return 0
                raise
            return removed

        return self._run(work, create=False, absent=0)
