"""``reset_on_user_turn`` in ``loop-brake hook`` (issue 29): each agent's user-turn event
(``UserPromptSubmit``, ``BeforeAgent``, ``beforeSubmitPrompt``) ends its session's
streaks in the store (SQLite, and a real Redis server), is answered with exit 0 and
nothing on stdout whatever happens (a prompt is never refused), is registered by
``hook install`` only when the policy needs it, and a log of those hook inputs
replays to the verdicts the live hook gave. The prompt never appears anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES
from conftest import cli_env, run_cli

CANARY = "canary-93ac-prompt-secret"
AGENTS = ("claude-code", "codex", "gemini", "cursor")
AGENT_FIXTURES = FIXTURES / "agents"
RESET = "reset_on_user_turn = true\n"


def payload(agent: str, name: str, number: int = 0) -> bytes:
    """An agent's fixture input; a call gets its own call id (where the agent sends one),
    a user turn the canary as its prompt."""
    obj = json.loads((AGENT_FIXTURES / agent / name).read_bytes())
    if "tool_use_id" in obj:
        obj["tool_use_id"] = f"call-{number}"
    if "prompt" in obj:
        obj["prompt"] = CANARY
    return json.dumps(obj).encode()


def hook(store: str, data: bytes, *args: str):
    return run_cli("hook", "--store", store, "-m", "3", *args, input=data)


def policy_file(tmp_path: Path, text: str = RESET) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return str(path)


def _denied(result) -> bool:
    assert result.returncode == 0, result.stderr
    return result.stdout != b""


def _sequence(agent: str, store: str, *args: str) -> list:
    """Two calls, the user's turn, two calls: what each answered (True: denied)."""
    answers = []
    for number, name in enumerate(
        ["pre-tool.json"] * 2 + ["user-turn.json"] + ["pre-tool.json"] * 2
    ):
        result = hook(store, payload(agent, name, number), "--agent", agent, *args)
        assert CANARY.encode() not in result.stdout + result.stderr
        if name == "user-turn.json":
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            answers.append("turn")
        else:
            answers.append(_denied(result))
    return answers


@pytest.mark.parametrize("agent", AGENTS)
def test_a_user_turn_ends_the_streak_only_under_the_key(agent: str, tmp_path: Path) -> None:
    store = str(tmp_path / "on.db")
    assert _sequence(agent, store, "--policy", policy_file(tmp_path)) == [
        False, False, "turn", False, False,
    ]  # fmt: skip
    assert _sequence(agent, str(tmp_path / "off.db")) == [False, False, "turn", True, True]
    assert CANARY.encode() not in Path(store).read_bytes()


def test_a_user_turn_reaches_a_redis_store(redis_url: str, tmp_path: Path) -> None:
    assert _sequence("claude-code", redis_url, "--policy", policy_file(tmp_path)) == [
        False, False, "turn", False, False,
    ]  # fmt: skip


@pytest.mark.parametrize("agent", AGENTS)
def test_a_user_turn_is_never_refused_even_fail_closed(agent: str, tmp_path: Path) -> None:
    """Store down, policy unusable, bad option, input too long: one stderr line, exit 0,
    nothing on stdout (a user-turn hook's stdout reaches the model; exit 2 drops the
    prompt)."""
    good = policy_file(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text("reset_on_user_turn = 1\n")
    turn = payload(agent, "user-turn.json")
    directory = tmp_path / "a-directory"
    directory.mkdir()
    cases = [
        (["--store", str(directory), "--policy", good], "streaks were not ended"),
        (["--store", "redis://127.0.0.1:1/0", "--policy", good], "streaks were not ended"),
        (["--policy", str(bad)], "unusable policy"),
        (["--policy", good, "--max-sessions", "0"], "--max-sessions"),
        (["--policy", good, "--max-input-bytes", "500"], "longer than 500 bytes"),
    ]
    for args, said in cases:
        data = turn.replace(CANARY.encode(), CANARY.encode() * 40) if "500" in args else turn
        result = run_cli("hook", "--fail-closed", "--agent", agent, *args, input=data)
        assert (result.returncode, result.stdout) == (0, b""), args
        assert said.encode() in result.stderr, (args, result.stderr)
        assert result.stderr.count(b"\n") == 1
        assert CANARY.encode() not in result.stderr


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_install_registers_the_user_turn_event_only_when_the_policy_needs_it(
    agent: str, tmp_path: Path
) -> None:
    from loop_brake_cli import agents

    event = agents.get(agent).USER_TURNS[0]
    home = tmp_path / "home"
    home.mkdir()
    env_home = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}

    env = cli_env(**env_home)
    plain = run_cli("hook", "install", agent, "--user", "--dry-run", env=env)
    assert plain.returncode == 0 and event.encode() not in plain.stdout
    policy = policy_file(tmp_path)
    added = run_cli("hook", "install", agent, "--user", "--policy", policy, env=env)
    assert added.returncode == 0, added.stderr
    assert b"user-turn events" in added.stdout + added.stderr
    target = home / agents.get(agent).INSTALL.user
    hooks = json.loads(target.read_text())["hooks"]
    (group,) = hooks[event]
    assert "matcher" not in group  # a user-turn event is no tool's
    assert (
        group["hooks"][0]["command"]
        == hooks[agents.get(agent).INSTALL.event][0]["hooks"][0]["command"]
    )
    again = run_cli("hook", "install", agent, "--user", "--policy", policy, env=env)
    assert again.returncode == 0 and json.loads(target.read_text())["hooks"] == hooks
    removed = run_cli("hook", "uninstall", agent, "--user", env=env)
    assert removed.returncode == 0 and event not in json.loads(target.read_text()).get("hooks", {})


def test_a_hook_log_replays_to_the_live_verdicts(tmp_path: Path) -> None:
    """The inputs the live hook got, logged one per line, replayed under the same policy:
    the same denials; without the key the user turn is skipped, as before."""
    policy = policy_file(tmp_path)
    lines, live = [], []
    store = str(tmp_path / "live.db")
    for number, (agent, name) in enumerate(
        [("claude-code", "pre-tool.json")] * 2
        + [("claude-code", "user-turn.json")]
        + [("claude-code", "pre-tool.json")] * 3
    ):
        data = payload(agent, name, number)
        lines.append(data)
        answered = _denied(hook(store, data, "--policy", policy))
        if name == "pre-tool.json":
            live.append(answered)
    log = tmp_path / "hooks.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    args = ("replay", "--verdicts", "-m", "3", "--format", "claude-hooks", str(log))
    replayed = run_cli(*args, "--policy", policy)
    assert replayed.returncode == 0, replayed.stderr
    verdicts = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert [v["verdict"] == "deny" for v in verdicts] == live
    assert [v["count"] for v in verdicts] == [1, 2, 1, 2, 3]
    seed = [json.loads(line) for line in run_cli(*args).stdout.splitlines()]
    assert [v["count"] for v in seed] == [1, 2, 3, 4, 5]
    assert CANARY.encode() not in replayed.stdout + replayed.stderr
