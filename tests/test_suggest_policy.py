"""Issue 38, item 3: ``replay --suggest-policy``, a policy proposed from a corpus with its
evidence: per-tool limits or the progress mode from identical streaks in resolved runs,
``args_ignore`` from runs of calls that differ only at a few paths. Deterministic, never
applied, accepted by ``check-config --policy``; argument values never printed.

The runs are event lines written here (and the bundled samples); every figure is counted
by hand from them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

CANARY = "CANARY-suggest-8d41c2"
SECRET_KEY = "sk_live_51Hx9CANARYkey4eC39HqLyjWDarjtT1zdp7dc"


def events(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def call(tool: str, args: dict[str, Any], n: int, session: str = "s") -> dict[str, Any]:
    return {"tool": tool, "args": args, "sessionId": session, "callId": f"c{n}"}


def result(value: Any, n: int, session: str = "s") -> dict[str, Any]:
    return {"type": "result", "sessionId": session, "callId": f"c{n}", "result": value}


def suggest(*args: str) -> str:
    out = run_cli("replay", *args, "--suggest-policy")
    assert out.returncode in (0, 1), out.stderr
    return out.stdout.decode()


def accepted(tmp_path: Path, text: str) -> str:
    policy = tmp_path / "suggested.toml"
    policy.write_text(text)
    checked = run_cli("check-config", "--policy", str(policy))
    assert checked.returncode == 0, checked.stderr
    return checked.stdout.decode()


def rules(text: str) -> list[list[str]]:
    """Each ``[[tools]]`` table's key lines."""
    tables, current = [], None
    for line in text.splitlines():
        if line == "[[tools]]":
            current = []
            tables.append(current)
        elif current is not None and line and not line.startswith("#"):
            current.append(line)
        else:
            current = None
    return tables


def test_the_bundled_samples(tmp_path: Path) -> None:
    """Acceptance: a policy check-config accepts, each rule after its evidence."""
    text = suggest(str(ROOT / "samples"))
    described = accepted(tmp_path, text)
    assert rules(text) == [
        ['match = "get_page"', 'args_ignore = ["$.page"]'],
        ['match = "http_get"', 'args_ignore = ["$.request_id", "$.timestamp"]'],
        ['match = "write_stdin"', 'args_ignore = ["$.max_output_tokens", "$.session_id"]'],
    ]
    assert 'http_get -> max_repeats global, args_ignore ["$.request_id", "$.timestamp"]' in (
        described
    )
    for block in text.split("\n\n")[1:]:
        if "[[tools]]" in block:  # the evidence, then the rule
            evidence = block[: block.index("[[tools]]")]
            assert evidence.startswith("# ") and "calls" in evidence, block
    # samples/nonce-polls.jsonl: 5 polls the same but for those two paths
    assert (
        '# "http_get": calls the same but for $.request_id, $.timestamp (numbers, times or ids)'
        in text
    )
    assert "1 run of unknown outcome (1 run of calls, the longest 5 calls)" in text
    # the stuck agent's run_command streak: no outcome, so no limit, and said so
    assert (
        '# - "run_command": identical calls reach maxRepeats 3 in 1 run of unknown outcome'
    ) in text
    assert "a streak may be a loop as well as a success" in text


def test_deterministic_in_one_process_or_two(tmp_path: Path) -> None:
    one = run_cli("replay", str(ROOT / "samples"), "--suggest-policy")
    again = run_cli("replay", str(ROOT / "samples"), "--suggest-policy")
    two = run_cli("replay", str(ROOT / "samples"), "--suggest-policy", "-j", "2")
    assert one.stdout == again.stdout == two.stdout and one.stdout


def test_nothing_to_suggest_is_an_empty_policy(tmp_path: Path) -> None:
    text = suggest(str(ROOT / "samples" / "healthy-session.jsonl"))
    assert rules(text) == []
    assert "No rule: this file is a policy with no rules" in text
    assert "no rules: the brake behaves exactly as without a policy" in accepted(tmp_path, text)


def test_varying_text_is_a_different_call_not_noise(tmp_path: Path) -> None:
    """samples/stuck-agent.jsonl: 4 identical pytest runs, then one with -x: the command
    is text, so ignoring it would make every command one call: no args_ignore."""
    text = suggest(str(ROOT / "samples" / "stuck-agent.jsonl"))
    assert rules(text) == []
    assert (
        '# - "run_command": 1 run of calls the same but for a path whose values are text'
    ) in text


def test_results_that_change_suggest_the_progress_mode(tmp_path: Path) -> None:
    """A build polled 4 times, its status changing each time: progress; a test run 3 times
    with one unchanged result: with outcomes, a limit above the longest."""
    rows = []
    for n, state in enumerate(["queued", "running", "running 50%", "done"], 1):
        rows += [call("build_status", {"job": 42}, n, "poll"), result({"state": state}, n, "poll")]
    for n in range(5, 8):
        rows += [call("run_tests", {"suite": "unit"}, n, "poll"), result({"failed": 1}, n, "poll")]
    runs = events(tmp_path / "poll.jsonl", rows)
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("session_id,resolved\npoll,true\n")
    text = suggest(str(runs), "--outcomes", str(outcomes))
    assert rules(text) == [
        ['match = "build_status"', "progress = true"],
        ['match = "run_tests"', "max_repeats = 4"],
    ]
    assert (
        '# "build_status": identical calls in a row reach maxRepeats 3 in 1 resolved run (1 '
        "streak, the longest 4 calls). Their results changed inside each of those 1 streak"
    ) in text.replace("\n#   ", " ")
    assert "Their results changed inside 0 of them; a limit above the longest, 4" in text.replace(
        "\n#   ", " "
    )
    assert "Outcomes: " + str(outcomes) + ": 1 resolved run, 0 failed runs." in text.replace(
        "\n#   ", " "
    )
    accepted(tmp_path, text)
    # Without outcomes: progress still, no limit.
    assert rules(suggest(str(runs))) == [['match = "build_status"', "progress = true"]]


