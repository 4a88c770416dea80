"""``filter`` without ``--format`` reads a transcript or headless stream as replay does.

Issue 40: a Claude Code transcript piped into ``filter`` gave an error line per input
line and exit 0. Now the first line decides: a tool-call event is read as events,
byte for byte as before (and by the fast path); anything that looks like a known
format is read in that format, exactly as ``replay --verdicts`` reads it, and said
once on stderr. ``--format events`` keeps the seed's reading.
"""

from __future__ import annotations

import json
import select
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, spawn_cli

SAMPLES = ROOT / "samples" / "formats"
CANARY = "canary-detect-7f3a"
STREAMS = ["claude-code.jsonl", "claude-stream.jsonl", "codex-exec.jsonl", "gemini-stream.jsonl"]
STREAMS += ["opencode-run.jsonl", "codex.jsonl", "mcp.jsonl"]


def _note(name: str, source: str = "<stdin>") -> bytes:
    return (
        f"loop-brake filter: {source}: detected as {name}, not tool-call events: read as "
        "replay reads it (--format events: as events)\n"
    ).encode()


@pytest.mark.parametrize("sample", STREAMS)
def test_a_piped_transcript_is_read_as_replay_reads_it(sample: str) -> None:
    path = SAMPLES / sample
    piped = run_cli("filter", input=path.read_bytes())
    replayed = run_cli("replay", "--verdicts", str(path))
    assert piped.returncode == 0 and replayed.returncode == 0
    assert piped.stdout == replayed.stdout
    assert b'"verdict":"error"' not in piped.stdout
    name = json.loads(run_cli("replay", "--json", str(path)).stdout)["files"][0]["format"]
    assert piped.stderr == _note(name)


def test_named_files_are_each_detected_and_said_once(tmp_path: Path) -> None:
    claude, events = SAMPLES / "claude-code.jsonl", ROOT / "samples" / "stuck-agent.jsonl"
    done = run_cli("filter", str(claude), str(events), str(claude))
    assert done.returncode == 0
    assert done.stderr == _note("claude-code", str(claude)) * 2
    assert b'"verdict":"error"' not in done.stdout


def test_event_input_is_read_exactly_as_before() -> None:
    """The default and ``--format events`` give the same bytes for event lines, with
    nothing on stderr (baseline.sh checks every sample against the seed's output)."""
    for sample in (ROOT / "samples" / "stuck-agent.jsonl", SAMPLES / "events.jsonl"):
        default = run_cli("filter", "--summary", str(sample))
        forced = run_cli("filter", "--summary", "--format", "events", str(sample))
        assert (default.returncode, default.stdout, default.stderr) == (
            forced.returncode,
            forced.stdout,
            forced.stderr,
        )
        assert b"detected" not in default.stderr


def test_format_events_keeps_the_seeds_reading() -> None:
    data = (SAMPLES / "claude-code.jsonl").read_bytes()
    done = run_cli("filter", "--format", "events", input=data)
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(data.splitlines()) and all(
        line["verdict"] == "error" for line in lines
    )
    assert b"looks like a claude-code transcript, not tool-call events" in done.stderr
    assert run_cli("filter", "--format", "events", "--strict", input=data).returncode == 3


def test_a_detected_input_is_not_unreadable_for_strict() -> None:
    data = (SAMPLES / "claude-code.jsonl").read_bytes()
    assert run_cli("filter", "--strict", input=data).returncode == 0


def test_input_of_no_known_format_is_read_as_events_as_before() -> None:
    data = b"hello\nworld\n"
    default = run_cli("filter", input=data)
    forced = run_cli("filter", "--format", "events", input=data)
    assert (default.returncode, default.stdout, default.stderr) == (
        forced.returncode,
        forced.stdout,
        forced.stderr,
    )
    assert b"not a format loop-brake knows" in default.stderr


def test_arguments_never_appear_in_a_detected_reading() -> None:
    lines = []
    for number in range(3):
        lines.append(
            {
                "type": "assistant",
                "sessionId": "s-canary",
                "uuid": f"u{number}",
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{number}",
                            "name": "Bash",
                            "input": {"command": f"cat {CANARY}"},
                        }
                    ],
                },
            }
        )
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    done = run_cli("filter", "--summary", input=data)
    assert done.returncode == 0, done.stderr
    assert b"detected as claude-code" in done.stderr
    assert [json.loads(x)["verdict"] for x in done.stdout.splitlines()] == ["pass", "pass", "deny"]
    assert CANARY.encode() not in done.stdout + done.stderr


def test_a_live_stream_is_judged_as_it_comes() -> None:
    """A headless stream piped while the agent runs: the first call's verdict comes
    before the input ends (detection waits for the first complete line only)."""
    lines = (SAMPLES / "claude-stream.jsonl").read_bytes().splitlines(keepends=True)
    proc = spawn_cli("filter")
    try:
        first_call = next(i for i, line in enumerate(lines) if b'"tool_use"' in line)
        proc.stdin.write(b"".join(lines[: first_call + 1]))  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # only turns a hang into a failure
        assert ready, "no verdict while the stream is still open"
        verdict = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        assert verdict["verdict"] == "pass" and verdict["line"] == first_call + 1
        proc.stdin.write(b"".join(lines[first_call + 1 :]))  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=120) == 0
        assert proc.stderr.read() == _note("claude-stream")  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
