"""replay_files reports how far it has read (the progress bar's feed): every 1,024 records
and once at the end of each file, with the same results as a run that asks for nothing."""

from __future__ import annotations

import json

from loop_brake_cli.analysis import replay_files, report_to_json


def _transcript(path, calls: int) -> int:
    with open(path, "w") as f:
        for i in range(calls):
            block = {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"n": i % 5}}
            line = {"type": "assistant", "sessionId": "s", "uuid": f"u{i}"}
            f.write(json.dumps({**line, "message": {"content": [block]}}) + "\n")
    return path.stat().st_size


def _replay(path, on_progress=None):
    return replay_files(
        [str(path)],
        max_repeats=3,
        max_repeats_source="test",
        cap=3,
        format_name="claude-code",
        max_line_bytes=1 << 20,
        on_progress=on_progress,
    )


def test_progress_is_reported_as_the_file_is_read(tmp_path):
    path = tmp_path / "t.jsonl"
    size = _transcript(path, 3000)
    seen: list[int] = []
    report = _replay(path, seen.append)
    assert len(seen) == 3  # after records 1,024 and 2,048, then the whole file
    assert seen[0] < seen[1] < seen[2] == size
    assert report_to_json(report) == report_to_json(_replay(path))
