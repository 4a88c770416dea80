"""Issue 38, item 2: ``replay --sweep LOW..HIGH --outcomes FILE``, the sweep checked against
which runs succeeded.

The labelled corpus is ``samples/outcomes/`` (written for this test and the docs): six
runs, five with an outcome in ``results.csv``, one without; one outcome names no run.
Each figure below is worked out by hand from the runs, never read back from the tool:

* ``demo__app-1`` resolved: ls, test x3, edit, test x3, submit (one turn per call, 100
  input + 1 output tokens each). Two streaks of 3.
* ``demo__app-2`` resolved: view x2, edit, submit. Longest streak 2.
* ``demo__app-3`` failed: ls, view x6, then test twice in one turn (turn t: 100t input,
  t output tokens; 8 turns, 9 calls). Longest streak 6.
* ``demo__app-4`` failed: edit x3, submit (100 + 1 tokens a turn). Longest streak 3.
* ``demo__app-5`` failed: make check x5, loop-brake event lines: no usage recorded.
* ``demo__app-6`` has no outcome; ``demo__app-7`` has no run.

A run is stopped as ``loop-brake run`` ends it: at its K-th ignored denial (a call of
count c >= m + 1 at limit m: the same call, denied, came just before), counted over the
run (K = --stop-after, default 2), or at a policy's [stop] (denials in a row).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

SAMPLE = ROOT / "samples" / "outcomes"
RUNS = str(SAMPLE / "runs")
RESULTS = str(SAMPLE / "results.csv")
CANARY = "CANARY-outcomes-3f7a91"

# maxRepeats: (resolved denied, resolved stopped, failed denied, failed stopped, calls saved,
# turns saved, input and output tokens saved, runs without per-turn usage, resolved calls lost)
EXPECTED_K2 = {
    # ignored denials at m=2 are the calls of count >= 3. app-1: calls 4 and 8, stopped at
    # call 8 (1 call after); app-3: calls 4, 5: stopped at call 5 (turn 5: turns 6-8 after,
    # 600+700+800 input, 21 output); app-5: calls 3, 4: stopped at call 4 (1 after, no
    # usage); app-4: only call 3, not stopped
    2: (2, 1, 3, 2, 4 + 1, 3, 2100, 21, 1, 1),
    # count >= 4: app-3 calls 5, 6: stopped at call 6 (turns 7, 8); app-5 calls 4, 5: at
    # call 5 (nothing after); app-1 denied (streaks of 3), not stopped
    3: (1, 0, 3, 2, 3 + 0, 2, 1500, 15, 1, 0),
    # count >= 5: app-3 calls 6, 7: stopped at call 7 (turn 8); app-5 only call 5
    4: (0, 0, 2, 1, 2, 1, 800, 8, 0, 0),
    # count >= 6: app-3 only call 7; app-3 and app-5 denied
    5: (0, 0, 2, 0, 0, 0, 0, 0, 0, 0),
}


def replay(*args: str) -> tuple[int, str, str]:
    result = run_cli("replay", *args)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def outcomes_of(*args: str) -> dict[str, Any]:
    status, out, err = replay(*args, "--json")
    assert status in (0, 1), err
    return json.loads(out)["outcomes"]


def row_figures(row: dict[str, Any]) -> tuple[int, ...]:
    saved = row["saved"]
    return (
        row["resolvedDenied"],
        row["resolvedStopped"],
        row["failedDenied"],
        row["failedStopped"],
        saved["calls"],
        saved["turns"],
        saved["tokens"]["input"] or 0,
        saved["tokens"]["output"] or 0,
        saved["runsWithoutTurnUsage"],
        row["resolvedCallsAfterStop"],
    )


def test_the_table_is_the_hand_computed_one() -> None:
    doc = outcomes_of(RUNS, "--sweep", "2..5", "--outcomes", RESULTS)
    assert {row["maxRepeats"]: row_figures(row) for row in doc["rows"]} == EXPECTED_K2
    assert doc["runs"]["resolved"] == 2 and doc["runs"]["failed"] == 3
    assert doc["runs"]["matchedBy"] == {"session": 1, "stem": 4}  # app-5's events name it
    assert [run["file"] for run in doc["runs"]["unmatched"]] == [
        f"{RUNS}/demo__app-6/demo__app-6.jsonl"
    ]
    assert doc["runs"]["outcomesWithoutRun"] == 1
    assert doc["runs"]["outcomesWithoutRunListed"] == ["demo__app-7"]
    assert doc["stopAfter"] == 2 and doc["stopAfterSource"] == "default"
    assert doc["recommended"] == 3  # the smallest limit that stops no resolved run


def test_the_text_summary_says_the_table_and_the_recommendation() -> None:
    status, out, err = replay(RUNS, "--sweep", "2..5", "--outcomes", RESULTS)
    assert status == 0, err
    table = out[out.index("Outcomes:") :]
    assert (
        f"Outcomes: 2 resolved runs and 3 failed runs matched in {RESULTS}; a run is stopped "
        "at its 2nd ignored denial (the default --stop-after 2: a denied call made again)"
    ) in table
    lines = [line.split() for line in table.splitlines()]
    rows = {line[0]: line[1:] for line in lines if line and line[0] in "2345"}
    assert rows["2"] == ["2", "1", "2", "5", "3", "2,121"]
    assert rows["3"] == ["(current)", "1", "0", "2", "3", "2", "1,515"]
    assert rows["4"] == ["0", "0", "1", "2", "1", "808"]
    assert rows["5"] == ["0", "0", "0", "0", "0", "0"]
    assert (
        "Recommended: maxRepeats 3, the smallest that stops no resolved run: it stops 2 of "
        "3 failed runs, saving 3 calls, 2 model turns, 1,515 tokens"
    ) in table
    assert "leave out 1 stopped failed run whose transcript records fewer" in table
    assert "1 run with no outcome, left out: demo__app-6/demo__app-6.jsonl" in table
    assert f"1 outcome of {RESULTS} matched no replayed run" in table


def test_dollars_at_the_users_prices() -> None:
    prices = str(SAMPLE / "prices.toml")  # demo-model: 1 USD per million in, 10 out
    doc = outcomes_of(RUNS, "--sweep", "2..5", "--outcomes", RESULTS, "--prices", prices)
    costs = {row["maxRepeats"]: row["saved"]["cost"]["amount"] for row in doc["rows"]}
    assert costs == {2: 0.00231, 3: 0.00165, 4: 0.00088, 5: None}  # 5: no turn saved
    status, out, _ = replay(RUNS, "--sweep", "2..5", "--outcomes", RESULTS, "--prices", prices)
    assert "saving 3 calls, 2 model turns, 1,515 tokens, 0.0016 USD" in out


@pytest.mark.parametrize(
    ("tolerance", "recommended", "allowed"),
    [("0", 3, 0), ("1", 2, 1), ("50%", 2, 1), ("49%", 3, 0), ("100%", 2, 2)],
)
def test_tolerance_in_runs_or_a_share(tolerance: str, recommended: int, allowed: int) -> None:
    doc = outcomes_of(RUNS, "--sweep", "2..5", "--outcomes", RESULTS, "--tolerance", tolerance)
    assert doc["recommended"] == recommended and doc["toleratedRuns"] == allowed


def test_no_limit_qualifies() -> None:
    status, out, _ = replay(RUNS, "--sweep", "2..2", "--outcomes", RESULTS)
    assert status == 0
    assert (
        "Recommended: none: every maxRepeats in 2..2 stops a resolved run; sweep higher "
        "limits (--sweep 2..4), or tolerate some (--tolerance)"
    ) in out
    assert outcomes_of(RUNS, "--sweep", "2..2", "--outcomes", RESULTS)["recommended"] is None


def test_a_limit_that_stops_nothing_saves_nothing() -> None:
    status, out, _ = replay(RUNS, "--sweep", "5..5", "--outcomes", RESULTS)
    assert status == 0
    assert (
        "Recommended: maxRepeats 5, the smallest that stops no resolved run: it stops no "
        "failed run either, so it saves nothing on these runs"
    ) in out


def test_stop_after_three() -> None:
    """K = 3: the third ignored denial, over the whole run."""
    doc = outcomes_of(RUNS, "--sweep", "2..4", "--outcomes", RESULTS, "--stop-after", "3")
    figures = {row["maxRepeats"]: row_figures(row) for row in doc["rows"]}
    # m=2, count >= 3: app-3 calls 4, 5, 6: stopped at call 6 (turns 7, 8 after); app-5
    # calls 3, 4, 5: at call 5; app-1 has two (calls 4 and 8): not stopped
    assert figures[2] == (2, 0, 3, 2, 3, 2, 1500, 15, 1, 0)
    # m=3, count >= 4: app-3 calls 5, 6, 7: at call 7 (turn 8); app-5 two: not stopped
    assert figures[3] == (1, 0, 3, 1, 2, 1, 800, 8, 0, 0)
    assert figures[4] == (0, 0, 2, 0, 0, 0, 0, 0, 0, 0)
    assert doc["stopAfter"] == 3 and doc["stopAfterSource"] == "--stop-after"
    assert doc["policyStop"] is None and doc["recommended"] == 2


def test_stop_at_the_first_denial() -> None:
    """K = 0: a run ends at its first denial, its first call of count >= m."""
    doc = outcomes_of(RUNS, "--sweep", "2..3", "--outcomes", RESULTS, "--stop-after", "0")
    figures = {row["maxRepeats"]: row_figures(row) for row in doc["rows"]}
    # m=2: app-1 at call 3 (6 after), app-2 at call 2 (2 after), app-3 at call 3 (turn 3:
    # 6 calls and turns 4-8 after, 3000 + 30 tokens), app-4 at call 2 (turns 3, 4), app-5
    # at call 2 (3 after)
    assert figures[2] == (2, 2, 3, 3, 6 + 2 + 3, 5 + 2, 3000 + 200, 30 + 2, 1, 6 + 2)
    # m=3: app-1 at call 4 (5 after), app-3 at call 4 (turns 5-8), app-4 at call 3, app-5
    # at call 3
    assert figures[3] == (1, 1, 3, 3, 5 + 1 + 2, 4 + 1, 2600 + 100, 26 + 1, 1, 5)
    assert doc["recommended"] is None


def test_the_policy_stop_ends_a_run_first(tmp_path: Path) -> None:
    """[stop] after_denials = 2: two denials in a row, before two ignored ones."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    doc = outcomes_of(RUNS, "--sweep", "2..2", "--outcomes", RESULTS, "--policy", str(policy))
    assert doc["stopAfter"] == 2 and doc["policyStop"] == 2
    # m=2: each run's first call of count 3: app-1 call 4 (5 after), app-3 call 4 (turns
    # 5-8), app-4 call 3 (turn 4), app-5 call 3 (2 after)
    assert row_figures(doc["rows"][0]) == (2, 1, 3, 3, 5 + 1 + 2, 4 + 1, 2700, 27, 1, 5)
    status, out, _ = replay(RUNS, "--sweep", "2..2", "--outcomes", RESULTS, "--policy", str(policy))
    assert "or at the policy's [stop] (2 denials in a row)" in out


