"""Which file the state store may open, create, write or move aside.

``--state`` names a path, and a path can be a symbolic link, another
application's SQLite database, or a user's text file. SQLite itself would
follow the link, add our tables to the other database, or (when we moved an
"unreadable" file aside) rename the text file. So before SQLite sees the path
the file is opened here, with ``O_NOFOLLOW`` (and ``O_CREAT``, mode 0600, in
a directory created 0700, when the hook may create it), and its first 100
bytes decide:

* empty: ours to initialise;
* an SQLite file whose header carries ``APPLICATION_ID`` (``PRAGMA
  application_id``, with the layout version in ``user_version``): ours;
* an SQLite file with no application id holding exactly the table of an older
  loop-brake (``streaks``, one of the two column layouts it wrote, nothing
  else; read through an ``immutable`` connection, which writes nothing): ours
  from an older version, marked on the hook's next write;
* anything else (a symbolic link, not a regular file, not SQLite, another
  application id, an unmarked database with other tables, a symbolic link
  beside it as ``-wal``/``-shm``/``-journal``): ``NotAStoreError``, and the
  file is never renamed, changed or written.

The check is race-aware, not race-proof: our descriptor is closed before
SQLite opens the path (closing a second descriptor of a file would drop
SQLite's POSIX locks), so ``StoreFile.connect`` compares the file SQLite opened (its
``application_id``, read through SQLite) and the path's inode with what was
checked, before anything is written; a path replaced meanwhile (another hook
moved a corrupt store aside) is looked at once more.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time

from .base import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "APPLICATION_ID",
    "ENV_STATE",
    "NotAStoreError",
    "StoreError",
    "StoreFile",
    "claim",
    "default_state_path",
    "inspect",
    "layout",
    "uri",
]

ENV_STATE = "LOOP_BRAKE_STATE"
APPLICATION_ID = 0x4C42524B  # "LBRK" in the SQLite header's application_id field
_MAGIC = b"SQLite format 3\x00"
_SIDECARS = ("-wal", "-shm", "-journal")
_V2_COLUMNS = ("session", "digest", "count", "call_id_json", "tool", "updated")
_V1_COLUMNS = ("session", "digest", "count", "call_id", "tool", "updated")
_OLD_NAMES = frozenset({"streaks", "streaks_updated", "sqlite_autoindex_streaks_1"})


class NotAStoreError(StoreError):
    """The path is not a loop-brake store; it was left exactly as it was."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"state store {path} {why}; it was left untouched (choose another --state, "
            "or delete it if it is a broken loop-brake store)"
        )


