"""``replay --rows``: the summary's tables stop at N rows, the sessions that matter first.

Up to the bound a table is exactly as before (file order, no extra line); over it,
the sessions with the most denied calls, then the most wasted, then the longest
streak come first (ties in file order), and one line says how many were left out
and where they all are. Real CLI runs, in-process for the exact text and in a
pseudo-terminal 40 columns wide for the narrow form.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, run_cli
from test_replay_narrow_terminal import on_terminal

from loop_brake_cli.analysis.summary import SUMMARY_ROWS
from loop_brake_cli.cli import cli

CANARY = "CANARY-SECRET-rows"
CODEX_POLLS = (
    ROOT
    / "tests"
    / "fixtures"
    / "codex"
    / "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
)
MORE = "(all of them: --json or --html FILE)"


def replay(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli,
        ["replay", *args],
        env={"DSH_LOOP_BRAKE_MAX_REPEATS": None, "NO_COLOR": None},
        standalone_mode=False,
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    status = result.return_value if isinstance(result.return_value, int) else result.exit_code
    return int(status), result.stdout, result.stderr


def event(tool: str, args: object, session: str) -> str:
    return json.dumps({"tool": tool, "args": args, "sessionId": session})


def sessions_file(path: Path, count: int, stuck: dict[int, int]) -> Path:
    """``count`` sessions ``s00``...; session i makes ``stuck[i]`` identical calls (its
    arguments a canary), any other one call."""
    lines = []
    for i in range(count):
        repeats = stuck.get(i, 0)
        if repeats:
            lines += [event("search", {"q": f"{CANARY}-{i}"}, f"s{i:02d}")] * repeats
        else:
            lines.append(event("read", {"path": f"/{CANARY}/{i}"}, f"s{i:02d}"))
    path.write_text("\n".join(lines) + "\n")
    return path


def session_rows(text: str, title: str) -> list[str]:
    """The session ids of a plain table's rows, in order."""
    block = text.split(f"\n{title}\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^many\.jsonl\s+(s\d+)\s", block, re.M)


@pytest.fixture
def many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One session past the bound; the stopped ones last in the file."""
    monkeypatch.chdir(tmp_path)
    return sessions_file(tmp_path / "many.jsonl", SUMMARY_ROWS + 1, {47: 4, 49: 6, 50: 4})


def test_one_past_the_bound_shows_the_stopped_sessions_first_and_says_how_many_more(
    many: Path,
) -> None:
    status, out, err = replay(str(many))
    assert status == 0
    rows = session_rows(out, "Sessions")
    assert len(rows) == SUMMARY_ROWS
    # most denied first (s49: 4 denied), then s47 and s50 (2 each) in file order
    assert rows[:3] == ["s49", "s47", "s50"]
    # then the rest in file order; the last of them is the one left out
    assert rows[3:] == [f"s{i:02d}" for i in range(SUMMARY_ROWS) if i not in (47, 49)][:-1]
    assert f"... and 1 more session {MORE}" in out.splitlines()
    assert CANARY not in out + err


def test_up_to_the_bound_the_table_is_in_file_order_with_no_extra_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = sessions_file(tmp_path / "many.jsonl", SUMMARY_ROWS, {47: 4, 49: 6})
    status, out, err = replay(str(path))
    assert status == 0
    assert session_rows(out, "Sessions") == [f"s{i:02d}" for i in range(SUMMARY_ROWS)]
    assert "more session" not in out
    assert CANARY not in out + err


def test_rows_n_and_rows_all(many: Path) -> None:
    _, out, _ = replay(str(many), "--rows", "2")
    assert session_rows(out, "Sessions") == ["s49", "s47"]
    assert f"... and {SUMMARY_ROWS - 1} more sessions {MORE}" in out.splitlines()
    # the denials table keeps file order and its own line
    assert "... and 1 more denial (all of them: --json)" in out.splitlines()
    _, out, err = replay(str(many), "--rows", "all")
    assert session_rows(out, "Sessions") == [f"s{i:02d}" for i in range(SUMMARY_ROWS + 1)]
    assert "more session" not in out and "more denial" not in out
    assert CANARY not in out + err


@pytest.mark.parametrize("value", ["0", "-3", "many", ""])
def test_rows_must_be_a_whole_number_or_all(many: Path, value: str) -> None:
    done = run_cli("replay", str(many), "--rows", value)
    assert done.returncode == 2
    assert b"--rows" in done.stderr and b"expected a whole number of at least 1" in done.stderr
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr


def test_rows_bad_value_with_json_is_one_json_object(many: Path) -> None:
    done = run_cli("replay", str(many), "--rows", "0", "--json")
    assert done.returncode == 2
    assert "expected a whole number of at least 1" in json.loads(done.stdout)["error"]


@pytest.mark.parametrize(
    ("other", "named"),
    [
        (["--json"], "--json"),
        (["--verdicts"], "--verdicts"),
        (["--html", "-"], "--html -"),
        (
            ["--compare-policy", str(ROOT / "samples" / "policies" / "write-stdin.toml")],
            "--compare-policy",
        ),
    ],
)
def test_rows_is_refused_where_there_is_no_text_summary(
    many: Path, other: list[str], named: str
) -> None:
    done = run_cli("replay", str(many), "--rows", "5", *other)
    assert done.returncode == 2
    message = done.stdout if "--json" in other else done.stderr
    assert f"--rows bounds the text summary's tables, not {named}".encode() in message
    assert CANARY.encode() not in done.stdout + done.stderr


def test_json_still_lists_every_session(many: Path) -> None:
    status, out, err = replay(str(many), "--json")
    assert status == 0
    assert len(json.loads(out)["sessions"]) == SUMMARY_ROWS + 1
    assert CANARY not in out + err


def test_waste_table_is_bounded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three copies of a real Codex session that wasted calls (with usage recorded)."""
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b", "c"):
        shutil.copy(CODEX_POLLS, tmp_path / f"{name}.jsonl.gz")
    status, out, _ = replay(str(tmp_path), "--rows", "2")
    assert status == 0
    block = out.split("\nWaste: the calls after each denial", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^([abc])\.jsonl\.gz\s", block, re.M) == ["a", "b"]
    assert block.splitlines()[-1] == f"... and 1 more session {MORE}"


def test_not_caught_table_is_bounded_longest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same-tool runs, arguments changing, of 3, 5 and 4 calls: the 5 first, then the 4."""
    monkeypatch.chdir(tmp_path)
    lines = [
        event("read", {"n": f"{CANARY}-{n}"}, session)
        for session, length in (("r3", 3), ("r5", 5), ("r4", 4))
        for n in range(length)
    ]
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(lines) + "\n")
    status, out, err = replay(str(path), "--rows", "2")
    assert status == 0
    block = out.split("What the exact brake does not catch", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^many\.jsonl\s+(r\d)\s", block, re.M) == ["r5", "r4"]
    assert block.splitlines()[-1] == f"... and 1 more session {MORE}"
    assert CANARY not in out + err


def test_at_40_columns_the_more_line_wraps_between_words(many: Path) -> None:
    text = on_terminal("replay", str(many), columns=40)
    assert CANARY not in text
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= 40 for line in lines), text
    # the more line, wrapped between words: its words in order, none split
    words = " ".join(text.split())
    assert f"... and 1 more session {MORE}" in words
    assert "--json" in text.split() and "--html" in text.split()
    # stacked rows: the stopped sessions first, each id whole
    assert text.index("s49") < text.index("s47") < text.index("s50") < text.index("s00")