def test_a_limit_of_one_denies_every_call() -> None:
    """At m = 1 a call of count >= 2 is an ignored denial: app-2 has one only."""
    doc = outcomes_of(RUNS, "--sweep", "1..1", "--outcomes", RESULTS)
    # app-1 at call 4 (5 after), app-3 at call 4 (turns 5-8), app-4 at call 3, app-5 call 3
    assert row_figures(doc["rows"][0]) == (2, 1, 3, 3, 5 + 1 + 2, 4 + 1, 2700, 27, 1, 5)


# --- outcome files as the harnesses write them -----------------------------------------


def copy_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE / "runs", runs)
    return runs


def figures_with(outcomes: Path | str, runs: str = RUNS) -> tuple[dict[str, Any], str]:
    status, out, err = replay(runs, "--sweep", "2..5", "--outcomes", str(outcomes), "--json")
    assert status == 0, err
    return json.loads(out)["outcomes"], err


def test_swebench_run_report(tmp_path: Path) -> None:
    """The harness's ``<model>.<run_id>.json`` (schema_version 2)."""
    report = tmp_path / "demo-model.eval-1.json"
    report.write_text(
        json.dumps(
            {
                "total_instances": 7,
                "submitted_instances": 6,
                "completed_instances": 5,
                "resolved_instances": 2,
                "unresolved_instances": 2,
                "empty_patch_instances": 0,
                "error_instances": 1,
                "completed_ids": ["demo__app-1", "demo__app-2", "demo__app-3", "demo__app-4"],
                "incomplete_ids": [],
                "empty_patch_ids": [],
                "submitted_ids": ["demo__app-1", "demo__app-2", "demo__app-3"],
                "resolved_ids": ["demo__app-1", "demo__app-2"],
                "unresolved_ids": ["demo__app-3", "demo__app-4"],
                "error_ids": ["demo__app-5"],
                "schema_version": 2,
            },
            indent=4,
        )
    )
    doc, _ = figures_with(report)
    assert doc["kind"] == "swebench-run-report"
    assert {row["maxRepeats"]: row_figures(row) for row in doc["rows"]} == EXPECTED_K2