class StoreFile:
    """What ``inspect`` found: ``kind`` is missing, empty, ours or old (an older
    loop-brake's store, unmarked); ``identity`` the (device, inode) checked; ``wal``
    whether its header says WAL mode. (A plain class: a dataclass costs the hook
    a millisecond of start-up.)"""

    __slots__ = ("path", "kind", "identity", "wal")

    def __init__(
        self, path: str, kind: str, identity: tuple[int, int] | None = None, wal: bool = False
    ) -> None:
        self.path = path
        self.kind = kind
        self.identity = identity
        self.wal = wal

    def same_file(self) -> bool:
        """The path still names the file that was checked."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.identity

    def connect(self, write: bool, timeout: float) -> sqlite3.Connection | None:
        """Let SQLite open the path (read-only unless ``write``) and check it opened
        the file inspected: None if the path names another file by now (another hook
        moved a corrupt store aside: inspect again); NotAStoreError if the file lost
        or changed its mark."""
        conn = sqlite3.connect(
            self.path if write else uri(self.path, "mode=ro"),
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=not write,
        )
        try:
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
            if self.same_file():
                if app_id != APPLICATION_ID and (self.kind == "ours" or app_id != 0):
                    raise NotAStoreError(self.path, "changed while it was being opened")
                return conn
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None

    def move_aside(self) -> str | None:
        """Rename the checked file (a store with our mark that SQLite found corrupt) and
        its ``-wal``/``-shm`` to ``<path>.corrupt-<time>-<pid>``; returns that name, or
        None if the path names another file by now (another hook moved it first)."""
        if self.kind != "ours" or not self.same_file():
            return None
        aside = f"{self.path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return None
        for suffix in ("-wal", "-shm"):
            try:
                os.replace(self.path + suffix, aside + suffix)
            except FileNotFoundError:
                pass
        return aside


def default_state_path(env: Mapping[str, str] | None = None) -> str:
    """``$LOOP_BRAKE_STATE``, else ``${XDG_STATE_HOME:-~/.local/state}/loop-brake/state.db``."""
    environ = os.environ if env is None else env
    explicit = environ.get(ENV_STATE)
    if explicit:
        return explicit
    base = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "loop-brake", "state.db")


def layout(conn: sqlite3.Connection) -> str:
    """``empty`` (no schema), ``old`` (only an older loop-brake's table), or ``foreign``."""
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    if not names:
        return "empty"
    if "streaks" in names and names <= _OLD_NAMES:
        columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(streaks)"))
        if columns in (_V2_COLUMNS, _V1_COLUMNS):
            return "old"
    return "foreign"


def claim(conn: sqlite3.Connection, found: StoreFile, schema: tuple[str, ...]) -> None:
    """In the hook's write transaction: an empty store gets ``schema`` (which marks
    it), an older loop-brake's store the mark; anything else found by now is refused."""
    if found.kind == "ours":
        return
    (app_id,) = conn.execute("PRAGMA application_id").fetchone()
    if app_id == APPLICATION_ID:
        return  # another hook process marked it first
    now = layout(conn)
    if now == "empty" and found.kind == "empty":
        for statement in schema:
            conn.execute(statement)
    elif now == "old":
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    else:
        raise NotAStoreError(found.path, "is an SQLite database that loop-brake did not write")


def uri(path: str, query: str) -> str:
    """An SQLite ``file:`` URI for ``path`` (absolute; ``%``, ``?`` and ``#`` escaped)."""
    quoted = os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file://{quoted}?{query}"


def _old_store_on_disk(path: str) -> bool:
    """An unmarked SQLite file holding only an older loop-brake's table? Read through
    an immutable connection: no lock, no ``-wal``/``-shm``, nothing written."""
    try:
        probe = sqlite3.connect(uri(path, "mode=ro&immutable=1"), uri=True)
    except sqlite3.Error:
        return False
    try:
        return layout(probe) == "old"
    except sqlite3.Error:
        return False
    finally:
        probe.close()


def _classify(path: str, header: bytes) -> str:
    if not header:
        return "empty"
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise NotAStoreError(path, "is not an SQLite file")
    app_id = int.from_bytes(header[68:72], "big")
    if app_id == APPLICATION_ID:
        return "ours"
    if app_id != 0:
        raise NotAStoreError(
            path, f"is the SQLite database of another application (application_id {app_id:#x})"
        )
    if _old_store_on_disk(path):
        return "old"
    raise NotAStoreError(path, "is an SQLite database that loop-brake did not write")


def _refuse_link(path: str) -> None:
    """After a failed open: NotAStoreError if the path is a link (``O_NOFOLLOW``'s
    ELOOP, even for a dangling one) or not a regular file; else the caller re-raises."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        raise NotAStoreError(path, "is a symbolic link") from None
    if not stat.S_ISREG(mode):
        raise NotAStoreError(path, "is not a regular file") from None


def inspect(path: str, *, create: bool, write: bool) -> StoreFile:
    """Open ``path`` without following a link (creating it 0600 if ``create``) and
    decide whether it is ours; raises NotAStoreError, or OSError if it cannot be opened."""
    if create:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, mode=0o700, exist_ok=True)
    flags = os.O_RDWR if write else os.O_RDONLY
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK
    if create:
        flags |= os.O_CREAT
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        if create:
            raise
        return StoreFile(path, "missing")
    except OSError:
        _refuse_link(path)
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotAStoreError(path, "is not a regular file")
        header = os.pread(fd, 100, 0)
    finally:
        os.close(fd)
    for suffix in _SIDECARS:
        try:
            if stat.S_ISLNK(os.lstat(path + suffix).st_mode):
                raise NotAStoreError(path, f"has a symbolic link beside it ({path + suffix})")
        except FileNotFoundError:
            pass
    kind = _classify(path, header)
    wal = len(header) > 18 and header[18] == 2
    return StoreFile(path, kind, (st.st_dev, st.st_ino), wal)
