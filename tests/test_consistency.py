"""Consistency between commands (issue 11): one usage-error rule for --json, one session
count for filter and replay, flags that contradict each other refused, values that
say what form they expect, and a replay of a missing file that says only that."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
STUCK = str(ROOT / "samples" / "stuck-agent.jsonl")
AB = str(ROOT / "samples" / "ab-alternation.jsonl")


# ---------------------------------------------------------------- --json usage errors


@pytest.mark.parametrize(
    "args",
    [
        ("replay", "--json", "--bogus", STUCK),
        ("replay", "--json", "-j", "abc", STUCK),
        ("replay", "--json", "--sweep", "5..2", STUCK),
        ("replay", "--json", "--verdicts", STUCK),
        ("replay", "--json", "--fail-on-deny", "--expect-deny", STUCK),
        ("replay", "--json", "-m", "0", STUCK),
        ("replay", "--json", "-j", "2", "--continue-sessions", STUCK),
        ("replay", "--json"),
        ("check-config", "--json", "--expect", "abc"),
        ("check-config", "--json", "--bogus"),
    ],
    ids=lambda args: " ".join(args[1:3]),
)
def test_json_callers_get_json_usage_errors(args: tuple[str, ...]) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["status"] == 2 and isinstance(doc["error"], str) and doc["error"]
    assert done.stderr == b""


def test_json_nothing_to_replay_is_json_with_status_4(tmp_path: Path) -> None:
    done = run_cli("replay", "--json", str(tmp_path))
    assert done.returncode == 4
    assert json.loads(done.stdout)["status"] == 4 and done.stderr == b""


def test_without_json_usage_errors_stay_text() -> None:
    done = run_cli("replay", "--bogus", STUCK)
    assert done.returncode == 2 and done.stdout == b"" and b"No such option" in done.stderr


# ---------------------------------------------------------------- flags and values


def test_fail_on_deny_with_expect_deny_is_a_usage_error() -> None:
    done = run_cli("replay", "--fail-on-deny", "--expect-deny", STUCK)
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"--fail-on-deny and --expect-deny ask for opposite outcomes" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("check-config", "--expect", "abc"),
        ("replay", "-j", "abc", STUCK),
        ("filter", "--max-sessions", "abc", STUCK),
        ("filter", "--max-line-bytes", "1.5", STUCK),
    ],
)
def test_a_bad_count_says_what_form_is_expected(args: tuple[str, ...]) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "expected a whole number of at least 1, got" in err
    assert "integer range" not in err


# ---------------------------------------------------------------- a missing file in replay


def test_replay_of_a_missing_file_says_cannot_open_and_nothing_else(tmp_path: Path) -> None:
    missing = tmp_path / "agent.jsonl"
    done = run_cli("replay", str(missing))
    assert done.returncode == 3
    assert done.stdout == b""  # no "1 unreadable record", no "does not catch" block
    assert done.stderr.decode() == (
        f"loop-brake replay: cannot open {missing}: No such file or directory\n"
    )
    verdicts = run_cli("replay", "--verdicts", str(missing))
    assert (verdicts.returncode, verdicts.stdout, verdicts.stderr) == (
        3,
        b"",
        done.stderr,
    )


def test_filter_of_a_missing_file_says_the_same(tmp_path: Path) -> None:
    missing = tmp_path / "agent.jsonl"
    done = run_cli("filter", str(missing))
    assert done.returncode == 3
    assert done.stderr.decode() == (
        f"loop-brake filter: cannot open {missing}: No such file or directory\n"
    )


# ---------------------------------------------------------------- filter --summary


def test_filter_summary_is_not_wrapped_when_stderr_is_not_a_terminal() -> None:
    done = run_cli("filter", "--summary", STUCK, AB)
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 2, lines  # the first line is ~110 columns: one line, unwrapped
    assert lines[0].startswith("loop-brake: 19 calls in 2 input(s):")
    assert lines[0].endswith("; 2 session(s)")


@pytest.mark.parametrize("continued", [False, True])
def test_filter_and_replay_count_the_same_sessions(tmp_path: Path, continued: bool) -> None:
    one = tmp_path / "one.jsonl"
    two = tmp_path / "two.jsonl"
    line = '{"tool":"search","args":{"q":"x"},"sessionId":"s1"}\n'
    one.write_text(line * 2)
    two.write_text(line * 2 + line.replace("s1", "s2"))
    extra = ("--continue-sessions",) if continued else ()
    summary = run_cli("filter", "--summary", *extra, str(one), str(two)).stderr.decode()
    doc = json.loads(run_cli("replay", "--json", *extra, str(one), str(two)).stdout)
    sessions = doc["totals"]["sessions"]
    assert sessions == (2 if continued else 3)
    assert f"; {sessions} session(s)" in summary