def test_leaderboard_results_json_lists_only_the_resolved(tmp_path: Path) -> None:
    """``results.json`` of SWE-bench's experiments: every run not resolved is unresolved,
    so demo__app-6 (longest streak 4) counts as a failed run, and none is unmatched."""
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "no_generation": ["demo__app-9"],
                "no_logs": [],
                "resolved": ["demo__app-1", "demo__app-2"],
            },
            indent=2,
        )
    )
    doc, _ = figures_with(results)
    assert doc["kind"] == "swebench-results.json" and doc["unlistedAreUnresolved"] is True
    assert doc["runs"]["failed"] == 4 and doc["runs"]["unmatched"] == []
    assert doc["runs"]["matchedBy"] == {"stem": 2, "unlisted": 4}
    # app-6 (ls x4) is one more failed run denied at m=2, stopped at its last call
    assert row_figures(doc["rows"][0]) == (2, 1, 4, 3, 5, 3, 2100, 21, 1, 1)


def test_a_directory_of_per_instance_reports(tmp_path: Path) -> None:
    """``logs/run_evaluation/<run>/<model>/<instance>/report.json``: the harness's form
    ``{id: {"resolved": ...}}``, and the flat form SWE-bench's experiments keep."""
    logs = tmp_path / "logs" / "run_evaluation" / "eval-1" / "demo-model"
    for instance, resolved in [("demo__app-1", True), ("demo__app-3", False)]:
        (logs / instance).mkdir(parents=True)
        (logs / instance / "report.json").write_text(
            json.dumps(
                {instance: {"patch_is_None": False, "resolved": resolved, "tests_status": {}}}
            )
        )
    for instance, resolved in [
        ("demo__app-2", True),
        ("demo__app-4", False),
        ("demo__app-5", False),
    ]:
        (logs / instance).mkdir(parents=True)
        (logs / instance / "report.json").write_text(
            json.dumps({"patch_exists": True, "resolved": resolved, "tests_status": {}})
        )
    (logs / "demo__app-4" / "run_instance.log").write_text("not read\n")
    doc, _ = figures_with(tmp_path / "logs")
    assert doc["kind"] == "swebench-report.json"
    assert {row["maxRepeats"]: row_figures(row) for row in doc["rows"]} == EXPECTED_K2


