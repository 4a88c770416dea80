"""The hook's post-tool events under a progress policy: recorded, never denied, never said.

tests/test_progress_equivalence.py checks that the hook agrees with filter and
replay call by call; this file checks the edges of the post-tool path itself:
failures (even with --fail-closed) are one stderr line and exit 0 with nothing
on stdout, unreadable post-tool inputs are no result, an input too long to
read is never denied when it names a post-tool event, a state file written
before results existed keeps its streaks, and no result text is ever written.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, run_cli
from hook_helpers import claude_input, hook, store_bytes
from test_hook_install import QUOTED

from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.core.records import ToolResult
from loop_brake_cli.formats.hook_log import parse
from loop_brake_cli.readers.reader import open_source
from loop_brake_cli.stores.sqlite_store import StateStore

SECRET = "canary-2d4f-result-secret"


def post_input(i: int, output: object, **extra: object) -> bytes:
    payload = json.loads(claude_input(i, args={"command": "make"}))
    payload["hook_event_name"] = "PostToolUse"
    payload["tool_response"] = output
    payload.update(extra)
    return json.dumps(payload).encode()


def pre_input(i: int) -> bytes:
    return claude_input(i, args={"command": "make"})


@pytest.fixture
def policy(tmp_path: Path) -> str:
    path = tmp_path / "progress.toml"
    path.write_text("progress = true\n", encoding="utf-8")
    return str(path)


def test_a_changing_output_keeps_a_poll_alive(tmp_path: Path, policy: str) -> None:
    state = tmp_path / "state.db"
    for i in range(1, 7):
        pre = hook(state, pre_input(i), "-m", "3", "--policy", policy)
        assert pre.returncode == 0 and pre.stdout == b"" and pre.stderr == b""
        post = hook(
            state, post_input(i, {"stdout": f"{i} {SECRET}"}), "-m", "3", "--policy", policy
        )
        assert (post.returncode, post.stdout, post.stderr) == (0, b"", b"")
    assert SECRET.encode() not in store_bytes(state)
    listed = run_cli("state", "list", "--state", str(state))
    assert SECRET.encode() not in listed.stdout + listed.stderr


@pytest.mark.parametrize("fail_closed", [[], ["--fail-closed"]])
def test_a_post_tool_failure_is_one_line_never_a_denial(
    tmp_path: Path, policy: str, fail_closed: list[str]
) -> None:
    blocked = tmp_path / "a-directory"
    blocked.mkdir()
    result = hook(blocked, post_input(1, SECRET), "--policy", policy, *fail_closed)
    assert result.returncode == 0 and result.stdout == b""
    assert b"the tool's result was not recorded" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and SECRET.encode() not in result.stderr
    bad_policy = tmp_path / "bad.toml"
    bad_policy.write_text("progress = 7\n", encoding="utf-8")
    result = hook(tmp_path / "s.db", post_input(1, SECRET), "--policy", str(bad_policy))
    assert result.returncode == 0 and result.stdout == b""
    assert b"unusable policy" in result.stderr and b"not recorded" in result.stderr
    result = hook(tmp_path / "s.db", post_input(1, SECRET), "--policy", policy, "--ttl", "x")
    assert result.returncode == 0 and result.stdout == b"" and b"--ttl" in result.stderr


def test_an_oversized_post_tool_input_is_never_denied(tmp_path: Path, policy: str) -> None:
    big = post_input(1, SECRET + "x" * 5000)
    args = ("--policy", policy, "--fail-closed", "--max-input-bytes", "1000")
    result = hook(tmp_path / "s.db", big, *args)
    assert result.returncode == 0 and result.stdout == b""
    assert b"not recorded" in result.stderr and SECRET.encode() not in result.stderr
    pre = json.loads(pre_input(1))
    pre["tool_input"] = {"command": "x" * 5000}
    denied = hook(tmp_path / "s.db", json.dumps(pre).encode(), *args)
    assert denied.returncode == 2 and b"was denied" in denied.stderr  # the pre-tool rule


def test_unreadable_post_tool_inputs_are_no_result(tmp_path: Path, policy: str) -> None:
    """No result field, a wrong session or id type: silently no result, in the hook
    and in a replayed log alike (a post-tool event was never an error)."""
    state = tmp_path / "state.db"
    inputs = [
        pre_input(1),
        post_input(1, "x", session_id=7),
        post_input(1, "x", tool_use_id=[SECRET]),
        json.dumps({**json.loads(post_input(1, "x")), "tool_response": None}).encode(),
    ]
    no_field = json.loads(post_input(1, "x"))
    del no_field["tool_response"]
    inputs.append(json.dumps(no_field).encode())
    for payload in inputs:
        result = hook(state, payload, "--policy", policy, "--fail-closed")
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    log = tmp_path / "hooks.jsonl"
    log.write_bytes(b"\n".join(inputs) + b"\n")
    source = open_source(str(log))
    try:
        records = list(parse(source))
    finally:
        source.close()
    results = [r for r in records if isinstance(r, ToolResult)]
    assert len(records) == 2 and len(results) == 1  # the call, and the null result
    assert results[0].result is None
    replayed = run_cli("replay", "--verdicts", "--policy", policy, str(log))
    assert replayed.returncode == 0
    assert [json.loads(line)["verdict"] for line in replayed.stdout.splitlines()] == ["pass"]


def test_a_result_for_an_unknown_session_creates_nothing(tmp_path: Path, policy: str) -> None:
    state = tmp_path / "state.db"
    result = hook(state, post_input(1, "x"), "--policy", policy)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert not state.exists()


def test_a_state_file_from_before_results_keeps_its_streaks(tmp_path: Path) -> None:
    """Policy rows written before the progress fields existed (a 9-field decision, no
    result digests) still read: the streak goes on where it was."""
    path = tmp_path / "progress.toml"
    path.write_text("progress = true\n", encoding="utf-8")
    policy = load_policy(str(path))
    state = str(tmp_path / "state.db")
    store = StateStore(state)
    digest = bytes(32)
    try:
        for i in range(2):
            counted, _ = store.count_call(
                "s", "Bash", digest, f"c{i}", 5, now=100.0 + i, policy=policy
            )
        assert counted.slot.count == 2
    finally:
        store.close()
    with sqlite3.connect(state) as conn:
        (text,) = conn.execute("SELECT state FROM policy_state").fetchone()
        old = json.loads(text)
        old["d"] = old["d"][:9]
        for key in ("e", "k", "l"):
            del old[key]
        conn.execute("UPDATE policy_state SET state = ?", (json.dumps(old),))
    store = StateStore(state)
    try:
        # the old row's decision knows no progress: c1's result is not kept
        assert store.observe_result("s", "c1", b"\x01" * 32, policy, now=102.0)
        counted, _ = store.count_call("s", "Bash", digest, "c2", 5, now=103.0, policy=policy)
        assert counted.slot.count == 3 and not counted.decision.denied
        assert store.observe_result("s", "c2", b"\x01" * 32, policy, now=104.0)
        counted, _ = store.count_call("s", "Bash", digest, "c3", 5, now=105.0, policy=policy)
        assert counted.slot.count == 4
        assert store.observe_result("s", "c3", b"\x02" * 32, policy, now=106.0)
        counted, _ = store.count_call("s", "Bash", digest, "c4", 5, now=107.0, policy=policy)
        assert counted.slot.count == 2  # the output changed: the streak restarted
    finally:
        store.close()


def install(tmp_path: Path, *args: str) -> tuple[int, bytes]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(exist_ok=True)
    env = cli_env(HOME=str(home))
    env.pop("CODEX_HOME", None)
    env.pop("LOOP_BRAKE_POLICY", None)
    done = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "hook", "install", *args],
        capture_output=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ("progress = true\n", b"pre-tool and post-tool events: the policy uses progress)"),
        (
            "[same_error]\nafter = 2\n",
            b"pre-tool and post-tool events: the policy has [same_error])",
        ),
        (
            "[same_result]\nafter = 3\n",
            b"pre-tool and post-tool events: the policy has [same_result])",
        ),
        (
            "progress = true\nreset_on_user_turn = true\n[same_error]\nafter = 2\n",
            b"(pre-tool, post-tool and user-turn events: the policy uses progress"
            b" and has [same_error] and has reset_on_user_turn)",
        ),
        ("[[tools]]\nmatch = 'x'\nmax_repeats = 4\n", b"added the hook to"),
    ],
)
def test_install_says_which_events_it_adds_and_why(
    tmp_path: Path, policy: str, said: bytes
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / ".loop-brake.toml").write_text(policy)
    status, stderr = install(tmp_path, "claude-code", "--project")
    assert status == 0 and said in stderr, stderr


@pytest.mark.parametrize(
    ("agent", "relpath", "events"),
    [
        (
            "claude-code",
            ".claude/settings.json",
            ["PreToolUse", "PostToolUse", "PostToolUseFailure"],
        ),
        ("codex", ".codex/hooks.json", ["PreToolUse", "PostToolUse"]),
        ("gemini", ".gemini/settings.json", ["BeforeTool", "AfterTool"]),
    ],
)
def test_install_adds_the_post_tool_events_only_under_progress(
    tmp_path: Path, agent: str, relpath: str, events: list[str]
) -> None:
    settings = tmp_path / "project" / relpath
    status, _ = install(tmp_path, agent, "--project")
    assert status == 0
    assert list(json.loads(settings.read_text())["hooks"]) == events[:1]
    (tmp_path / "project" / ".loop-brake.toml").write_text("progress = true\n")
    status, stderr = install(tmp_path, agent, "--project")
    assert status == 0 and b"post-tool" in stderr
    hooks = json.loads(settings.read_text())["hooks"]
    assert list(hooks) == events
    commands = {group["hooks"][0]["command"] for event in events for group in hooks[event]}
    assert commands == {f"{QUOTED} hook --agent {agent}"}
    status, stderr = install(tmp_path, agent, "--project")
    assert status == 0 and b"already installed" in stderr
    plain = tmp_path / "plain.toml"
    plain.write_text("[[tools]]\nmatch = 'x'\nmax_repeats = 4\n")
    other = tmp_path / "other"
    status, _ = install(other, agent, "--project", "--policy", str(plain))
    assert status == 0
    assert list(json.loads((other / "project" / relpath).read_text())["hooks"]) == events[:1]
