"""Issue 27, item 5: what a run says matches what it did (found when tried as a new user).

Each defect has a test here, through the real CLI in a subprocess (a pseudo-terminal
where a terminal is the point); the HTML page's defects are drawn in the headless
browser in tests/test_html_browser.py.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, cli_env, run_cli
from test_html_report import events, page_json

CANARY = "CANARY-never-misleads-31c9"


def duplicated(path: Path) -> Path:
    """One session: search x4 (its 2nd call logged twice under one call id), then 6 tools."""
    rows = []
    for n in range(1, 5):
        rows.append({"sessionId": "s", "callId": f"c{n}", "tool": "search", "args": {"q": CANARY}})
        if n == 2:
            rows.append(dict(rows[-1]))
    rows += [{"sessionId": "s", "callId": f"d{n}", "tool": f"t{n}", "args": {}} for n in range(6)]
    return events(path, rows)


def test_a_duplicated_call_id_is_one_call_everywhere(tmp_path: Path) -> None:
    source = str(duplicated(tmp_path / "dup.jsonl"))
    text = run_cli("replay", source)
    assert text.returncode == 0, text.stderr
    out = text.stdout.decode()
    assert "10 tool calls" in out and "1 duplicate (same call id, counted once)" in out
    doc = json.loads(run_cli("replay", source, "--json").stdout)
    totals = doc["totals"]
    assert (totals["calls"], totals["passed"], totals["denied"], totals["duplicates"]) == (
        10,
        8,
        2,
        1,
    )
    (session,) = doc["sessions"]
    assert (session["calls"], session["longestStreak"]["length"]) == (10, 4)
    swept = run_cli("replay", source, "--sweep", "3..3", "--json")
    (row,) = json.loads(swept.stdout)["sweep"]
    assert row["deniedCalls"] == totals["denied"]  # the sweep counts the same calls
    data = page_json(run_cli("replay", source, "--html", "-").stdout.decode())
    assert data["totals"]["calls"] == 10 and data["totals"]["duplicates"] == 1
    (page_session,) = data["sessions"]
    assert (page_session["n"], page_session["u"], page_session["ls"]) == (10, 1, 4)
    timeline = page_session["tl"]
    assert len(timeline["t"]) == 10  # one mark per call
    assert timeline["st"] == [[0, 4]]  # the bracket: x4, as the header and the table
    for blob in (text.stdout, text.stderr, swept.stdout):
        assert CANARY.encode() not in blob


def test_a_replay_that_read_nothing_does_not_say_all_clear() -> None:
    result = run_cli("replay", "README.md")
    assert result.returncode == 3
    out = result.stdout.decode()
    assert "No call would be denied" not in out
    assert "Nothing was replayed: no tool call was read; 1 unreadable file" in out
    assert "README.md: not a recognised transcript" in result.stderr.decode()


def test_a_partly_unreadable_replay_says_it_is_incomplete(tmp_path: Path) -> None:
    good = events(tmp_path / "good.jsonl", [{"tool": "a", "args": {}}, {"tool": "b", "args": {}}])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tool": "a", "args": {}}\n{"tool": \n', encoding="utf-8")
    result = run_cli("replay", str(good), str(bad))
    assert result.returncode == 3
    out = result.stdout.decode()
    assert "No call would be denied." not in out
    assert "Incomplete: no call would be denied in what could be read; 1 unreadable" in out


def test_skipped_files_of_a_directory_are_one_line() -> None:
    """The docs' `replay samples/`: its 8 patch files are summarised, not listed one a line."""
    result = run_cli("replay", "samples/")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.decode().splitlines() if "skipped" in line]
    assert len(lines) == 1, lines
    assert "skipped 8 files found in the directories that are not transcripts" in lines[0]
    assert "and 5 more (--json lists each with its reason" in lines[0]
    listed = json.loads(run_cli("replay", "samples/", "--json").stdout)["skipped"]
    assert len(listed) == 8


def test_few_skipped_files_are_named_each(tmp_path: Path) -> None:
    events(tmp_path / "run.jsonl", [{"tool": "a", "args": {}}])
    (tmp_path / "notes.json").write_text('{"a": 1}\n', encoding="utf-8")
    result = run_cli("replay", str(tmp_path))
    assert result.returncode == 0
    assert f"{tmp_path / 'notes.json'}: skipped: " in result.stderr.decode()


def test_html_to_a_file_says_where_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = run_cli("replay", "samples/stuck-agent.jsonl", "--html", str(out), "--json")
    assert result.returncode == 0, result.stderr
    assert f"loop-brake replay: wrote {out}\n" in result.stderr.decode()
    json.loads(result.stdout)  # stdout is the JSON alone
    to_stdout = run_cli("replay", "samples/stuck-agent.jsonl", "--html", "-")
    assert b"wrote" not in to_stdout.stderr


def test_state_reset_of_an_unknown_session_says_not_found(tmp_path: Path) -> None:
    store = str(tmp_path / "state.db")
    result = run_cli("state", "reset", "--session", "no-such-session", "--state", store)
    assert result.returncode == 4
    err = result.stderr.decode()
    assert "no session no-such-session in" in err and "nothing reset" in err
    assert "reset session" not in err and "removed" not in err


def _filter_on_a_terminal(args: list[str], stdin_is_tty: bool) -> tuple[int, bytes]:
    """``loop-brake filter ARGS`` with stdin a pseudo-terminal (or /dev/null), its stderr
    read until it exits; Ctrl-D ends a terminal's input."""
    master, slave = pty.openpty()
    stdin = slave if stdin_is_tty else subprocess.DEVNULL
    err_read, err_write = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "filter", *args],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=err_write,
        env=cli_env(),
        cwd=ROOT,
    )
    os.close(slave)
    os.close(err_write)
    stderr = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([err_read], [], [], 0.2)
        if ready:
            chunk = os.read(err_read, 4096)
            if not chunk:
                break
            stderr += chunk
        if b"standard input" in stderr or not stdin_is_tty:
            os.write(master, b"\x04")  # Ctrl-D: the end of the terminal's input
        if process.poll() is not None and not ready:
            break
    status = process.wait(timeout=60)
    os.close(master)
    os.close(err_read)
    return status, stderr


def test_filter_waiting_on_a_terminal_says_it_reads_stdin() -> None:
    status, stderr = _filter_on_a_terminal([], stdin_is_tty=True)
    assert status == 0
    assert b"reading tool-call events from standard input" in stderr
    assert b"Ctrl-D ends" in stderr


def test_filter_in_a_pipe_or_on_files_gives_no_hint() -> None:
    status, stderr = _filter_on_a_terminal([], stdin_is_tty=False)
    assert status == 0 and stderr == b""
    status, stderr = _filter_on_a_terminal(["samples/stuck-agent.jsonl"], stdin_is_tty=True)
    assert status == 0 and b"standard input" not in stderr