def test_json_lines_plain_and_openhands(tmp_path: Path) -> None:
    lines = tmp_path / "output.swebench_eval.jsonl"
    rows = [
        {"instance_id": "demo__app-1", "resolved": True},
        {"instance_id": "demo__app-2", "test_result": {"report": {"resolved": True}}},
        {"instance_id": "demo__app-3", "test_result": {"report": {"resolved": False}}},
        {"run": "demo__app-4", "outcome": "fail"},
        {"instance_id": "demo__app-5", "resolved": 0},
    ]
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows))
    doc, _ = figures_with(lines)
    assert doc["kind"] == "jsonl"
    assert {row["maxRepeats"]: row_figures(row) for row in doc["rows"]} == EXPECTED_K2


def test_tab_separated_words(tmp_path: Path) -> None:
    table = tmp_path / "outcomes.tsv"
    table.write_text(
        "ID\tStatus\ndemo__app-1\tPASSED\ndemo__app-2\tyes\ndemo__app-3\tFailed\n"
        "demo__app-4\tunresolved\ndemo__app-5\t0\n"
    )
    doc, _ = figures_with(table)
    assert {row["maxRepeats"]: row_figures(row) for row in doc["rows"]} == EXPECTED_K2


def test_bad_lines_are_located_and_the_rest_is_read(tmp_path: Path) -> None:
    table = tmp_path / "outcomes.csv"
    table.write_text(
        f"instance_id,resolved\ndemo__app-1,true\ndemo__app-2,{CANARY}\n,false\n"
        "demo__app-3\ndemo__app-4,false\ndemo__app-1,false\n"
    )
    doc, err = figures_with(table)
    assert f'--outcomes: {table}:3: the "resolved" column is not an outcome' in err
    assert f'--outcomes: {table}:4: the "instance_id" column is empty' in err
    assert f"--outcomes: {table}:5: fewer than 2 columns" in err
    assert f"--outcomes: {table}:7: this run was given the other outcome earlier" in err
    assert CANARY not in err
    assert doc["problems"] == 4 and doc["runs"]["resolved"] == 1  # app-1 kept resolved


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--outcomes", RESULTS], 2, "--outcomes checks the limits of a sweep (or weighs"),
        (["--sweep", "2..4", "--tolerance", "1"], 2, "--tolerance applies to --outcomes FILE"),
        (["--sweep", "2..4", "--stop-after", "2"], 2, "--stop-after applies to --outcomes"),
        (["--sweep", "2..4", "--outcomes", RESULTS, "--tolerance", "-1"], 2, "--tolerance:"),
        (["--sweep", "2..4", "--outcomes", RESULTS, "--tolerance", "120%"], 2, "--tolerance:"),
        (
            ["--sweep", "2..4", "--outcomes", "no-such.csv"],
            3,
            "--outcomes: no-such.csv: cannot open",
        ),
        (["--sweep", "2..4", "--outcomes", RUNS], 2, "a directory with no report.json"),
        (["--sweep", "2..4", "--outcomes", "/dev/null"], 2, "not a file of outcomes"),
    ],
)
def test_bad_options_and_files_fail_before_any_input(
    args: list[str], status: int, message: str
) -> None:
    code, out, err = replay(RUNS, *args)
    assert code == status and message in err and out == ""


