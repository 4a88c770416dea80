"""``loop-brake replay``: the summary, --json, --verdicts, exit codes, errors, -j, --config.

In-process (CliRunner) for exact output, real subprocesses for exit codes, NO_COLOR
and worker processes. The real OpenHands stuck loop is read from ../shared and
skipped when that is absent.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loop_brake_cli.cli import cli
from tests.conftest import cli_env, run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CODEX_POLLS = (
    FIXTURES / "codex" / "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
)
CANARY = "CANARY-SECRET"


class Result:
    def __init__(self, status: int, stdout: str, stderr: str) -> None:
        self.status, self.stdout, self.stderr = status, stdout, stderr


def replay(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    environ = {"DSH_LOOP_BRAKE_MAX_REPEATS": None, "NO_COLOR": None}
    environ.update(env or {})
    result = CliRunner().invoke(
        cli, ["replay", *args], env=environ, input=input, standalone_mode=False
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    status = result.return_value if isinstance(result.return_value, int) else result.exit_code
    return Result(int(status), result.stdout, result.stderr)


def filter_(*args: str) -> Result:
    result = CliRunner().invoke(
        cli, ["filter", *args], env={"DSH_LOOP_BRAKE_MAX_REPEATS": None}, standalone_mode=False
    )
    return Result(int(result.return_value or 0), result.stdout, result.stderr)


def event(tool: str, args: object, session: str, call_id: str | None = None) -> str:
    obj = {"tool": tool, "args": args, "sessionId": session}
    if call_id:
        obj["callId"] = call_id
    return json.dumps(obj)


LOOP_LINES = [
    event("search", {"q": f"{CANARY}-1"}, "s1", "c1"),
    event("search", {"q": f"{CANARY}-1"}, "s1", "c2"),
    event("search", {"q": f"{CANARY}-1"}, "s1", "c3"),
    event("search", {"q": f"{CANARY}-1"}, "s1", "c4"),
    event("read", {"path": f"/{CANARY}-2"}, "s2"),
    event("read", {"path": f"/{CANARY}-3"}, "s2"),
    event("read", {"path": f"/{CANARY}-4"}, "s2"),
    event("search", {"q": f"{CANARY}-1"}, "s1", "c5"),
]


@pytest.fixture
def loop_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(LOOP_LINES) + "\n")
    return path


EXPECTED_SUMMARY = """\
loop-brake replay: 1 file (events 1): loop.jsonl; 8 tool calls; 2 sessions
maxRepeats = 3 (default)
3 calls would be denied in 1 session (1 streak)
Waste: 2 calls after a denial; no usage recorded

Sessions
file         session   calls   longest identical streak             denied   wasted
-----------------------------------------------------------------------------------
loop.jsonl   s1            5   search 85e568924e5c x5 from line 1        3        2
loop.jsonl   s2            3   no repeat                                 0        0

Denials: where the brake first stopped each streak
where             tool     hash           streak   what happened
------------------------------------------------------------\
-----------------------------------------------------
line 3 (call 3)   search   85e568924e5c        5   denied at the 3rd identical call; \
the agent tried 2 more times

Streak lengths (identical consecutive calls; 1 = no repeat)
   1 ############################## 3
   2                                0
   3                                0
   4                                0
   5 ##########                     1 <- denied
   6                                0
   7                                0
   8                                0
   9                                0
 10+                                0

What the exact brake does not catch (informational; the rules do not change)
file         session   longest A/B alternation   longest same-tool run, arguments changing
------------------------------------------------------------------------------------------
loop.jsonl   s2        -                         read x3 from line 5

Sweep: what each maxRepeats would have denied
 maxRepeats   denied calls   sessions with a denial   first denial
---------------------------------------------------------------------
          2              4                        1   line 2 (call 2)
3 (current)              3                        1   line 3 (call 3)
          4              2                        1   line 4 (call 4)
          5              1                        1   line 8 (call 8)
