"""``--format`` forces in ``replay`` as in ``filter``, and "use --format X" never sends the
user in a circle (issue 27, item 3).

A forced format reads the file: said once when the file looks like another format
(a warning: the run goes on, exit 0; unreadable under ``--strict``), unreadable when
no call comes out (said once, not one error per line). Advice names a format only
when that format reads the file: following it gives calls, or at least no error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from loop_brake_cli.core.records import BadRecord, ToolCall
from loop_brake_cli.formats import get, names, parse_records
from loop_brake_cli.formats._detect import FormatCheck, reads
from loop_brake_cli.readers.reader import open_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
STREAM = ROOT / "samples" / "formats" / "claude-stream.jsonl"
HISTORY_ONLY = (
    FIXTURES / "swe-agent" / "SWE-agent__trajectories-demonstrations__function_calling_simple.traj"
)


def test_replay_reads_a_forced_format_with_one_warning() -> None:
    """A ``claude -p`` stream forced as ``claude-code`` is read (its 5 calls, 2 denied),
    with the mismatch said once on stderr and in ``--json``: a warning, exit 0."""
    done = run_cli("replay", "--format", "claude-code", str(STREAM))
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode() == (
        f"loop-brake replay: {STREAM}: looks like a claude-stream transcript, not claude-code; "
        "use --format claude-stream\n"
    )
    assert b"5 tool calls" in done.stdout and b"2 calls would be denied" in done.stdout
    forced_json = run_cli("replay", "--json", "--format", "claude-code", str(STREAM))
    document = json.loads(forced_json.stdout)
    (info,) = document["files"]
    assert info["calls"] == 5 and info["error"] is None
    assert info["warning"].startswith("looks like a claude-stream transcript, not claude-code")
    assert document["totals"]["unreadable"] == 0
    strict = run_cli("replay", "--strict", "--format", "claude-code", str(STREAM))
    assert strict.returncode == 3 and b"5 tool calls" in strict.stdout


def test_the_warning_key_is_only_there_when_a_file_has_one() -> None:
    document = json.loads(run_cli("replay", "--json", str(STREAM)).stdout)
    assert "warning" not in document["files"][0]


def test_replay_verdicts_read_a_forced_format_too() -> None:
    done = run_cli("replay", "--verdicts", "--format", "claude-code", str(STREAM))
    assert done.returncode == 0
    assert done.stdout.count(b'"verdict":"deny"') == 2
    assert b"use --format claude-stream" in done.stderr


def test_the_swe_agent_demonstration_no_longer_goes_round() -> None:
    """It was detected as openai-chat, which said "not a chat message" under every
    --format. Now it is swe-agent, and forcing openai-chat points there, which reads it."""
    detected = run_cli("replay", "--json", str(HISTORY_ONLY))
    assert json.loads(detected.stdout)["totals"]["calls"] == 5
    forced = run_cli("replay", "--format", "openai-chat", str(HISTORY_ONLY))
    assert forced.returncode == 3
    assert b"use --format swe-agent" in forced.stderr
    advised = run_cli("replay", "--format", "swe-agent", str(HISTORY_ONLY))
    assert advised.returncode == 0 and b"5 tool calls" in advised.stdout
    assert advised.stderr == b""


def test_no_advice_toward_a_format_that_cannot_read_the_file(tmp_path: Path) -> None:
    """The head looks like openai-chat, but openai-chat reads only an error from it: the
    message says so instead of sending the user there."""
    path = tmp_path / "broken.json"
    path.write_text('[{"tool_calls": 5}]\n')
    done = run_cli("replay", "--format", "anthropic", str(path))
    assert done.returncode == 3
    err = done.stderr.decode()
    assert "looks like an openai-chat transcript, not anthropic" in err
    assert "reads no tool call from it either" in err and "use --format" not in err
    piped = run_cli("filter", "--format", "anthropic", str(path))
    assert b"use --format" not in piped.stderr and b"either" in piped.stderr


def advice(check: FormatCheck, path: Path) -> str | None:
    """What replay says of ``path`` read as ``check``'s format: the mismatch, else (when no
    call came out) the nothing-read message."""
    said = check.mismatch()
    source = open_source(str(path))
    try:
        got = any(r.__class__ is ToolCall for r in parse_records(check.adapter, source))
    finally:
        source.close()
    return said if said is not None or got else check.nothing_read()


def calls_and_errors(fmt: str, path: Path) -> tuple[int, int]:
    source = open_source(str(path))
    try:
        records = list(parse_records(get(fmt), source))
    finally:
        source.close()
    calls = sum(r.__class__ is ToolCall for r in records)
    return calls, sum(r.__class__ is BadRecord for r in records)


FILES = sorted(
    path
    for path in FIXTURES.rglob("*")
    if path.is_file()
    and path.parent.name != "agents"
    and "home" not in path.parts
    and path.suffix != ".md"
    and (path.name.startswith(("real--", "DERIVED", "SWE-agent", "OpenHands", "codemie")))
)


def test_the_fixtures_were_found() -> None:
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:60])
def test_advice_is_never_a_circle(path: Path) -> None:
    """Every real fixture forced into every format: where the message says "use --format
    X", reading the file as X gives calls, or no error, and says nothing more."""
    source = open_source(str(path))
    head = source.head()
    source.close()
    for fmt in names():
        check = FormatCheck(get(fmt), head, path=str(path))
        said = advice(check, path)
        if said is None or "use --format " not in said:
            continue
        target = said.rsplit("use --format ", 1)[1]
        calls, errors = calls_and_errors(target, path)
        assert calls or not errors, (fmt, said)
        again = FormatCheck(get(target), head, path=str(path))
        assert advice(again, path) is None, (fmt, target)


def test_reads_a_live_stream_is_assumed(tmp_path: Path) -> None:
    """An input that cannot be read again (a pipe: no path) keeps the advice."""
    assert reads(get("swe-agent"), None)
    assert reads(get("swe-agent"), str(HISTORY_ONLY))
    assert not reads(get("openai-chat"), str(HISTORY_ONLY))