def test_a_file_with_no_outcome_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "runs.csv"
    empty.write_text("instance_id,model\ndemo__app-1,demo-model\n")
    code, _, err = replay(RUNS, "--sweep", "2..4", "--outcomes", str(empty))
    assert code == 2
    assert f"{empty}:1: not a file of outcomes: no column holding the outcome" in err


def test_partials_merged_and_workers_print_the_single_replay(tmp_path: Path) -> None:
    parts = []
    for number, names in enumerate([("1", "2", "3"), ("4", "5", "6")]):
        part = tmp_path / f"part-{number}.json"
        paths = [f"{RUNS}/demo__app-{n}" for n in names]
        code, _, err = replay(
            *paths, "--sweep", "2..5", "--outcomes", RESULTS, "--partial", str(part)
        )
        assert code == 0, err
        parts.append(str(part))
    single = run_cli("replay", RUNS, "--sweep", "2..5", "--outcomes", RESULTS, "--json")
    merged = run_cli("merge", *parts, "--sweep", "2..5", "--outcomes", RESULTS, "--json")
    workers = run_cli("replay", RUNS, "-j", "2", "--sweep", "2..5", "--outcomes", RESULTS, "--json")
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == single.stdout == workers.stdout
    text = run_cli("merge", *parts, "--sweep", "2..5", "--outcomes", RESULTS).stdout.decode()
    assert "Recommended: maxRepeats 3" in text

    other = run_cli("merge", *parts, "--sweep", "2..5", "--outcomes", RESULTS, "--stop-after", "3")
    assert other.returncode == 2
    assert b"the partials were replayed with --stop-after 2" in other.stderr


def test_merge_of_partials_without_stop_points_says_how_to_make_them(tmp_path: Path) -> None:
    part = tmp_path / "part.json"
    assert run_cli("replay", RUNS, "--sweep", "2..5", "--partial", str(part)).returncode == 0
    merged = run_cli("merge", str(part), "--sweep", "2..5", "--outcomes", RESULTS)
    assert merged.returncode == 2
    assert b"replay the pieces with --sweep and --outcomes too" in merged.stderr


def test_pieces_planned_for_any_scheduler_merge_into_the_single_replay(tmp_path: Path) -> None:
    """``corpus.work.plan`` with the sweep's top and the stop's K: what Dask runs."""
    from loop_brake_cli.corpus.work import partial_of, plan

    jobs = plan([RUNS], cap=5, stop_after=2)
    assert len(jobs) == 6
    names = []
    for number, job in enumerate(jobs):
        name = tmp_path / f"part-{number}.json"
        name.write_text(json.dumps(partial_of(job)))
        names.append(str(name))
    merged = run_cli("merge", *names, "--sweep", "2..5", "--outcomes", RESULTS, "--json")
    single = run_cli("replay", RUNS, "--sweep", "2..5", "--outcomes", RESULTS, "--json")
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == single.stdout


def test_no_argument_reaches_any_output(tmp_path: Path) -> None:
    """A canary in every run's arguments: not in the summary, JSON, HTML or partial."""
    runs = copy_runs(tmp_path)
    for path in runs.rglob("*.jsonl"):
        path.write_text(
            path.read_text().replace("make check", CANARY).replace("src/app.py", CANARY)
        )
    assert CANARY in (runs / "demo__app-5" / "demo__app-5.jsonl").read_text()
    page, part = tmp_path / "page.html", tmp_path / "part.json"
    common = [str(runs), "--sweep", "2..5", "--outcomes", RESULTS]
    text = run_cli("replay", *common)
    doc = run_cli("replay", *common, "--json", "--html", str(page), "--partial", str(part))
    merged = run_cli("merge", str(part), "--sweep", "2..5", "--outcomes", RESULTS)
    for result in (text, doc, merged):
        assert result.returncode == 0, result.stderr
        assert CANARY.encode() not in result.stdout + result.stderr
    assert CANARY not in page.read_text() and CANARY not in part.read_text()
    assert json.loads(doc.stdout)["outcomes"]["recommended"] == 3
