"""``replay --json`` pinned, byte for byte, on a few inputs (issue 41 goal 5).

The replay's speed work reorders what the adapter, the brake and the analyzer do
per line; none of it may change a byte of what ``--json`` says. Each golden file
in tests/fixtures/replay-json/ is the whole document as the command printed it
before that work: a Claude Code sample, a transcript with usage and a denied
streak (the waste figures), the adapter's edge cases (located errors), a
subagent's sidechain, an event log, and the same transcripts with
``--sweep``. Regenerate one only for a change that means to change the document
(``LOOP_BRAKE_PIN=1 pytest tests/test_replay_json_pinned.py``), and say why.
"""

from __future__ import annotations

import os

import pytest
from conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "fixtures" / "replay-json"
CASES = {
    "claude-code-sample": ["samples/formats/claude-code.jsonl"],
    "waste-loop": ["tests/fixtures/waste/claude-code-loop.jsonl"],
    "edge-cases": ["tests/fixtures/claude-code/synthetic--edge-cases.jsonl"],
    "sidechain": ["tests/fixtures/claude-code/real--fasthooks-agent-sidechain.jsonl"],
    "stuck-agent": ["samples/stuck-agent.jsonl"],
    "results-usage-sweep": [
        "--sweep",
        "2..5",
        "--format",
        "claude-code",
        "tests/fixtures/claude-code/synthetic--results-usage.jsonl",
        "tests/fixtures/waste/claude-code-loop.jsonl",
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_json_is_the_pinned_document(name: str) -> None:
    proc = run_cli("replay", "--json", *CASES[name])
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("LOOP_BRAKE_PIN") == "1":
        golden.write_bytes(proc.stdout)
    assert proc.stdout == golden.read_bytes()
    # 3: the edge cases hold unreadable lines; never a crash
    assert proc.returncode == (3 if name == "edge-cases" else 0), proc.stderr.decode()
