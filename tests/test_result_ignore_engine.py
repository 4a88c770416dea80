"""A policy's ``result_ignore`` patterns cannot stall the brake, nor crash it (issue 23).

``(a+)+$`` against forty ``a`` and a ``b`` backtracks for hours in Python's
``re``: it hung ``filter``, ``replay`` and the hook's post-tool event. A policy's
own patterns are now matched by RE2 (linear time); what RE2 cannot take
(look-arounds, back-references, repetition counts above 1000 such as
``x{99999999999}``, which raised OverflowError) is a located policy error.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.policy import PolicyError
from loop_brake_cli.core.progress import compile_ignore, pattern_error, result_digest
from loop_brake_cli.hook.runner import main as hook_main

EVIL = "(a+)+$"
POLL = "a" * 40 + "b"  # with a changing tail, so each result differs from the last


def policy(tmp_path: Path, *patterns: str) -> Path:
    path = tmp_path / "policy.toml"
    listed = ", ".join(json.dumps(p) for p in patterns)
    path.write_text(f"progress = true\nresult_ignore = [{listed}]\n", encoding="utf-8")
    return path


def events(tmp_path: Path) -> Path:
    """Five identical polls whose results change (``…b1``, ``…b2``): never denied."""
    lines = []
    for number in range(1, 6):
        call = {"tool": "poll", "args": {"q": 1}, "sessionId": "s", "callId": f"c{number}"}
        result = {"type": "result", "sessionId": "s", "callId": f"c{number}"}
        lines += [json.dumps(call), json.dumps({**result, "result": f"{POLL}{number}"})]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    # The timeout only turns a regression (a hours-long match) into a failure.
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", *args],
        input=stdin,
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )


@pytest.mark.parametrize("command", ["filter", "replay"])
def test_a_catastrophic_pattern_does_not_stall_filter_or_replay(
    tmp_path: Path, command: str
) -> None:
    args = [command, "--policy", str(policy(tmp_path, EVIL)), str(events(tmp_path))]
    if command == "replay":
        args[1:1] = ["--verdicts", "--format", "events"]
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [v["verdict"] for v in verdicts if "verdict" in v] == ["pass"] * 5


def test_a_catastrophic_pattern_does_not_stall_the_hooks_post_tool_event(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    argv = ["--agent", "claude-code", "--state", str(state), "--policy"]
    argv.append(str(policy(tmp_path, EVIL)))
    for number in range(1, 4):
        head = '{"hook_event_name":"%s","session_id":"s","tool_name":"poll","tool_input":{"q":1}'
        pre = (head % "PreToolUse") + f',"tool_use_id":"c{number}"}}'
        post = (head % "PostToolUse") + f',"tool_use_id":"c{number}","tool_response":'
        post += json.dumps(f"{POLL}{number}") + "}"
        for text in (pre, post):
            out, err = io.BytesIO(), io.StringIO()
            assert hook_main(argv, io.BytesIO(text.encode()), out, err) == 0
            assert out.getvalue() == b"", err.getvalue()  # never denied: results change


def test_the_policys_patterns_still_clean_results() -> None:
    ignore = ("^Took \\d+ ms$",)
    assert pattern_error(ignore[0]) is None
    assert result_digest("Took 12 ms\nok", ignore) == result_digest("Took 3 ms\nok", ignore)
    assert result_digest("Took 12 ms\nok", ignore) != result_digest("Took 3 ms\nno", ignore)
    # a lone surrogate in a result is matched as U+FFFD, as it is hashed
    assert result_digest("x\ud800", ("\ufffd",)) == result_digest("x", ())


BAD = [
    ("x{99999999999}", "has a repetition count above 1000 (99999999999)"),
    ("a{1001}", "has a repetition count above 1000 (1001)"),
    ("(?=a)b", "is not a valid regular expression (RE2 syntax): invalid perl operator"),
    ("(a)\\1", "is not a valid regular expression (RE2 syntax): invalid escape sequence"),
    ("((a{1000}){1000}){1000}", "is not a valid regular expression (RE2 syntax): "),
]


@pytest.mark.parametrize("pattern, reason", BAD)
def test_check_config_locates_a_pattern_re2_cannot_take(
    tmp_path: Path, pattern: str, reason: str
) -> None:
    path = policy(tmp_path, pattern)
    result = cli("check-config", "--policy", str(path))
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}:2:1: result_ignore[0] {reason}"), lines
    assert "Traceback" not in result.stderr.decode()


@pytest.mark.parametrize("command", ["filter", "replay", "mcp-proxy"])
def test_an_overflowing_count_is_a_located_error_everywhere(tmp_path: Path, command: str) -> None:
    path = policy(tmp_path, "x{99999999999}")
    tail = ["--", sys.executable, str(ROOT / "tests" / "echo_server.py")]
    args = [command, "--policy", str(path)] + (tail if command == "mcp-proxy" else [str(path)])
    result = cli(*args)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"loop-brake {command}: {path}:2:1: result_ignore[0] "
        "has a repetition count above 1000 (99999999999)"
    ]


def test_the_library_raises_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="repetition count above 1000"):
        LoopBrake(policy=policy(tmp_path, "x{99999999999}"))


def test_without_re2_a_policys_own_pattern_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """No backtracking fallback: the extra is named; the defaults need nothing."""
    monkeypatch.setitem(sys.modules, "re2", None)  # ``import re2`` raises ImportError
    compile_ignore.cache_clear()
    assert "pip install 'loop-brake-cli[re2]'" in str(pattern_error("^Took \\d+ ms$"))
    assert result_digest("pid 42 ok") == result_digest("pid 7 ok")
    compile_ignore.cache_clear()
