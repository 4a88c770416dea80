"""The samples do what samples/README.md says they do."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

SAMPLES = ROOT / "samples"


def judge(name: str, *flags: str) -> tuple[int, list[dict], bytes]:
    result = run_cli("filter", *flags, str(SAMPLES / name))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return result.returncode, rows, result.stderr


def table(rows: list[dict]) -> list[tuple]:
    return [(r["line"], r["verdict"], r["count"], r.get("duplicate", False)) for r in rows]


def test_stuck_agent_is_stopped() -> None:
    status, rows, stderr = judge("stuck-agent.jsonl", "--fail-on-deny", "--summary")
    assert status == 1
    assert table(rows)[4:10] == [
        (5, "pass", 1, False),
        (6, "pass", 2, False),
        (7, "deny", 3, False),
        (8, "deny", 4, False),
        (9, "deny", 4, True),
        (10, "pass", 1, False),
    ]
    assert len({r["hashPrefix"] for r in rows[4:9]}) == 1
    summary = " ".join(stderr.decode().split())  # rich wraps at 80 columns
    assert "11 calls" in summary and "3 denied" in summary and "1 duplicate" in summary


def test_healthy_session_all_pass() -> None:
    status, rows, _ = judge("healthy-session.jsonl", "--fail-on-deny")
    assert status == 0
    assert {r["verdict"] for r in rows} == {"pass"}
    assert [r["count"] for r in rows] == [1, 1, 1, 1, 2, 1, 1, 1]


def test_interleaved_sessions_keep_their_own_streaks() -> None:
    _, rows, _ = judge("interleaved-sessions.jsonl")
    by_line = {r["line"]: r for r in rows}
    assert [by_line[n]["count"] for n in (1, 4, 7)] == [1, 2, 3]
    assert by_line[7]["verdict"] == "deny" and by_line[7]["sessionId"] == "support-ticket-311"
    assert by_line[2]["hashPrefix"] == by_line[1]["hashPrefix"] and by_line[2]["count"] == 1
    assert (by_line[6]["sessionId"], by_line[6]["count"]) == ("triage-bot", 2)
    assert [(by_line[n]["sessionId"], by_line[n]["verdict"]) for n in (11, 12, 13)] == [
        ("default", "pass"),
        ("default", "pass"),
        ("default", "deny"),
    ]
    assert [r["line"] for r in rows if r["verdict"] == "deny"] == [7, 13]


def test_ab_alternation_is_not_caught() -> None:
    status, rows, _ = judge("ab-alternation.jsonl", "--fail-on-deny", "-m", "2")
    assert status == 0
    assert [r["count"] for r in rows] == [1] * 8
    assert len({r["hashPrefix"] for r in rows}) == 2


def test_nonce_polls_are_caught_only_with_args_ignore() -> None:
    status, rows, _ = judge("nonce-polls.jsonl", "--fail-on-deny")
    assert status == 0
    assert [r["count"] for r in rows] == [1] * 6
    policy = str(SAMPLES / "policies" / "args-ignore.toml")
    status, rows, _ = judge("nonce-polls.jsonl", "--fail-on-deny", "--policy", policy)
    assert status == 1
    assert [(r["verdict"], r["count"]) for r in rows] == [
        ("pass", 1),
        ("pass", 2),
        ("deny", 3),
        ("deny", 4),
        ("deny", 5),
        ("pass", 1),
    ]
    assert [r.get("policyHash", False) for r in rows] == [True] * 5 + [False]
    assert len({r["hashPrefix"] for r in rows[:5]}) == 1


def test_every_sample_is_described() -> None:
    readme = (SAMPLES / "README.md").read_text("utf-8")
    for path in SAMPLES.glob("*.jsonl"):
        assert f"## {path.name}" in readme
        assert f"samples/{path.name}" in readme
