"""Acceptance 5: live use. Each verdict arrives before the next line is written.

A real `loop-brake filter` reads a pipe that the test writes one line at a time;
after each line the test waits (with a timeout) for that line's verdict before
writing the next, as `tail -f agent.log | loop-brake filter` would need.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time

from conftest import ROOT, cli_env, spawn_cli

TIMEOUT = 120.0  # a hang guard: a verdict held back until EOF never comes


def _read_line(proc: subprocess.Popen[bytes], selector: selectors.BaseSelector) -> bytes:
    deadline = time.monotonic() + TIMEOUT
    buffer = b""
    while not buffer.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no verdict within {TIMEOUT}s (got {buffer!r})"
        if selector.select(remaining):
            chunk = proc.stdout.read(4096)  # type: ignore[union-attr]  # unbuffered: what is there
            assert chunk, "filter exited early"
            buffer += chunk
    return buffer


def test_each_verdict_arrives_before_the_next_line_is_written() -> None:
    proc = spawn_cli("filter", "-m", "3", bufsize=0)
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    events = [
        (b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}', "pass", 1),
        (b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}', "pass", 2),
        (b"not json at all", "error", None),
        (b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}', "deny", 3),
        (b'{"tool":"search","args":{"q":"weather"},"sessionId":"s2"}', "pass", 1),
        (b'{"tool":"read_file","args":{"path":"x"},"sessionId":"s1"}', "pass", 1),
    ]
    try:
        for number, (line, verdict, count) in enumerate(events, start=1):
            proc.stdin.write(line + b"\n")  # type: ignore[union-attr]
            row = json.loads(_read_line(proc, selector))
            assert row["line"] == number
            assert row["verdict"] == verdict
            assert row.get("count") == count
        # Half a line: nothing yet; the rest: its verdict.
        proc.stdin.write(b'{"tool":"search",')  # type: ignore[union-attr]
        assert not selector.select(0.3)
        proc.stdin.write(b'"sessionId":"s3"}\r\n')  # type: ignore[union-attr]
        row = json.loads(_read_line(proc, selector))
        assert (row["line"], row["sessionId"], row["verdict"]) == (7, "s3", "pass")
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=TIMEOUT) == 0
        assert proc.stderr.read() == b""  # type: ignore[union-attr]
    finally:
        selector.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


WRITE_COUNTER = """
import io, sys
from loop_brake_cli.cli import main

class Counting(io.BufferedWriter):
    writes = 0

    def write(self, data):
        Counting.writes += 1
        return super().write(data)

sys.stdout = io.TextIOWrapper(Counting(io.FileIO(1, "w", closefd=False)))
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stderr.write(f"writes={Counting.writes}\\n")
sys.exit(code)
"""


def test_bulk_input_is_not_flushed_line_by_line(tmp_path) -> None:
    """Throughput: 20 000 lines read in bulk leave in a few large writes, not 20 000."""
    path = tmp_path / "bulk.jsonl"
    line = b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}\n'
    path.write_bytes(line * 20_000)
    result = subprocess.run(
        [sys.executable, "-c", WRITE_COUNTER, "filter", str(path)],
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b"\n") == 20_000
    writes = int(result.stderr.decode().rsplit("writes=", 1)[1])
    assert 1 <= writes <= 500, writes