def test_outcomes_weigh_the_evidence(tmp_path: Path) -> None:
    """samples/outcomes: "bash" streaks of 3 in resolved demo__app-1 (two), of 5 in failed
    demo__app-5; "str_replace_editor" of 6 and 3 in failed demo__app-3 and demo__app-4."""
    samples = ROOT / "samples" / "outcomes"
    text = suggest(str(samples / "runs"), "--outcomes", str(samples / "results.csv"))
    assert rules(text) == [['match = "bash"', "max_repeats = 4"]]
    flat = text.replace("\n#   ", " ")
    assert (
        '# "bash": identical calls in a row reach maxRepeats 3 in 1 resolved run (2 streaks, '
        "the longest 3 calls); also in 1 failed run (1 streak, the longest 5 calls). No "
        "results were recorded to compare; a limit above the longest, 4, lets those runs "
        "through."
    ) in flat
    assert (
        '# - "str_replace_editor": identical calls reach maxRepeats 3 in 2 failed runs (2 '
        "streaks, the longest 6 calls); in no resolved run: the brake stops them as it is."
    ) in flat
    assert "2 resolved runs, 3 failed runs; 1 run with no outcome left out." in flat
    accepted(tmp_path, text)


def test_args_ignore_seen_only_in_resolved_runs_is_shown_not_suggested(tmp_path: Path) -> None:
    polls = [
        call("http_get", {"url": "/status", "nonce": f"n{n}x{n:04d}"}, n, "good") for n in range(5)
    ]
    runs = events(tmp_path / "good.jsonl", polls)
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("session_id,resolved\ngood,true\n")
    text = suggest(str(runs), "--outcomes", str(outcomes))
    assert rules(text) == []
    assert (
        '# - "http_get": no args_ignore for $.nonce, seen in resolved runs only (ignoring them '
        "would deny those runs' calls, and catch no failed run's loop): 1 resolved run (1 run "
        "of calls, the longest 5 calls)."
    ) in text.replace("\n#   ", " ")


def test_no_argument_value_and_no_data_key_is_printed(tmp_path: Path) -> None:
    """A canary in every argument value, a secret used as a member name whose value varies,
    and a map keyed by data: none of it is printed; only schema-like paths are."""
    rows = []
    for n in range(1, 6):
        rows.append(
            call("fetch", {"url": f"https://{CANARY}/x", "ts": f"2026-12-0{n}T10:00:00Z"}, n, "a")
        )
    for n in range(6, 11):
        rows.append(call("auth", {"user": CANARY, SECRET_KEY: f"{n}{n}{n}{n}{n}{n}"}, n, "b"))
    for n in range(11, 16):
        rows.append(
            call("cache", {"q": CANARY, "seen": {f"{CANARY}-{n}": 1, "keep": CANARY}}, n, "c")
        )
    runs = events(tmp_path / "canary.jsonl", rows)
    result = run_cli("replay", str(runs), "--suggest-policy")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode() + result.stderr.decode()
    assert CANARY not in out and SECRET_KEY not in out and "sk_live" not in out
    assert rules(out) == [['match = "fetch"', 'args_ignore = ["$.ts"]']]
    flat = out.replace("\n#   ", " ")
    assert (
        '# - "auth": 1 run of calls the same but for a path whose member names do not look '
        "like schema names (a key that may be data): not shown."
    ) in flat
    assert (
        '# - "cache": 1 run of calls the same but for a path whose values are text or objects'
        in flat
    )
    accepted(tmp_path, result.stdout.decode())


def test_a_tool_name_with_glob_characters_matches_itself_alone(tmp_path: Path) -> None:
    tool = "mcp__db__query[*]?"
    rows = [call(tool, {"sql": "select 1", "request_id": f"r{n:06d}"}, n) for n in range(4)]
    runs = events(tmp_path / "glob.jsonl", rows)
    text = suggest(str(runs))
    assert rules(text) == [['match = "mcp__db__query[[][*]][?]"', 'args_ignore = ["$.request_id"]']]
    policy = tmp_path / "p.toml"
    policy.write_text(text)
    verdicts = run_cli("replay", str(runs), "--verdicts", "--policy", str(policy))
    lines = [json.loads(line) for line in verdicts.stdout.splitlines()]
    assert [line["count"] for line in lines] == [1, 2, 3, 4]  # one call, repeated
    assert lines[2]["verdict"] == "deny" and lines[2]["match"] == "mcp__db__query[[][*]][?]"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--json"], "not with --json"),
        (["--verdicts"], "not with --verdicts"),
        (["--sweep", "2..4"], "not with --sweep"),
        (["--html", "x.html"], "not with --html"),
        (["--partial", "p.json"], "not with --partial"),
        (["--prices", "samples/prices.example.toml"], "not with --prices"),
    ],
)
def test_its_own_output(extra: list[str], message: str) -> None:
    result = run_cli("replay", "samples/stuck-agent.jsonl", "--suggest-policy", *extra)
    assert result.returncode == 2 and message.encode() in result.stderr + result.stdout
    assert b"[[tools]]" not in result.stdout
