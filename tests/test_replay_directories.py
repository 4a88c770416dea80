"""``replay DIR`` over real agent folders: files that are not transcripts are skipped.

The tree mimics what agents keep on disk (Claude Code projects, Codex sessions,
Gemini CLI's tmp folder with its logs.json beside chats/, OpenHands and
SWE-agent runs), built from tests/fixtures, plus two JSON files that are no
transcript. A directory replays with exit 0, each such file named once; Gemini's
prompt log is skipped without a word; a file named on the command line, or
``--strict``, keeps exit 3. Real subprocesses.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CANARY = "CANARY-SECRET-dir"
# Gemini CLI's logs.json: the user's prompts, written with JSON.stringify(_, null, 2)
GEMINI_LOG = [
    {
        "sessionId": "5b959dae-0000-4000-8000-000000000000",
        "messageId": 0,
        "type": "user",
        "message": f"list the files ({CANARY})",
        "timestamp": "2025-12-01T21:45:00.000Z",
    }
]


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    root = tmp_path / "agents"
    copies = {
        "claude/projects/-home-me-app/4c2ddfdc.jsonl": (
            "claude-code/real--fasthooks-main-transcript.jsonl"
        ),
        "claude/projects/-home-me-app/agent-sidechain.jsonl": (
            "claude-code/real--fasthooks-agent-sidechain.jsonl"
        ),
        "codex/sessions/2026/01/02/rollout-2026-01-02T18-39-45-019b7f94.jsonl": (
            "codex/real--codemie-rollout-019b7f94-shell.jsonl"
        ),
        "gemini/tmp/0f3a9c/chats/session-2025-12-01T21-45-5b959dae.json": next(
            (FIXTURES / "gemini-cli").glob("*2025-12-01T21-45*.json")
        ),
        "openhands/basic/trajectory.json": "openhands/OpenHands__tests-runtime-trajs__basic.json",
        "swe-agent/pydicom-1458.traj": next((FIXTURES / "swe-agent").glob("SWE-agent__*pydicom*")),
    }
    for target, origin in copies.items():
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / origin, path)
    (root / "gemini/tmp/0f3a9c/logs.json").write_text(json.dumps(GEMINI_LOG, indent=2))
    (root / "claude/settings.json").write_text(json.dumps({"model": "opus", "token": CANARY}))
    (root / "openhands/basic/metadata.json").write_text(json.dumps({"title": CANARY}))
    return root


def test_a_directory_of_agent_folders_replays_with_exit_0(agents: Path) -> None:
    done = run_cli("replay", "--json", str(agents))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["totals"]["formats"] == {
        "claude-code": 2,
        "codex": 1,
        "gemini-cli": 1,
        "openhands": 1,
        "swe-agent": 1,
    }
    assert doc["totals"]["filesFailed"] == 0 and doc["totals"]["calls"] > 0
    err = done.stderr.decode()
    reason = "skipped: not a transcript in any format loop-brake reads"
    sidechain = agents / "claude/projects/-home-me-app/agent-sidechain.jsonl"
    assert err.splitlines() == [
        # a subagent's warm-up: one assistant message and no call, said (issue 39)
        f"loop-brake replay: {sidechain}: warning: no tool call in its 1 assistant message "
        "(read as claude-code)",
        f"loop-brake replay: {agents / 'claude/settings.json'}: {reason}",
        f"loop-brake replay: {agents / 'openhands/basic/metadata.json'}: {reason}",
    ]
    assert "logs.json" not in err  # Gemini CLI's prompt log: skipped without a word
    skipped = {Path(item["file"]).name for item in doc["skipped"]}
    assert skipped == {"settings.json", "metadata.json", "logs.json"}
    assert CANARY not in done.stdout.decode() + err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_summary_and_workers_agree(agents: Path, jobs: str) -> None:
    serial = run_cli("replay", str(agents))
    done = run_cli("replay", "-j", jobs, str(agents))
    assert done.returncode == 0
    assert done.stdout == serial.stdout and done.stderr == serial.stderr
    assert done.stdout.startswith(b"loop-brake replay: 6 files (")
    assert done.stderr.count(b"skipped") == 2


def test_strict_counts_unknown_files_but_not_geminis_prompt_log(agents: Path) -> None:
    done = run_cli("replay", "--strict", str(agents))
    assert done.returncode == 3
    err = done.stderr.decode()
    assert "settings.json: not a recognised transcript" in err
    assert "metadata.json: not a recognised transcript" in err
    assert "logs.json" not in err


def test_a_file_named_on_the_command_line_still_exits_3(agents: Path) -> None:
    log = agents / "gemini/tmp/0f3a9c/logs.json"
    done = run_cli("replay", str(log))
    assert done.returncode == 3
    assert done.stderr.decode() == (
        f"loop-brake replay: {log}: Gemini CLI's prompt log (logs.json holds the user's "
        "prompts, no tool call), not a transcript\n"
    )
    settings = agents / "claude/settings.json"
    done = run_cli("replay", str(settings))
    assert done.returncode == 3 and b"not a recognised transcript" in done.stderr


def test_gemini_tmp_with_a_forced_format(agents: Path) -> None:
    """``--format gemini-cli ~/.gemini/tmp/``: the prompt log is still skipped quietly."""
    done = run_cli("replay", "--format", "gemini-cli", str(agents / "gemini"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""


def test_verdicts_skip_the_same_files(agents: Path) -> None:
    done = run_cli("replay", "--verdicts", str(agents))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(b"skipped") == 2 and b"logs.json" not in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and {Path(row["file"]).name for row in rows} >= {"trajectory.json"}


def test_a_directory_of_only_non_transcripts_has_nothing_to_replay(tmp_path: Path) -> None:
    (tmp_path / "logs.json").write_text(json.dumps(GEMINI_LOG, indent=2))
    done = run_cli("replay", str(tmp_path))
    assert done.returncode == 4
    assert b"nothing to replay" in done.stderr and done.stdout == b""
    done = run_cli("replay", "--json", str(tmp_path))
    assert done.returncode == 4 and json.loads(done.stdout)["status"] == 4
