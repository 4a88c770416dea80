"""The hook's answers, per agent, from docs/hook.md ("What each agent is answered").

``hook.answer.answer_line`` writes every agent's deny, stop, warning and notice
answer without importing ``json``: its bytes must be ``output.json_line``'s for any
message. A denial is each agent's documented deny form, and Gemini CLI's stop also
ends its agent loop (``continue: false`` with the reason). Real hook processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hook_helpers import CANARY, cursor_input, gemini_input, hook

from loop_brake_cli import agents
from loop_brake_cli.hook.answer import answer_line
from loop_brake_cli.readers.output import json_line

MESSAGES = ["loop brake: denied", 'quote " back\\slash\nnew line \u2028 é 😀', "tool \ud800 name"]


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "cursor"])
@pytest.mark.parametrize("message", MESSAGES)
def test_every_answer_is_json_lines_bytes(agent: str, message: str) -> None:
    module = agents.get(agent)
    for form in ("deny_output", "stop_output", "warn_output", "notice_output"):
        output = getattr(module, form)(message)
        if output is not None:
            assert answer_line(output) == json_line(output), (agent, form)


def _policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_gemini_is_stopped_with_continue_false(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "[stop]\nafter_denials = 1\n")
    state = tmp_path / "state.db"
    answers = [hook(state, gemini_input(i), "--policy", policy) for i in range(1, 4)]
    assert [a.stdout for a in answers[:2]] == [b"", b""]
    last = answers[2]
    assert last.returncode == 0, last.stderr
    answer = json.loads(last.stdout)
    assert answer["decision"] == "deny" and answer["continue"] is False
    assert answer["stopReason"] == answer["reason"] and CANARY not in answer["reason"]
    assert last.stdout == json_line(answer)


def test_cursor_is_denied_with_permission_deny(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    answers = [hook(state, cursor_input(i)) for i in range(1, 4)]
    assert [a.stdout for a in answers[:2]] == [b"", b""]
    answer = json.loads(answers[2].stdout)
    assert answer["permission"] == "deny"
    assert (
        answer["agent_message"] == answer["user_message"] and CANARY not in answer["user_message"]
    )
