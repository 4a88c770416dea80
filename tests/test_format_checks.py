"""Never silently wrong: an input read as a format it is not in is said, once, and counted.

Real transcripts from tests/fixtures are forced into every other format (filter
and replay), piped into ``filter`` with its default format (whole, and live,
line by line), and replayed with ``--fail-on-deny``/``--expect-deny`` when
nothing was read. Subprocesses for exit statuses and pipes; CliRunner for the
matrix.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli, spawn_cli

from loop_brake_cli.cli import cli
from loop_brake_cli.formats import names
from loop_brake_cli.readers.reader import Source

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = {
    "claude-code": FIXTURES / "claude-code" / "real--fasthooks-main-transcript.jsonl",
    "codex": FIXTURES / "codex" / "real--codemie-rollout-019b7f94-shell.jsonl",
    "openhands": FIXTURES / "openhands" / "OpenHands__tests-runtime-trajs__basic.json",
    "gemini-cli": next((FIXTURES / "gemini-cli").glob("*2025-12-01T21-45*.json")),
    "swe-agent": next((FIXTURES / "swe-agent").glob("SWE-agent__*pydicom*.traj")),
    "mcp": FIXTURES / "mcp" / "real--goose-uvxmcp-server-fetch.stdio.log",
    "anthropic": next((FIXTURES / "anthropic").glob("DERIVED__*.json")),
}
CLAUDE = REAL["claude-code"]


def ours(stderr: str) -> list[str]:
    """The lines of stderr that say an input is not in the format read."""
    return [
        line for line in stderr.splitlines() if "looks like" in line or "no tool call read" in line
    ]


def invoke(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli,
        list(args),
        input=input,
        env={"DSH_LOOP_BRAKE_MAX_REPEATS": None},
        standalone_mode=False,
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return int(result.return_value or 0), result.stdout, result.stderr


# ---------------------------------------------------------------- the cases


def test_filter_strict_with_the_wrong_format_names_the_right_one_and_exits_3() -> None:
    done = run_cli("filter", "--strict", "--format", "codex", str(CLAUDE))
    assert done.returncode == 3
    assert done.stdout == b""
    assert done.stderr.decode() == (
        f"loop-brake filter: {CLAUDE}: looks like a claude-code transcript, not codex; "
        "use --format claude-code\n"
    )
    # without --strict: said all the same, and the exit status is that of the lines (none)
    assert run_cli("filter", "--format", "codex", str(CLAUDE)).returncode == 0


def test_replay_with_the_wrong_format_is_unreadable_and_said_once() -> None:
    done = run_cli("replay", "--format", "openhands", str(CLAUDE))
    assert done.returncode == 3
    err = done.stderr.decode()
    assert err == (
        f"loop-brake replay: {CLAUDE}: looks like a claude-code transcript, not openhands; "
        "use --format claude-code\n"
    )  # once, and not one error per line of a file read as what it is not
    assert b"1 unreadable" in done.stdout and b"0 tool calls" in done.stdout
    assert b"does not catch" not in done.stdout  # nothing to say about calls never read


def test_replay_fail_on_deny_warns_and_expect_deny_fails_when_nothing_was_read(
    tmp_path: Path,
) -> None:
    sidechain = FIXTURES / "claude-code" / "real--fasthooks-agent-sidechain.jsonl"  # 0 calls
    healthy = run_cli("replay", "--fail-on-deny", str(sidechain))
    assert healthy.returncode == 0
    assert b"--fail-on-deny: no tool call was read, so nothing was checked" in healthy.stderr
    stuck = run_cli("replay", "--expect-deny", str(sidechain))
    assert stuck.returncode == 1
    assert b"--expect-deny: no tool call was read, so none could be denied" in stuck.stderr
    forced = run_cli("replay", "--fail-on-deny", "--format", "openhands", str(CLAUDE))
    assert forced.returncode == 3  # not a pass on nothing
    assert b"nothing was checked" in forced.stderr


def test_a_claude_code_transcript_forced_into_events_gets_one_hint() -> None:
    """``--format events``: the seed's reading, one hint (without --format, filter reads
    it as claude-code: tests/test_filter_detect.py)."""
    done = run_cli("filter", "--format", "events", input=CLAUDE.read_bytes())
    lines = CLAUDE.read_bytes().count(b"\n")
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == lines and {v["verdict"] for v in verdicts} == {"error"}
    assert done.stderr.decode() == (
        "loop-brake filter: <stdin>: looks like a claude-code transcript, not tool-call "
        "events; use --format claude-code\n"
    )
    forced_strict = run_cli("filter", "--format", "events", "--strict", input=CLAUDE.read_bytes())
    assert forced_strict.returncode == 3
    right = run_cli("filter", "--format", "claude-code", input=CLAUDE.read_bytes())
    assert right.returncode == 0 and right.stderr == b"" and right.stdout.count(b"\n") == 10


def _read_until(proc: subprocess.Popen[bytes], stream: str, needle: bytes) -> bytes:
    selector = selectors.DefaultSelector()
    selector.register(getattr(proc, stream), selectors.EVENT_READ)
    deadline = time.monotonic() + 120  # a hang guard
    got = b""
    while needle not in got:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{stream}: {needle!r} not seen within 120s (got {got!r})"
        if selector.select(remaining):
            chunk = os.read(getattr(proc, stream).fileno(), 65536)
            assert chunk, f"{stream} closed early"
            got += chunk
    return got


def test_live_stream_is_decided_from_its_first_line_and_keeps_going() -> None:
    """``tail -f`` of a Claude Code transcript read as events: the hint and the first
    verdict come after the first line alone (the reader waits for no 64 KiB head), and
    the run goes on."""
    first, second, *_ = CLAUDE.read_bytes().splitlines(keepends=True)
    proc = spawn_cli("filter", "--format", "events", bufsize=0)
    try:
        proc.stdin.write(first)  # type: ignore[union-attr]
        err = _read_until(proc, "stderr", b"\n")
        assert b"looks like a claude-code transcript, not tool-call events" in err
        assert b'"line":1' in _read_until(proc, "stdout", b"\n")
        proc.stdin.write(second)  # type: ignore[union-attr]
        assert b'"line":2' in _read_until(proc, "stdout", b"\n")
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=120) == 0
        assert proc.stderr.read() == b""  # type: ignore[union-attr]  # said once
    finally:
        proc.kill()
        proc.wait()


def test_peek_on_a_pipe_takes_the_first_complete_line_without_waiting() -> None:
    from loop_brake_cli.formats._detect import peek

    read_end, write_end = os.pipe()
    os.write(write_end, b'\n{"tool":"a"}\n{"tool":')
    with os.fdopen(read_end, "rb") as stream:
        source = Source(stream, "<stdin>")
        assert peek(source) == b'\n{"tool":"a"}\n'  # whole lines only; nothing more asked for
        os.write(write_end, b'"b"}\n')
        os.close(write_end)
        assert [line for _, line in source.lines()] == [b'{"tool":"a"}', b'{"tool":"b"}']


# ---------------------------------------------------------------- every pair, both commands


@pytest.mark.parametrize("right", sorted(REAL))
def test_every_wrong_format_is_said_once_or_reads_calls(right: str) -> None:
    """No real transcript, forced into any other format, gives a silent empty run."""
    path = str(REAL[right])
    for wrong in names():
        if wrong == right:
            continue
        status, out, err = invoke("filter", "--strict", "--format", wrong, path)
        calls = sum(1 for line in out.splitlines() if '"verdict":"error"' not in line)
        said = ours(err)
        assert len(said) <= 1, (wrong, err)
        if not calls:
            assert said and status == 3, f"--format {wrong} on a {right} file: silent"
        if said:
            assert status == 3 and f"--format {right}" in said[0], (wrong, said)


@pytest.mark.parametrize("right", sorted(REAL))
def test_the_right_format_is_never_flagged(right: str) -> None:
    status, _, err = invoke("filter", "--strict", "--format", right, str(REAL[right]))
    assert (status, ours(err)) == (0, [])
    status, out, err = invoke("replay", "--json", "--format", right, str(REAL[right]))
    assert (status, ours(err)) == (0, []), err


def test_a_transcript_without_tool_calls_read_as_its_own_format_is_fine() -> None:
    sidechain = FIXTURES / "claude-code" / "real--fasthooks-agent-sidechain.jsonl"
    status, out, err = invoke("filter", "--strict", "--format", "claude-code", str(sidechain))
    assert (status, out, err) == (0, "", "")


def test_content_no_format_reads_is_said_after_the_run(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": "world"}\n{"hello": "again"}\n')
    status, out, err = invoke("filter", "--strict", str(notes))
    assert status == 3 and out.count('"verdict":"error"') == 2
    assert ours(err) == [
        f"loop-brake filter: {notes}: no tool call read as tool-call events, and it is not "
        "a format loop-brake knows"
    ]
    status, _, err = invoke("replay", "--format", "codex", str(notes))
    assert status == 3
    assert f"{notes}: no tool call read as codex, and it is not a format loop-brake knows" in err


def test_blank_input_is_not_flagged(tmp_path: Path) -> None:
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n")
    assert invoke("filter", "--strict", str(blank)) == (0, "", "")
    assert invoke("filter", "--strict", input=b"") == (0, "", "")


def test_replay_verdicts_says_it_too_and_keeps_filters_lines() -> None:
    status, out, err = invoke("replay", "--verdicts", "--format", "codex", str(CLAUDE))
    assert status == 3 and out == ""
    assert ours(err) == [
        f"loop-brake replay: {CLAUDE}: looks like a claude-code transcript, not codex; "
        "use --format claude-code"
    ]


def test_the_summary_counts_inputs_not_in_the_format(tmp_path: Path) -> None:
    status, _, err = invoke("filter", "--summary", "--format", "codex", str(CLAUDE))
    assert "1 input(s) not in the format read" in err


def test_the_events_fast_path_does_not_detect(monkeypatch: pytest.MonkeyPatch) -> None:
    """For event lines the check is the events sniff of the first line: detection (every
    adapter's sniff over 64 KiB) runs only when that line is not an event."""
    import loop_brake_cli.formats as formats

    def no_detect(head: bytes, name: str) -> object:
        raise AssertionError("detect() ran for event lines")

    monkeypatch.setattr(formats, "detect", no_detect)
    sample = Path(__file__).resolve().parents[1] / "samples" / "stuck-agent.jsonl"
    status, out, err = invoke("filter", str(sample))
    assert status == 0 and err == "" and out.count("\n") == 11
