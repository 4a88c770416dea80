"""`loop-brake state list|reset` on files that are not a store, or not all readable.

Issue 10, items 1 and 2, for the state commands: ``state list`` (read-only)
used to rename a user's text file to ``<file>.corrupt-...``, ``state reset``
deleted the rows of another application's ``streaks`` table, and a row whose
columns hold the wrong SQLite types was a traceback. Now a path that is not a
store (a link, not SQLite, a database without loop-brake's mark) is one line
and exit 2 (a bad ``--state``), the file untouched; a corrupt store is one line
and exit 3, never moved by these commands; rows that cannot be shown are
skipped with a count (exit 3) and the others listed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli
from hook_helpers import assert_allowed, claude_input, hook


def _one_line(result, status: int, expected: str) -> str:
    assert result.returncode == status, result.stderr
    text = result.stderr.decode()
    assert text.count("\n") == 1 and "Traceback" not in text, text
    assert expected in text, text
    return text


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["reset", "--all"]])
def test_a_text_file_is_not_a_store_and_is_left_alone(tmp_path: Path, command) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: eggs, milk\n")
    result = run_cli("state", *command, "--state", str(notes))
    _one_line(result, 2, "is not an SQLite file")
    assert result.stdout == b""
    assert _files(tmp_path) == {"notes.txt": b"shopping: eggs, milk\n"}


def test_reset_never_deletes_another_applications_streaks(tmp_path: Path) -> None:
    other = tmp_path / "game.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE streaks (player TEXT, days INTEGER)")
        conn.execute("INSERT INTO streaks VALUES ('ann', 12), ('bob', 3)")
    conn.close()
    before = _files(tmp_path)
    for command in (["reset", "--all"], ["reset", "--session", "ann"], ["list"]):
        result = run_cli("state", *command, "--state", str(other))
        _one_line(result, 2, "SQLite database that loop-brake did not write")
    assert _files(tmp_path) == before
    with sqlite3.connect(other) as conn:
        assert conn.execute("SELECT count(*) FROM streaks").fetchone() == (2,)
    conn.close()


def test_a_link_is_refused_even_to_a_real_store(tmp_path: Path) -> None:
    real = tmp_path / "real.db"
    assert_allowed(hook(real, claude_input(1)))
    link = tmp_path / "link.db"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.db"
    dangling.symlink_to(tmp_path / "nowhere.db")
    for path in (link, dangling):
        for command in (["list"], ["reset", "--all"]):
            _one_line(run_cli("state", *command, "--state", str(path)), 2, "symbolic link")
    assert not (tmp_path / "nowhere.db").exists()
    listing = run_cli("state", "list", "--json", "--state", str(real))
    assert json.loads(listing.stdout)["sessionId"] == "sess-1"  # reset did not reach it


def test_list_never_moves_a_corrupt_store_aside(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    assert_allowed(hook(state, claude_input(1)))
    with sqlite3.connect(state) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(state.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)
    state.write_bytes(bytes(data))
    _one_line(run_cli("state", "list", "--state", str(state)), 3, "malformed")
    assert state.read_bytes() == bytes(data)
    assert not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]


def test_list_of_an_empty_file_writes_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    state.touch()
    result = run_cli("state", "list", "--state", str(state))
    assert result.returncode == 0 and b"no sessions" in result.stderr
    assert _files(tmp_path) == {"state.db": b""}


def _store_with_bad_rows(tmp_path: Path) -> Path:
    state = tmp_path / "state.db"
    assert_allowed(hook(state, claude_input(1, session="good")))
    with sqlite3.connect(state) as conn:
        conn.executemany(
            "INSERT INTO streaks VALUES (?, ?, ?, ?, ?, ?)",
            [
                ("text-digest", "0123456789abcdef", 2, None, "Bash", 1e12),
                ("text-count", b"\x01" * 32, "three", None, "Bash", 1e12),
                ("text-updated", b"\x01" * 32, 2, None, "Bash", "yesterday"),
                (b"blob-session", b"\x01" * 32, 2, None, "Bash", 1e12),
                ("blob-tool", b"\x01" * 32, 2, '"t1"', b"Bash", 1e12),
                ("short-digest", b"\x01" * 31, 2, None, "Bash", 1e12),  # not a sha256
            ],
        )
    conn.close()
    return state


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_rows_of_the_wrong_types_are_skipped_with_a_count(tmp_path: Path, as_json) -> None:
    state = _store_with_bad_rows(tmp_path)
    result = run_cli("state", "list", "--state", str(state), *(["--json"] if as_json else []))
    _one_line(result, 3, "skipped 6 row(s)")
    lines = result.stdout.decode().splitlines()
    if as_json:
        assert [json.loads(line)["sessionId"] for line in lines] == ["good"]
    else:
        assert [line.split()[0] for line in lines] == ["SESSION", "good"]
    only = run_cli("state", "list", "--state", str(state), "--session", "text-count")
    _one_line(only, 3, "skipped 1 row(s)")