"""


def test_summary_exact_plain_text(loop_file: Path) -> None:
    result = replay("loop.jsonl", "--sweep", "2..5")
    assert result.status == 0
    assert result.stdout == EXPECTED_SUMMARY
    assert result.stderr == ""


def test_json_document_fields(loop_file: Path) -> None:
    result = replay("loop.jsonl", "--json", "--sweep", "2..4")
    doc = json.loads(result.stdout)
    assert doc["schema"] == "loop-brake.replay/2"
    assert (doc["maxRepeats"], doc["maxRepeatsSource"]) == (3, "default")
    assert doc["totals"] == {
        "files": 1,
        "filesFailed": 0,
        "formats": {"events": 1},
        "calls": 8,
        "passed": 5,
        "denied": 3,
        "deniedStreaks": 1,
        "sessions": 2,
        "sessionsWithDenial": 1,
        "duplicates": 0,
        "unparsedArgs": 0,
        "unreadable": 0,
    }
    (denial,) = doc["denials"]
    assert denial == {
        "session": "s1",
        "tool": "search",
        "hashPrefix": "85e568924e5c",
        "at": {"file": "loop.jsonl", "line": 3, "path": None, "call": 3},
        "streakStart": {"file": "loop.jsonl", "line": 1, "path": None, "call": 1},
        "streakLength": 5,
        "moreAfterDenial": 2,
    }
    assert doc["streakLengths"] == {"1": 3, "5": 1}
    assert [row["deniedCalls"] for row in doc["sweep"]] == [4, 3, 2]
    assert doc["sessions"][1]["longestSameToolRun"]["length"] == 3
    assert set(doc) == {
        "schema",
        "maxRepeats",
        "maxRepeatsSource",
        "totals",
        "files",
        "sessions",
        "denials",
        "denialsNotListed",
        "streakLengths",
        "sweep",
        "errors",
        "errorsNotListed",
        "skipped",
        "waste",
        "usage",
        "prices",
    }


def test_verdicts_equal_filter_byte_for_byte(loop_file: Path) -> None:
    ours = replay("loop.jsonl", "--verdicts")
    theirs = filter_("--format", "events", "loop.jsonl")
    assert ours.stdout == theirs.stdout and ours.stdout.count("\n") == 8


@pytest.mark.parametrize(
    ("path", "format_name"),
    [
        (CODEX_POLLS, "codex"),
        (FIXTURES / "openhands" / "OpenHands__tests-runtime-trajs__basic.json", "openhands"),
    ],
)
def test_verdicts_equal_filter_on_real_fixtures(path: Path, format_name: str) -> None:
    assert path.is_file(), f"{path}: a fixture the repository ships is missing"
    ours = replay(str(path), "--verdicts")
    theirs = filter_("--format", format_name, str(path))
    assert ours.status == 0
    assert ours.stdout == theirs.stdout and ours.stdout


def test_canary_never_appears_in_any_mode(tmp_path: Path, loop_file: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"tool": "x", "args": {"k": "CANARY-SECRET-9"}, "sessionId": 5}\n'
        '{"tool": "CANARY-SECRET-10\n' + event("t", {"k": "CANARY-SECRET-11"}, "s") + "\n"
    )
    for mode in ([], ["--json"], ["--verdicts"], ["--sweep", "1..12"], ["-m", "1", "--json"]):
        for paths in (["loop.jsonl"], [str(bad)], [str(tmp_path)]):
            result = replay(*paths, *mode)
            assert CANARY not in result.stdout + result.stderr, (mode, paths)


def test_exit_codes_for_ci(loop_file: Path, tmp_path: Path) -> None:
    healthy = tmp_path / "healthy.jsonl"
    healthy.write_text(event("a", {}, "s") + "\n" + event("b", {}, "s") + "\n")
    assert replay("loop.jsonl", "--fail-on-deny").status == 1
    assert replay("loop.jsonl", "--expect-deny").status == 0
    assert replay(str(healthy), "--fail-on-deny").status == 0
    result = replay(str(healthy), "--expect-deny")
    assert result.status == 1 and "no call would be denied" in result.stderr
    assert replay("loop.jsonl", "-m", "6", "--fail-on-deny").status == 0


@pytest.mark.parametrize("value", ["0", "-1"])
def test_invalid_max_repeats_exits_2_before_reading(value: str, tmp_path: Path) -> None:
    result = replay(str(tmp_path / "missing.jsonl"), "-m", value)
    assert result.status == 2
    assert "invalid maxRepeats from --max-repeats" in result.stderr
    assert "missing" not in result.stderr and result.stdout == ""


def test_invalid_environment_value_exits_2(loop_file: Path) -> None:
    result = replay("loop.jsonl", env={"DSH_LOOP_BRAKE_MAX_REPEATS": "three"})
    assert result.status == 2 and "DSH_LOOP_BRAKE_MAX_REPEATS" in result.stderr


def test_the_summary_names_the_source(loop_file: Path, tmp_path: Path) -> None:
    assert "maxRepeats = 4 (--max-repeats)" in replay("loop.jsonl", "-m", "4").stdout
    env = {"DSH_LOOP_BRAKE_MAX_REPEATS": "5"}
    assert "maxRepeats = 5 ($DSH_LOOP_BRAKE_MAX_REPEATS)" in replay("loop.jsonl", env=env).stdout
    patch = tmp_path / "cordis.patch.yml"
    patch.write_text(
        "- insert:\n  - id: loop-brake\n    name: dsh-loop-brake\n"
        "    config:\n      maxRepeats: 2\n"
    )
    doc = json.loads(replay("loop.jsonl", "--config", str(patch), "--json").stdout)
    assert doc["maxRepeats"] == 2 and "cordis.patch.yml" in doc["maxRepeatsSource"]
    assert doc["totals"]["denied"] == 4
    # --max-repeats wins over the composed config
    doc = json.loads(replay("loop.jsonl", "--config", str(patch), "-m", "4", "--json").stdout)
    assert (doc["maxRepeats"], doc["maxRepeatsSource"]) == (4, "--max-repeats")


def test_bad_config_exits_2(loop_file: Path, tmp_path: Path) -> None:
    patch = tmp_path / "cordis.patch.yml"
    patch.write_text("- insert:\n  - id: loop-brake\n    config:\n      maxRepeats: 0\n")
    result = replay("loop.jsonl", "--config", str(patch))
    assert result.status == 2 and "cordis.patch.yml" in result.stderr and result.stdout == ""


def test_mixed_directory_with_an_unrecognised_and_a_corrupt_file(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "nested").mkdir(parents=True)
    (root / "a.jsonl").write_text("\n".join(LOOP_LINES) + "\n")
    if CODEX_POLLS.exists():
        shutil.copy(CODEX_POLLS, root / "nested" / "codex.jsonl.gz")
    (root / "unknown.json").write_text('{"hello": "world"}\n')
    (root / "broken.jsonl.gz").write_bytes(
        gzip.compress(b"\n".join(line.encode() for line in LOOP_LINES))[:40]
    )
    (root / "notes.txt").write_text("not a transcript, not picked up\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.jsonl").write_text("garbage\n")
    result = replay(str(root), "--json")
    assert result.status == 3
    doc = json.loads(result.stdout)
    files = {Path(f["file"]).name: f for f in doc["files"]}
    assert set(files) >= {"a.jsonl", "broken.jsonl.gz"}
    assert "notes.txt" not in files and "x.jsonl" not in files
    # a file in a directory that is not a transcript is skipped, named once
    assert "unknown.json" not in files
    assert doc["skipped"] == [
        {
            "file": str(root / "unknown.json"),
            "reason": "not a transcript in any format loop-brake reads",
        }
    ]
    assert files["a.jsonl"]["denied"] == 3
    assert files["broken.jsonl.gz"]["error"].startswith("unreadable")
    stderr = result.stderr
    assert stderr.count("unknown.json") == 1
    assert f"{root / 'unknown.json'}: skipped: not a transcript" in stderr
    assert f"{root / 'broken.jsonl.gz'}: unreadable" in stderr
    strict = replay(str(root), "--json", "--strict")
    files = {Path(f["file"]).name: f for f in json.loads(strict.stdout)["files"]}
    assert "not a recognised transcript (tried: " in files["unknown.json"]["error"]
    assert f"{root / 'unknown.json'}: not a recognised transcript" in strict.stderr
    if CODEX_POLLS.exists():
        assert files["codex.jsonl.gz"]["format"] == "codex"
    assert "Traceback" not in stderr


def test_a_corrupt_line_is_located(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(LOOP_LINES[0] + "\n{not json\n" + LOOP_LINES[1] + "\n")
    result = replay(str(path))
    assert result.status == 3
    assert f"{path}:2: not valid JSON" in result.stderr
    assert "2 tool calls" in result.stdout


def test_a_directory_with_nothing_to_replay_exits_4(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hi\n")
    result = replay(str(tmp_path))
    assert result.status == 4 and "no transcript files found" in result.stderr


def test_missing_file_is_reported_with_the_others(loop_file: Path) -> None:
    """A file that cannot be opened is named on stderr, and nowhere in the summary."""
    result = replay("nope.jsonl", "loop.jsonl")
    assert result.status == 3
    assert result.stderr == "loop-brake replay: cannot open nope.jsonl: No such file or directory\n"
    assert result.stdout.startswith(
        "loop-brake replay: 1 file (events 1): loop.jsonl; 8 tool calls"
    )
    assert "nope" not in result.stdout and "unreadable" not in result.stdout


def test_stdin(loop_file: Path) -> None:
    result = replay("-", "--json", input=loop_file.read_text())
    doc = json.loads(result.stdout)
    assert doc["files"][0]["file"] == "<stdin>" and doc["totals"]["denied"] == 3


def test_forced_format_that_does_not_fit(loop_file: Path) -> None:
    result = replay("loop.jsonl", "--format", "codex", "--json")
    assert json.loads(result.stdout)["totals"]["calls"] == 0


def test_usage_errors(loop_file: Path) -> None:
    assert replay("loop.jsonl", "--json", "--verdicts").status == 2
    assert replay("loop.jsonl", "--sweep", "5..2").status == 2
    assert replay("loop.jsonl", "-j", "2", "--continue-sessions").status == 2
    assert replay("loop.jsonl", "--verdicts", "--sweep", "2..4").status == 2


def test_codex_polls_are_one_streak_of_six_and_the_sweep_shows_where_it_stops() -> None:
    assert CODEX_POLLS.is_file(), f"{CODEX_POLLS}: a fixture the repository ships is missing"
    doc = json.loads(replay(str(CODEX_POLLS), "--json", "--sweep", "2..8").stdout)
    (session,) = doc["sessions"]
    assert session["longestStreak"]["tool"] == "write_stdin"
    assert session["longestStreak"]["length"] == 6
    assert doc["totals"]["denied"] == 4  # denied from the 3rd at the default
    by_limit = {row["maxRepeats"]: row for row in doc["sweep"]}
    assert by_limit[6]["sessionsWithDenial"] == 1 and by_limit[6]["deniedCalls"] == 1
    assert by_limit[7]["sessionsWithDenial"] == 0 and by_limit[7]["deniedCalls"] == 0


# --- real subprocesses ------------------------------------------------------------


def test_subprocess_exit_codes_and_no_color(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(LOOP_LINES) + "\n")
    env = cli_env(NO_COLOR="1")
    done = run_cli("replay", str(path), "--fail-on-deny", env=env)
    assert done.returncode == 1
    assert b"\x1b[" not in done.stdout and b"3 calls would be denied" in done.stdout
    assert run_cli("replay", str(path), "--expect-deny", env=env).returncode == 0
    done = run_cli("replay", str(path), "-m", "0", env=env)
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_subprocess_parallel_equals_serial(tmp_path: Path) -> None:
    for i in range(5):
        lines = LOOP_LINES[: 3 + i] + [event("x", {"i": i}, "s9")] * i
        (tmp_path / f"{i}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "bad.json").write_text("[1, 2\n")
    for strict, status in (((), 0), (("--strict",), 3)):  # bad.json: skipped, or unreadable
        args = ("replay", str(tmp_path), "--json", "--sweep", "1..6", *strict)
        serial = run_cli(*args)
        parallel = run_cli(*args, "-j", "2")
        assert serial.returncode == parallel.returncode == status
        assert serial.stdout == parallel.stdout and json.loads(parallel.stdout)
        assert serial.stderr == parallel.stderr and b"bad.json" in serial.stderr
        assert CANARY.encode() not in parallel.stdout + parallel.stderr


def test_real_openhands_stuck_loop(shared_samples: Path) -> None:
    (path,) = (shared_samples / "trajectories" / "openhands").glob("*16667*STUCK-LOOP.json")
    doc = json.loads(replay(str(path), "--json").stdout)
    (session,) = doc["sessions"]
    assert session["longestStreak"]["tool"] == "str_replace_editor"
    assert session["longestStreak"]["length"] == 30
    assert doc["totals"]["denied"] == 28
    (denial,) = doc["denials"]
    start, at = denial["streakStart"]["call"], denial["at"]["call"]
    assert at - start + 1 == 3  # the third call of the streak
    assert replay(str(path), "--expect-deny").status == 0
    assert replay(str(path), "--fail-on-deny").status == 1
    text = replay(str(path)).stdout
    assert "denied at the 3rd identical call; the agent tried 27 more times" in text
    done = run_cli("replay", str(path), "--fail-on-deny")
    assert done.returncode == 1 and b"28 calls would be denied" in done.stdout
    verdicts = replay(str(path), "--verdicts").stdout
    assert verdicts == filter_("--format", "openhands", str(path)).stdout
    assert verdicts.count('"verdict":"deny"') == 28


def test_real_samples_directory_replays_in_one_command(shared_samples: Path) -> None:
    result = replay(str(shared_samples), "--json")
    doc = json.loads(result.stdout)
    assert doc["totals"]["filesFailed"] == 0 and doc["totals"]["files"] >= 30
    assert len(doc["totals"]["formats"]) >= 8
    assert doc["totals"]["denied"] > 0


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_bar_leaves_the_output_alone(
    loop_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    from loop_brake_cli.commands import _replay_pool as command

    (tmp_path / "b.jsonl").write_text("\n".join(LOOP_LINES[:3]) + "\n")
    plain = replay(str(tmp_path), "--json", "-j", jobs)
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(command, "PROGRESS_MIN_BYTES", 0)
    with_bar = replay(str(tmp_path), "--json", "-j", jobs)
    assert with_bar.stdout == plain.stdout and with_bar.status == plain.status == 0
