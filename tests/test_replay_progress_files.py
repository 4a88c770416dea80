"""replay's progress bar for many small files: shown on a terminal from
PROGRESS_MIN_FILES files (a directory of thousands of small sessions takes seconds),
never when stderr is not a terminal, and never changing what stdout says."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_replay import CANARY, LOOP_LINES, replay

from loop_brake_cli.commands import _replay_pool as pool


def small_files(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    paths = []
    for index in range(count):
        path = folder / f"s{index:04}.jsonl"
        path.write_text(LOOP_LINES[0] + "\n")
        paths.append(str(path))
    return paths


def test_many_small_files_get_a_bar_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = small_files(tmp_path / "d", pool.PROGRESS_MIN_FILES)
    assert sum(Path(p).stat().st_size for p in files) < pool.PROGRESS_MIN_BYTES
    monkeypatch.setattr(pool, "stderr_is_terminal", lambda: True)
    bar = pool.progress_bar(files)
    assert bar is not None
    bar.stop()
    assert pool.progress_bar(files[:-1]) is None  # fewer files, few bytes: no bar


def test_no_bar_off_a_terminal_however_many_files(tmp_path: Path) -> None:
    files = small_files(tmp_path / "d", pool.PROGRESS_MIN_FILES + 5)
    assert not pool.stderr_is_terminal()  # pytest captures stderr
    assert pool.progress_bar(files) is None


def test_many_files_replay_says_the_same_with_the_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_files(tmp_path / "d", pool.PROGRESS_MIN_FILES)
    plain = replay(str(tmp_path / "d"))
    monkeypatch.setattr(pool, "stderr_is_terminal", lambda: True)
    with_bar = replay(str(tmp_path / "d"))
    assert with_bar.stdout == plain.stdout and with_bar.status == plain.status
    assert CANARY not in with_bar.stdout + with_bar.stderr  # the args never show
