"""No tool argument or result text of a Claude Code transcript reaches any output of
replay, in the modes whose code this path shares (the orjson reader, the analyzer's
streak/alternation state, --sweep, progress policies, --compare-policy, --html)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli_env, run_cli

CANARY = "canary-claude-replay-7c41"
ROOT = Path(__file__).resolve().parent.parent
PROGRESS = str(ROOT / "samples/policies/progress.toml")


def transcript(folder: Path) -> Path:
    """A loop, a poll whose results change, an alternation and a duplicate line: every
    argument and result carries the canary."""
    lines = []
    calls = [("Bash", {"command": f"echo {CANARY}"})] * 5
    calls += [("Read", {"file_path": f"/{CANARY}/a"}), ("Read", {"file_path": f"/{CANARY}/b"})] * 3
    for n, (tool, args) in enumerate(calls):
        use = f"toolu_{n:03d}"
        message = {"id": f"msg_{n}", "role": "assistant", "model": "claude-x"}
        message["usage"] = {"input_tokens": 3, "output_tokens": 40}
        message["content"] = [{"type": "tool_use", "id": use, "name": tool, "input": args}]
        assistant = {"type": "assistant", "sessionId": "s1", "uuid": f"a{n}", "message": message}
        lines.append(assistant)
        if n == 2:
            lines.append(assistant)  # the same call written twice
        block = {"type": "tool_result", "tool_use_id": use, "content": f"{CANARY} {n % 2}"}
        user = {"role": "user", "content": [block]}
        lines.append({"type": "user", "sessionId": "s1", "uuid": f"u{n}", "message": user})
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_no_argument_or_result_text_in_any_mode(tmp_path: Path) -> None:
    path = str(transcript(tmp_path))
    html = tmp_path / "report.html"
    modes = [
        [],
        ["--json", "--sweep", "2..6"],
        ["--verdicts"],
        ["--policy", PROGRESS, "--json", "--sweep", "2..6"],
        ["--policy", PROGRESS],
        ["--compare-policy", PROGRESS, "--json"],
        ["--html", str(html)],
    ]
    for mode in modes:
        result = run_cli("replay", "--format", "claude-code", *mode, path, env=cli_env())
        assert result.returncode == 0, (mode, result.stderr)
        assert result.stdout, mode
        assert CANARY.encode() not in result.stdout + result.stderr, mode
    assert html.stat().st_size > 0
    assert CANARY not in html.read_text(encoding="utf-8")
