"""discover.py: which files a directory replay picks up, in which order."""

from __future__ import annotations

from pathlib import Path

from loop_brake_cli.analysis.discover import discover, known_patterns


def test_directories_are_searched_recursively_in_sorted_order(tmp_path: Path) -> None:
    for name in ["b.jsonl", "a/z.json", "a/y.JSONL.gz", "c.traj", "n.txt", ".git/x.jsonl"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    found = [Path(f.path).relative_to(tmp_path).as_posix() for f in discover([str(tmp_path)])]
    assert found == ["a/y.JSONL.gz", "a/z.json", "b.jsonl", "c.traj"]


def test_named_files_and_stdin_are_taken_as_given(tmp_path: Path) -> None:
    odd = tmp_path / "transcript.txt"
    odd.write_text("{}\n")
    found = list(discover([str(odd), "-", str(tmp_path / "missing.jsonl")]))
    assert [f.path for f in found] == [str(odd), "-", str(tmp_path / "missing.jsonl")]
    assert all(f.error is None for f in found)


def test_an_empty_directory_is_reported(tmp_path: Path) -> None:
    (found,) = discover([str(tmp_path)])
    assert found.error is not None and found.error.startswith("no transcript files found")


def test_every_registered_pattern_is_searched() -> None:
    patterns = known_patterns()
    assert "*.jsonl" in patterns and "*.json" in patterns
    assert len(patterns) == len(set(patterns))
