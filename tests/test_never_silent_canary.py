"""Canary: the messages added so that nothing is silently wrong never quote tool arguments.

Every new message (an input in the wrong format, no tool call read, a skipped file,
--fail-on-deny/--expect-deny on nothing, JSON usage errors, the stacked summary of
a narrow terminal) is produced from inputs whose arguments hold a secret, and no
stream may contain it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

CANARY = "CANARY-SECRET-7f3a"


def _claude_line(n: int) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": "s-claude",
            "uuid": f"u{n}",
            "parentUuid": None,
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{n}",
                        "name": "Bash",
                        "input": {"command": f"cat {CANARY}"},
                    }
                ],
            },
        }
    )


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    events = tmp_path / "events.jsonl"
    events.write_text(
        "\n".join(
            json.dumps({"tool": "search", "args": {"q": CANARY}, "sessionId": "s"})
            for _ in range(4)
        )
        + "\n"
    )
    claude = tmp_path / "claude.jsonl"
    claude.write_text("\n".join(_claude_line(n) for n in range(4)) + "\n")
    other = tmp_path / "notes.json"
    other.write_text(json.dumps({"token": CANARY, "arguments": {"q": CANARY}}) + "\n")
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_text(events.read_text())
    (folder / "settings.json").write_text(other.read_text())
    (folder / "logs.json").write_text(
        json.dumps([{"sessionId": "s", "messageId": 0, "message": CANARY}])
    )
    return {"events": events, "claude": claude, "other": other, "folder": folder}


def _runs(paths: dict[str, Path]) -> list[tuple[tuple[str, ...], bytes | None]]:
    events, claude, other, folder = (str(paths[k]) for k in ("events", "claude", "other", "folder"))
    return [
        (("filter", "--strict", "--summary", "--format", "codex", events), None),
        (("filter", "--strict", "--summary"), Path(claude).read_bytes()),
        (("filter", "--strict", other), None),
        (("filter", "--fail-on-deny", "--format", "claude-code", other), None),
        (("replay", "--format", "openhands", claude), None),
        (("replay", "--verdicts", "--format", "codex", events), None),
        (("replay", "--format", "codex", other), None),
        (("replay", "--json", "--format", "codex", other), None),
        (("replay", folder), None),
        (("replay", "--strict", "--json", folder), None),
        (("replay", "--verdicts", folder), None),
        (("replay", "--expect-deny", "--format", "codex", events), None),
        (("replay", "--fail-on-deny", "--format", "codex", events), None),
        (("replay", other), None),
        (("replay", "--json", "--bogus", events), None),
    ]


def test_no_new_message_quotes_an_argument(inputs: dict[str, Path]) -> None:
    said = 0
    for args, stdin in _runs(inputs):
        done = run_cli(*args, input=stdin)
        both = done.stdout + done.stderr
        assert CANARY.encode() not in both, (args, both[:400])
        assert b"Traceback" not in both, args
        said += bool(done.stderr) or b'"error"' in done.stdout
    assert said == len(_runs(inputs))  # each run did say something
