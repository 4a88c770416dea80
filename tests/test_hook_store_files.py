"""`loop-brake hook` never writes through a link nor into a file that is not its store.

Issue 10, item 1, for the hook: the store used to follow a symbolic link into
another application's SQLite file and add its table there, create a file at a
dangling link's target, and rename any unreadable file. Now a link, a file
that is not SQLite, and a database without loop-brake's mark (``PRAGMA
application_id``) are refused byte for byte untouched (a brake failure: the
call is allowed with one stderr line, or denied with --fail-closed); a new
store is created 0600 in a directory created 0700; only a store that carries
the mark is moved aside when corrupt; a store of the previous version is
marked and keeps counting; a row whose columns hold the wrong types starts
afresh instead of failing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from hook_helpers import (
    assert_allowed,
    assert_allowed_with_warning,
    claude_input,
    hook,
)

APPLICATION_ID = 0x4C42524B


def _snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry of a directory: a file's bytes, a link's target."""
    entries: dict[str, bytes | str] = {}
    for entry in sorted(directory.iterdir()):
        if entry.is_symlink():
            entries[entry.name] = "-> " + os.readlink(entry)
        elif entry.is_file():
            entries[entry.name] = entry.read_bytes()
    return entries


def _foreign_database(path: Path, application_id: int = 0) -> None:
    """Another application's database, with a `streaks` table of its own."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE streaks (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO streaks (name) VALUES ('mine')")
        if application_id:
            conn.execute(f"PRAGMA application_id = {application_id}")
    conn.close()


def _refused(result, expected: str) -> str:
    text = assert_allowed_with_warning(result)
    assert expected in text and "left untouched" in text, text
    return text


def _denied_closed(result) -> None:
    assert result.returncode == 0
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert result.stderr.decode().count("\n") == 1


def test_a_link_to_another_database_is_refused_and_the_database_untouched(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other-app.db"
    _foreign_database(other)
    link = tmp_path / "state.db"
    link.symlink_to(other)
    before = _snapshot(tmp_path)
    _refused(hook(link, claude_input(1)), "is a symbolic link")
    _denied_closed(hook(link, claude_input(1), "--fail-closed"))
    assert _snapshot(tmp_path) == before  # no table added, no -wal/-shm/-journal made


def test_a_link_to_our_own_store_is_refused_too(tmp_path: Path) -> None:
    real = tmp_path / "real.db"
    assert_allowed(hook(real, claude_input(1)))
    link = tmp_path / "link.db"
    link.symlink_to(real)
    before = _snapshot(tmp_path)
    _refused(hook(link, claude_input(2)), "is a symbolic link")
    assert _snapshot(tmp_path) == before


def test_a_dangling_link_creates_nothing_at_its_target(tmp_path: Path) -> None:
    link = tmp_path / "state.db"
    link.symlink_to(tmp_path / "elsewhere" / "target.db")
    (tmp_path / "elsewhere").mkdir()
    _refused(hook(link, claude_input(1)), "is a symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_file_that_is_not_sqlite_is_never_renamed_or_changed(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes, not a database\n" * 200)
    before = _snapshot(tmp_path)
    _refused(hook(notes, claude_input(1)), "is not an SQLite file")
    _denied_closed(hook(notes, claude_input(1), "--fail-closed"))
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("application_id", [0, 0x12345678], ids=["unmarked", "other-app"])
def test_another_applications_database_is_never_written(
    tmp_path: Path, application_id: int
) -> None:
    other = tmp_path / "app.db"
    _foreign_database(other, application_id)
    before = _snapshot(tmp_path)
    text = _refused(hook(other, claude_input(1)), "SQLite database")
    assert ("0x12345678" in text) == bool(application_id)
    assert _snapshot(tmp_path) == before


def test_a_directory_or_a_linked_wal_file_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "dir.db"
    directory.mkdir()
    _refused(hook(directory, claude_input(1)), "is not a regular file")
    state = tmp_path / "state.db"
    assert_allowed(hook(state, claude_input(1)))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    for linked in ("-wal", "-shm", "-journal"):  # each sidecar SQLite may write through
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{state}{suffix}").unlink(missing_ok=True)
        Path(f"{state}{linked}").symlink_to(victim)
        _refused(hook(state, claude_input(2)), f"symbolic link beside it ({state}{linked})")
        assert victim.read_bytes() == b"keep me"


def test_a_new_store_is_marked_private_and_in_a_private_directory(tmp_path: Path) -> None:
    state = tmp_path / "new" / "dir" / "state.db"
    old_umask = os.umask(0o022)
    try:
        assert_allowed(hook(state, claude_input(1)))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    for sidecar in state.parent.glob("state.db-*"):
        assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    # the mark is in the file itself, not only in the WAL: read from its first 100 bytes
    header = state.read_bytes()[:100]
    assert header.startswith(b"SQLite format 3\x00")
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(header[60:64], "big") == 2  # the layout version
    with sqlite3.connect(state) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_an_empty_file_becomes_the_store(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    state.touch()
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    assert json.loads(hook(state, claude_input(3)).stdout)


def test_only_a_marked_store_is_moved_aside_when_corrupt(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    assert_allowed(hook(state, claude_input(1)))
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(state.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)  # the header (and its mark) kept
    state.write_bytes(bytes(data))
    text = assert_allowed_with_warning(hook(state, claude_input(2)))
    assert "moved it to" in text
    assert [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    # the same bytes with the mark wiped: not ours, so left where it is
    unmarked = tmp_path / "unmarked.db"
    data[68:72] = b"\0\0\0\0"
    unmarked.write_bytes(bytes(data))
    _refused(hook(unmarked, claude_input(1)), "SQLite database")
    assert unmarked.read_bytes() == bytes(data)


def test_a_store_of_the_previous_version_is_marked_and_keeps_counting(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    with sqlite3.connect(state) as conn:  # what the previous version wrote: no mark
        conn.execute(
            "CREATE TABLE streaks (session TEXT PRIMARY KEY, digest BLOB NOT NULL,"
            " count INTEGER NOT NULL, call_id_json TEXT, tool TEXT NOT NULL,"
            " updated REAL NOT NULL)"
        )
        conn.execute("CREATE INDEX streaks_updated ON streaks (updated)")
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    assert_allowed(hook(state, claude_input(1)))
    assert_allowed(hook(state, claude_input(2)))
    assert json.loads(hook(state, claude_input(3)).stdout)
    with sqlite3.connect(state) as conn:
        assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert conn.execute("SELECT count FROM streaks").fetchall() == [(3,)]
    conn.close()


def test_an_old_store_table_beside_another_table_is_not_ours(tmp_path: Path) -> None:
    """Only a database holding the previous version's table and nothing else is an old
    store: the same table beside a table of someone else's is refused, untouched."""
    state = tmp_path / "state.db"
    with sqlite3.connect(state) as conn:
        conn.execute(
            "CREATE TABLE streaks (session TEXT PRIMARY KEY, digest BLOB NOT NULL,"
            " count INTEGER NOT NULL, call_id_json TEXT, tool TEXT NOT NULL,"
            " updated REAL NOT NULL)"
        )
        conn.execute("CREATE TABLE invoices (number INTEGER)")
    conn.close()
    before = _snapshot(tmp_path)
    _refused(hook(state, claude_input(1)), "SQLite database that loop-brake did not write")
    assert _snapshot(tmp_path) == before


def test_a_row_with_wrong_column_types_starts_afresh(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    assert_allowed(hook(state, claude_input(1, session="other")))
    with sqlite3.connect(state) as conn:
        conn.execute(
            "INSERT INTO streaks VALUES ('sess-1', 'not a digest', 'two', 7, 'Bash', 'now')"
        )
    conn.close()
    result = hook(state, claude_input(1))
    assert_allowed(result)
    assert result.stderr == b""
    with sqlite3.connect(state) as conn:
        row = conn.execute("SELECT count, typeof(digest) FROM streaks WHERE session = 'sess-1'")
        assert row.fetchall() == [(1, "blob")]
    conn.close()
