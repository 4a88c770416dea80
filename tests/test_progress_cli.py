"""The progress mode through the commands: filter with result lines, replay of the same
traffic, --compare-policy, check-config; results never written anywhere; and without
the progress mode every line is what it was before result lines existed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, run_cli

CANARY = "canary-progress-result-5d1e"
PROGRESS = "progress = true\n"
NO_PROGRESS = '[[tools]]\nmatch = "other"\nmax_repeats = 5\n'
CODEX = (
    Path(__file__).parent
    / "fixtures/codex/real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz"
)
ENV = cli_env(LOOP_BRAKE_POLICY="")


def call(number: int, session: str = "s", tool: str = "poll") -> str:
    return json.dumps({"tool": tool, "args": {"job": 7}, "sessionId": session, "callId": number})


def result(number: int | None, value: object, session: str = "s") -> str:
    line: dict = {"type": "result", "sessionId": session, "result": value}
    if number is not None:
        line["callId"] = number
    return json.dumps(line)


def traffic() -> list[str]:
    """Polls whose output changes, then stops changing; results for other calls; a
    second session; bad result lines; the canary in results only."""
    lines = []
    for number, output in enumerate(["a", "b", "c", "d", "d", "d", "d"]):
        lines += [call(number), result(number, {"log": output, "secret": CANARY})]
    lines += [result(3, "an older call's"), result(None, f"Chunk ID: 1\n{CANARY}")]
    lines += [call(20, "t"), result(None, CANARY, "t"), call(21, "t"), call(22, "t")]
    lines += [
        json.dumps({"type": "result", "sessionId": "s", "callId": 1}),
        json.dumps({"type": "result", "sessionId": "s", "resultDigest": "ab" * 31}),
        json.dumps({"type": "result", "sessionId": 5, "result": CANARY}),
        json.dumps({"type": "result", "sessionId": "s", "result": 1, "resultDigest": "ab" * 32}),
    ]
    return lines


def write(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def policy(folder: Path, text: str = PROGRESS) -> str:
    path = folder / "policy.toml"
    path.write_text(text)
    return str(path)


def lines_of(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_filter_with_result_lines_restarts_streaks_and_equals_replay(tmp_path: Path) -> None:
    events = write(tmp_path, "events.jsonl", traffic())
    pol = policy(tmp_path)
    filtered = run_cli("filter", "--summary", "--policy", pol, str(events), env=ENV)
    replayed = run_cli("replay", "--verdicts", "--policy", pol, str(events), env=ENV)
    assert filtered.stdout == replayed.stdout and filtered.stdout
    verdicts = lines_of(filtered.stdout)
    calls = [v for v in verdicts if v["verdict"] != "error"]
    assert [v["count"] for v in calls[:7]] == [1, 2, 2, 2, 2, 3, 4]
    assert [v["verdict"] for v in calls[:7]] == ["pass"] * 5 + ["deny"] * 2
    assert calls[5]["progress"] is True and calls[5]["identicalResults"] == 2
    assert "and the last 2 results identical" in calls[5]["message"]
    assert [v["count"] for v in calls[7:]] == [1, 2, 3]  # t: one result, nothing to compare
    errors = [(v["line"], v["error"]) for v in verdicts if v["verdict"] == "error"]
    assert errors == [
        (21, 'result line without "result" or "resultDigest"'),
        (22, "resultDigest is not 64 hex characters (a sha256)"),
        (23, "sessionId is not a string"),
        (24, 'result line with both "result" and "resultDigest"'),
    ]
    assert b"results: 10 read, 1 ignored" in filtered.stderr
    for done in (filtered, replayed):
        assert CANARY.encode() not in done.stdout + done.stderr


def test_a_host_digest_gives_the_same_verdicts_as_the_result(tmp_path: Path) -> None:
    from loop_brake_cli.core.progress import result_digest

    plain = traffic()[:14]
    hashed = []
    for line in map(json.loads, plain):
        if line.get("type") == "result":
            line["resultDigest"] = result_digest(line.pop("result")).hex()
        hashed.append(json.dumps(line))
    pol = policy(tmp_path)
    one = run_cli("filter", "--policy", pol, str(write(tmp_path, "a.jsonl", plain)), env=ENV)
    two = run_cli("filter", "--policy", pol, str(write(tmp_path, "b.jsonl", hashed)), env=ENV)
    assert one.stdout == two.stdout and b'"progress":true' in one.stdout


@pytest.mark.parametrize("with_policy", [False, True])
@pytest.mark.parametrize("exact", ["", "1"])
@pytest.mark.parametrize("shard", [None, "1/2"])
def test_without_progress_result_lines_are_the_error_lines_they_always_were(
    tmp_path: Path, with_policy: bool, exact: str, shard: str | None
) -> None:
    events = write(tmp_path, "events.jsonl", traffic())
    args = ["filter", str(events)]
    if with_policy:
        args += ["--policy", policy(tmp_path, NO_PROGRESS)]
    if shard:
        args += ["--shard", shard]
    done = run_cli(*args, env=cli_env(LOOP_BRAKE_POLICY="", LOOP_BRAKE_EXACT=exact))
    verdicts = lines_of(done.stdout)
    missing = 'tool name missing (expected "tool", "toolName" or "name")'
    errors = [v for v in verdicts if v["verdict"] == "error"]
    # results are lines without a tool name: errors of shard 0, never counted as calls
    assert [v["error"] for v in errors] == ([] if shard else [missing] * 14)
    assert all("progress" not in v and "identicalResults" not in v for v in verdicts)
    counts = [v["count"] for v in verdicts if v["verdict"] != "error" and v["sessionId"] == "s"]
    if counts:
        assert counts == [1, 2, 3, 4, 5, 6, 7]
    assert CANARY.encode() not in done.stdout + done.stderr


def test_compare_policy_feeds_results_to_the_policy_side_only(tmp_path: Path) -> None:
    events = write(tmp_path, "events.jsonl", traffic())
    pol = policy(tmp_path)
    text = run_cli("replay", "--compare-policy", pol, str(events), env=ENV)
    assert CANARY.encode() not in text.stdout + text.stderr
    assert b"progress: results fed to the policy" in text.stdout
    assert b"results: 10 read, 1 ignored" in text.stdout
    done = run_cli("replay", "--compare-policy", pol, "--json", str(events), env=ENV)
    assert CANARY.encode() not in done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["progress"] is True
    assert doc["totals"] == {
        "calls": 10,
        "seedDenied": 6,
        "policyDenied": 3,
        "policyOnlyDenied": 0,
        "seedOnlyDenied": 3,  # the polls whose output kept changing: denied by the seed only
        "policyWarned": 0,
        "results": 10,
        "resultsIgnored": 1,
    }
    session = next(s for s in doc["sessions"] if s["session"] == "s")
    assert session["seedFirstDenial"] == {"call": 3, "line": 5}
    assert session["policyFirstDenial"] == {"call": 6, "line": 11}
    assert session["change"] == "later"
    plain = run_cli(
        "replay", "--compare-policy", policy(tmp_path, NO_PROGRESS), "--json", str(events)
    )
    assert "progress" not in json.loads(plain.stdout)
    assert "seedFirstDenial" not in json.loads(plain.stdout)["sessions"][0]


def test_replay_summary_and_json_never_show_a_result(tmp_path: Path) -> None:
    events = write(tmp_path, "events.jsonl", traffic())
    pol = policy(tmp_path)
    for extra in ([], ["--json"]):
        done = run_cli("replay", "--policy", pol, *extra, str(events), env=ENV)
        assert done.returncode in (0, 3), done.stderr
        assert CANARY.encode() not in done.stdout + done.stderr


def test_check_config_names_the_bad_pattern_without_quoting_it(tmp_path: Path) -> None:
    pol = policy(tmp_path, f'progress = true\nresult_ignore = ["ok", "({CANARY}"]\n')
    for extra in ([], ["--json"]):
        done = run_cli("check-config", "--policy", pol, *extra, env=ENV)
        assert done.returncode == 2
        out = (done.stdout + done.stderr).decode()
        assert "policy.toml:2:1: result_ignore[1] is not a valid regular expression" in out
        assert CANARY not in out
    good = policy(
        tmp_path, 'result_ignore_defaults = false\n[[tools]]\nmatch = "w*"\nprogress = true\n'
    )
    done = run_cli("check-config", "--policy", good, env=ENV)
    assert done.returncode == 0
    assert b"w* -> max_repeats global, progress" in done.stdout
    assert b"result_ignore: no defaults + 0 pattern(s)" in done.stdout


# --- real transcripts -------------------------------------------------------------------


def compare(policy_path: str, transcript: Path) -> dict:
    done = run_cli("replay", "--compare-policy", policy_path, "--json", str(transcript), env=ENV)
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def test_real_codex_polls_whose_output_changed_are_no_longer_denied(tmp_path: Path) -> None:
    doc = compare(policy(tmp_path), CODEX)
    (session,) = doc["sessions"]
    assert doc["totals"]["results"] > 0, "the codex adapter yields no results"
    assert (session["seedDenied"], session["policyDenied"]) == (4, 3)
    assert session["seedFirstDenial"] == {"call": 23, "line": 90}
    assert session["policyFirstDenial"] == {"call": 24, "line": 93}
    verdicts = run_cli("replay", "--verdicts", "--policy", policy(tmp_path), str(CODEX), env=ENV)
    polls = [v for v in lines_of(verdicts.stdout) if v["line"] in (82, 87, 90, 93, 96, 100)]
    assert [v["count"] for v in polls] == [1, 2, 2, 3, 4, 5]
    loose = compare("samples/policies/progress-polls.toml", CODEX)
    assert loose["totals"]["policyDenied"] == 0


def test_the_real_stuck_loop_is_still_denied_at_the_same_call(
    tmp_path: Path, shared_samples: Path
) -> None:
    stuck = next((shared_samples / "trajectories/openhands").glob("*django-16667__STUCK-LOOP.json"))
    doc = compare(policy(tmp_path), stuck)
    assert doc["totals"]["results"] > 0, "the openhands adapter yields no results"
    looping = max(doc["sessions"], key=lambda s: s["seedDenied"])
    assert looping["seedDenied"] >= 28 and looping["policyDenied"] == looping["seedDenied"]
    assert looping["policyFirstDenial"] == looping["seedFirstDenial"]


def test_the_sweep_counts_the_verdicts_a_progress_restart_gives(tmp_path: Path) -> None:
    """Under progress a streak's counts are not 1..L (a restart makes the next call 2
    again), so the sweep must come from the verdicts' own counts: at each limit m it
    denies exactly the verdicts whose count is m or more."""
    lines = []
    for number, output in enumerate(["a", "b", "c", "d", "e", "e", "e", "e"]):
        lines += [call(number), result(number, output)]
    transcript = write(tmp_path, "t.jsonl", lines + [call(20 + k, "t") for k in range(4)])
    rules = policy(tmp_path)
    verdicts = run_cli("replay", "--policy", rules, "--verdicts", str(transcript), env=ENV)
    assert verdicts.returncode == 0, verdicts.stderr
    counts = [v["count"] for v in lines_of(verdicts.stdout) if v.get("verdict") != "error"]
    assert counts.count(2) > 1 + counts.count(3)  # restarts happened: 2 more often than 1..L
    summary = run_cli(
        "replay", "--policy", rules, "--sweep", "2..6", "--json", str(transcript), env=ENV
    )
    assert summary.returncode == 0, summary.stderr
    rows = json.loads(summary.stdout)["sweep"]
    expected = [(m, sum(c >= m for c in counts)) for m in range(2, 7)]
    assert [(r["maxRepeats"], r["deniedCalls"]) for r in rows] == expected
