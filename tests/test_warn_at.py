"""Policy ``warn_at`` (issue 29, item 1): the key, its located errors, the rule in the
engine against a brute-force reference, the stores, and the verdict's shape.

The reference is written from docs/policies.md alone: a call is warned when it is
counted, passes, is not exempt, and the run of identical calls it ends (in its
session, since the last differing call) is at least the ``warn_at`` of its first
matching rule (else the global one). Denials come from the policy without warn_at:
warn_at never changes who is denied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake, Verdict
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.stores import open_store

CANARY = "canary-warn-at-5b1d"


def policy_of(text: str):
    return parse_policy(text, "policy.toml")


# --- the key -----------------------------------------------------------------------


def test_a_global_and_a_rule_warn_at_load() -> None:
    policy, warnings = policy_of('warn_at = 2\n[[tools]]\nmatch = "x"\nwarn_at = 4\n')
    assert policy.warn_at == 2 and policy.tools[0].warn_at == 4
    assert policy.uses_warn and not policy.empty and warnings == []


def test_warn_at_alone_is_a_policy_and_a_rule_of_warn_at_alone_is_a_rule() -> None:
    assert not policy_of("warn_at = 1\n")[0].empty
    rule = policy_of('[[tools]]\nmatch = "x"\nwarn_at = 2\n')[0].tools[0]
    assert rule.max_repeats is None and rule.warn_at == 2


def test_without_the_key_nothing_warns() -> None:
    policy = policy_of('[[tools]]\nmatch = "x"\nmax_repeats = 9\n')[0]
    assert policy.warn_at is None and not policy.uses_warn


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("warn_at = 0\n", "policy.toml:1:1:", "warn_at must be an integer of at least 1, not 0"),
        ("warn_at = -2\n", "policy.toml:1:1:", "not -2"),
        ('warn_at = "3"\n', "policy.toml:1:1:", 'not the string "3"'),
        ("warn_at = 2.5\n", "policy.toml:1:1:", "not 2.5"),
        ("warn_at = true\n", "policy.toml:1:1:", "not true"),
        (
            '[[tools]]\nmatch = "x"\n  warn_at = 0\n',
            "policy.toml:3:3:",
            "warn_at must be an integer of at least 1, not 0",
        ),
        (
            '[[tools]]\nmatch = "x"\nmax_repeats = 4\nwarn_at = 4\n',
            "policy.toml:4:1:",
            "warn_at (4) must be below this rule's max_repeats (4)",
        ),
        (
            '[[tools]]\nmatch = "x"\nmax_repeats = 4\nwarn_at = 7\n',
            "policy.toml:4:1:",
            "warn_at (7) must be below this rule's max_repeats (4)",
        ),
        (
            '[[tools]]\nmatch = "x"\nexempt = true\nwarn_at = 2\n',
            "policy.toml:4:1:",
            "an exempt rule is never denied: drop warn_at",
        ),
        ("warn_at_ = 2\n", "policy.toml:1:1:", "(did you mean warn_at?)"),
    ],
)
def test_a_bad_warn_at_is_a_located_error(text: str, where: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        policy_of(text)
    assert where in str(caught.value) and message in str(caught.value)


def test_a_global_warn_at_not_below_a_rules_limit_is_a_warning() -> None:
    """That rule's tools would be denied before warned: usable, but said (--strict fails)."""
    policy, warnings = policy_of('warn_at = 3\n[[tools]]\nmatch = "x"\nmax_repeats = 3\n')
    assert [str(w) for w in warnings] == [
        "policy.toml:4:1: warning: the global warn_at (3) is not below this rule's "
        "max_repeats (3): its tools are never warned (give the rule its own warn_at)"
    ]
    brake = LoopBrake(9, policy=policy)
    assert not any(brake.check("x", {}).warned for _ in range(5))
    # a rule's own warn_at below its own limit takes over: no warning
    assert policy_of('warn_at = 3\n[[tools]]\nmatch = "x"\nmax_repeats = 3\nwarn_at = 2\n')[1] == []


def test_check_config_exit_codes_and_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tools]]\nmatch = "x"\nmax_repeats = 2\nwarn_at = 2\n')
    done = run_cli("check-config", "--policy", str(bad))
    assert done.returncode == 2 and done.stdout == b""
    assert f"{bad}:4:1: warn_at (2) must be below".encode() in done.stderr
    assert b"Traceback" not in done.stderr
    for command in (["filter"], ["replay", str(tmp_path)]):
        run = run_cli(*command, "--policy", str(bad), input=b"", env=cli_env(LOOP_BRAKE_POLICY=""))
        assert run.returncode == 2 and b":4:1: warn_at (2)" in run.stderr
    good = tmp_path / "good.toml"
    good.write_text('warn_at = 2\n[[tools]]\nmatch = "x"\nmax_repeats = 6\nwarn_at = 4\n')
    done = run_cli("check-config", "--policy", str(good))
    assert done.returncode == 0, done.stderr
    assert b"  warn_at: from 2 identical calls in a row" in done.stdout
    assert b"x -> max_repeats 6, warn_at 4" in done.stdout
    doc = json.loads(run_cli("check-config", "--policy", str(good), "--json").stdout)
    assert doc["warnAt"] == 2 and doc["tools"][0]["warnAt"] == 4
    shadow = tmp_path / "shadow.toml"
    shadow.write_text('warn_at = 5\n[[tools]]\nmatch = "x"\nmax_repeats = 5\n')
    assert run_cli("check-config", "--policy", str(shadow)).returncode == 0
    assert run_cli("check-config", "--policy", str(shadow), "--strict").returncode == 1


def test_check_config_json_without_warn_at_has_no_warn_keys(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text('[[tools]]\nmatch = "x"\nmax_repeats = 6\n')
    doc = json.loads(run_cli("check-config", "--policy", str(plain), "--json").stdout)
    assert "warnAt" not in doc and "warnAt" not in doc["tools"][0]


# --- the verdict -------------------------------------------------------------------


def test_the_verdict_repr_without_a_warning_is_the_one_before_warn_at() -> None:
    verdict = LoopBrake(3).check("t", {"q": 1}, session_id="s")
    assert repr(verdict) == (
        "Verdict(denied=False, tool_name='t', session_id='s', count=1, max_repeats=3, "
        "hash_prefix='" + verdict.hash_prefix + "', call_id=None, duplicate=False, rule=None, "
        "limit=None, exempt=False, match=None, cycle=(), cycle_repeats=0, denials=0, "
        "progress=False, identical_results=0)"
    )
    assert verdict.warn_at is None and not verdict.warned and verdict.warning is None
    assert "warn_at" in Verdict._fields and Verdict._field_defaults["warn_at"] is None


def test_a_warned_verdict_runs_and_says_so_without_the_arguments() -> None:
    brake = LoopBrake(4, policy=policy_of("warn_at = 2\n")[0])
    verdicts = [brake.check("grep", {"q": CANARY}, session_id="s") for _ in range(5)]
    assert [(v.denied, v.warned) for v in verdicts] == [
        (False, False),
        (False, True),
        (False, True),
        (True, False),
        (True, False),
    ]
    second = verdicts[1]
    assert second.warn_at == 2 and repr(second).endswith(", warn_at=2)")
    assert second.warning == (
        'loop brake: warning: tool "grep" called 2 times in a row with identical arguments '
        f"(call {second.hash_prefix}\u2026, warn at 2, limit 4); this call runs, but a streak "
        "of 4 identical calls is denied.\n"
        "Change the arguments, call a different tool, or stop if you are not making progress."
    )
    for verdict in verdicts:
        assert CANARY not in repr(verdict) + str(verdict.warning) + verdict.message


# --- the rule against its definition -------------------------------------------------

TOOLS = ["a", "b", "poll", "free"]
ARGS = [{"p": 1}, {"p": 2}, {"s": CANARY}]


class Reference:
    """One session's warnings from the whole history (docs/policies.md, warn_at)."""

    def __init__(self, rules: list[dict], warn_at: int | None, max_repeats: int) -> None:
        self.rules, self.warn_at, self.max_repeats = rules, warn_at, max_repeats
        self.history: list[tuple[str, int]] = []
        self.last_id: object = None

    def rule(self, tool: str) -> dict | None:
        return next((rule for rule in self.rules if rule["match"] == tool), None)

    def call(self, tool: str, arg: int, call_id: object) -> tuple[bool, int | None] | None:
        """(denied, warn_at of a warning) of a counted call; None for a duplicate."""
        if call_id is not None and call_id == self.last_id and self.history:
            return None
        self.last_id = call_id
        self.history.append((tool, arg))
        run = 0
        for earlier in reversed(self.history):
            if earlier != (tool, arg):
                break
            run += 1
        rule = self.rule(tool) or {}
        if rule.get("exempt"):
            return False, None
        limit = rule.get("max_repeats", self.max_repeats)
        warn_at = rule.get("warn_at", self.warn_at)
        denied = run >= limit
        warned = not denied and warn_at is not None and run >= warn_at
        return denied, warn_at if warned else None


@st.composite
def policies(draw: st.DrawFn) -> tuple[str, list[dict], int | None]:
    rules: list[dict] = []
    lines: list[str] = []
    warn_at = draw(st.one_of(st.none(), st.integers(1, 6)))
    if warn_at is not None:
        lines.append(f"warn_at = {warn_at}")
    for tool in draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=3)):
        rule: dict = {"match": tool}
        if tool == "free":
            rule["exempt"] = True
        else:
            limit = draw(st.one_of(st.none(), st.integers(1, 6)))
            own = draw(st.one_of(st.none(), st.integers(1, 6)))
            if limit is not None:
                rule["max_repeats"] = limit
                if own is not None and own >= limit:
                    own = None
            if own is not None:
                rule["warn_at"] = own
            if limit is None and own is None:
                rule["max_repeats"] = 2
        rules.append(rule)
        lines.append("[[tools]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in rule.items()]
    return "\n".join(lines) + "\n", rules, warn_at


sequences = st.lists(
    st.tuples(st.sampled_from(TOOLS), st.integers(0, 2), st.sampled_from([None, "c1", "c2"])),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(policy=policies(), drawn=sequences, max_repeats=st.integers(1, 6))
def test_the_engine_warns_exactly_as_the_reference(policy, drawn, max_repeats) -> None:
    text, rules, warn_at = policy
    brake = LoopBrake(max_repeats, policy=policy_of(text)[0])
    reference = Reference(rules, warn_at, max_repeats)
    last = None
    for tool, arg, call_id in drawn:
        verdict = brake.check(tool, ARGS[arg], session_id="s", call_id=call_id)
        want = reference.call(tool, arg, call_id)
        if want is None:  # a duplicate gets the counted call's verdict, warning included
            assert verdict.duplicate and last is not None
            assert (verdict.denied, verdict.warn_at) == (last.denied, last.warn_at)
            continue
        assert (verdict.denied, verdict.warn_at) == want, (tool, arg, verdict)
        last = verdict


@settings(max_examples=100, deadline=None)
@given(drawn=sequences, warn_at=st.integers(1, 4))
def test_warn_at_never_changes_a_denial_or_a_count(drawn, warn_at) -> None:
    base = '[[tools]]\nmatch = "free"\nexempt = true\n[cycles]\nmax_repeats = 2\n[stop]\n'
    base += "after_denials = 2\n"
    plain = LoopBrake(4, policy=policy_of(base)[0])
    warned = LoopBrake(4, policy=policy_of(f"warn_at = {warn_at}\n" + base)[0])
    for tool, arg, call_id in drawn:
        a = plain.check(tool, ARGS[arg], session_id="s", call_id=call_id)
        b = warned.check(tool, ARGS[arg], session_id="s", call_id=call_id)
        assert a == b._replace(warn_at=None)
        assert b.warn_at is None or (not b.denied and not b.exempt and b.count >= warn_at)


# --- the stores ----------------------------------------------------------------------

STORE_POLICY = """\
warn_at = 2
[[tools]]
match = "poll"
max_repeats = 5
warn_at = 3
progress = true
[[tools]]
match = "free"
exempt = true
[stop]
after_denials = 2
"""


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    url = str(tmp_path / "state.db") if request.param == "sqlite" else None
    if url is None:
        url = request.getfixturevalue("redis_url")
    opened = open_store(url)
    yield opened
    opened.close()


_runs = iter(range(1 << 30))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=sequences, results=st.lists(st.sampled_from([None, 0, 1]), min_size=30))
@example(drawn=[("a", 0, "c1"), ("a", 0, "c2"), ("a", 0, "c2")], results=[None] * 30)
def test_each_store_warns_as_the_memory_brake(store, drawn, results) -> None:
    policy = policy_of(STORE_POLICY)[0]
    brake = LoopBrake(4, policy=policy)
    session = f"w{next(_runs)}"
    for (tool, arg, call_id), result in zip(drawn, results, strict=False):
        digest = call_digest(tool, ARGS[arg])
        state, duplicate = store.count_call(session, tool, digest, call_id, 4, policy=policy)
        got = brake.slot_verdict(state, session, call_id, duplicate)
        assert got == brake.observe(session, tool, digest, call_id)  # a duplicate: warned too
        if result is not None:
            result_digest = call_digest("result", {"r": result})
            store.observe_result(session, call_id, result_digest, policy)
            brake.observe_result(session, call_id, digest=result_digest)


# --- filter and replay: the warn marker, the counts ----------------------------------


def _events(tmp: Path, n: int = 4) -> Path:
    path = tmp / "calls.jsonl"
    line = json.dumps({"tool": "grep", "args": {"q": CANARY}, "sessionId": "s"})
    path.write_text((line + "\n") * n + json.dumps({"tool": "ls", "sessionId": "s"}) + "\n")
    return path


def _policy_and_events(tmp_path: Path, name: str, text: str) -> tuple[Path, Path, dict]:
    """A policy file, the events file of ``_events`` and an environment naming no policy."""
    policy = tmp_path / name
    policy.write_text(text)
    return policy, _events(tmp_path), cli_env(LOOP_BRAKE_POLICY="")


def test_filter_marks_a_warned_call_and_counts_it(tmp_path: Path) -> None:
    policy, events, env = _policy_and_events(tmp_path, "warn.toml", "warn_at = 2\n")
    done = run_cli("filter", "--policy", str(policy), "--summary", str(events), env=env)
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(v["verdict"], v.get("warn"), v.get("warnAt")) for v in lines] == [
        ("pass", None, None),
        ("pass", True, 2),
        ("deny", None, None),
        ("deny", None, None),
        ("pass", None, None),
    ]
    second = done.stdout.splitlines()[1].decode()
    assert second.startswith('{"verdict":"pass","line":2,"toolName":"grep"')
    assert second.endswith(
        ',"rule":"streak","limit":3,"warn":true,"warnAt":2,"warning":"loop brake: warning: '
        'tool \\"grep\\" called 2 times in a row with identical arguments (call '
        + lines[1]["hashPrefix"]
        + "\u2026, warn at 2, limit 3); this call runs, but a streak of 3 identical calls is "
        "denied.\\nChange the arguments, call a different tool, or stop if you are not making "
        'progress."}'
    )
    assert done.stderr.decode().splitlines()[-1].endswith(f"policy: {policy}; 1 warned")
    assert CANARY.encode() not in done.stdout + done.stderr


def test_filter_only_warn_prints_the_warned_calls_alone(tmp_path: Path) -> None:
    policy, events, env = _policy_and_events(tmp_path, "warn.toml", "warn_at = 2\n")
    warned = run_cli("filter", "--policy", str(policy), "--only", "warn", str(events), env=env)
    assert warned.returncode == 0
    assert [json.loads(line)["line"] for line in warned.stdout.splitlines()] == [2]
    both = run_cli(
        "filter", "--policy", str(policy), "--only", "warn", "--only", "deny", str(events), env=env
    )
    assert [json.loads(line)["line"] for line in both.stdout.splitlines()] == [2, 3, 4]
    passes = run_cli("filter", "--policy", str(policy), "--only", "pass", str(events), env=env)
    assert [json.loads(line)["line"] for line in passes.stdout.splitlines()] == [1, 2, 5]
    plain = run_cli("filter", "--only", "warn", str(events), env=env)  # no policy: the fast path
    assert plain.returncode == 0 and plain.stdout == b""
    for out in (warned, both, passes, plain):
        assert CANARY.encode() not in out.stdout + out.stderr


def test_a_rules_own_warn_at_alone_is_counted_in_the_summaries(tmp_path: Path) -> None:
    """No global warn_at, only a rule's: filter's and replay's summaries still count the
    warned calls (``Policy.uses_warn`` looks at the rules too)."""
    rule = '[[tools]]\nmatch = "grep"\nwarn_at = 2\n'
    policy, events, env = _policy_and_events(tmp_path, "rule-warn.toml", rule)
    filtered = run_cli("filter", "--policy", str(policy), "--summary", str(events), env=env)
    assert filtered.returncode == 0
    assert filtered.stderr.decode().splitlines()[-1].endswith(f"policy: {policy}; 1 warned")
    replayed = run_cli("replay", "--policy", str(policy), str(events), env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.decode().splitlines()[-1] == f"policy: {policy}; 1 call(s) warned"
    for out in (filtered, replayed):
        assert CANARY.encode() not in out.stdout + out.stderr


def test_a_policy_without_the_key_changes_no_filter_or_replay_output(tmp_path: Path) -> None:
    policy = tmp_path / "plain.toml"
    policy.write_text('[[tools]]\nmatch = "ls"\nmax_repeats = 9\n')
    events = _events(tmp_path)
    env = cli_env(LOOP_BRAKE_POLICY="")
    done = run_cli("filter", "--policy", str(policy), "--summary", str(events), env=env)
    assert b"warn" not in done.stdout + done.stderr
    done = run_cli("replay", "--policy", str(policy), str(events), env=env)
    assert b"warn" not in done.stdout + done.stderr
    doc = json.loads(run_cli("replay", "--json", "--policy", str(policy), str(events)).stdout)
    assert "warned" not in doc["totals"]


def test_replay_counts_warnings_and_its_verdicts_mark_them(tmp_path: Path) -> None:
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 1\n")
    events = _events(tmp_path, n=2)
    env = cli_env(LOOP_BRAKE_POLICY="")
    done = run_cli("replay", "--policy", str(policy), str(events), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1] == f"policy: {policy}; 3 call(s) warned"
    doc = json.loads(run_cli("replay", "--json", "--policy", str(policy), str(events)).stdout)
    assert doc["totals"]["warned"] == 3 and doc["totals"]["denied"] == 0
    shown = run_cli("replay", "--verdicts", "--policy", str(policy), str(events), env=env)
    marks = [json.loads(line).get("warnAt") for line in shown.stdout.splitlines()]
    assert marks == [1, 1, 1]
    for out in (done, shown):
        assert CANARY.encode() not in out.stdout + out.stderr


def test_the_docs_example_prints_what_docs_policies_shows() -> None:
    """The console block of docs/policies.md's warn_at section, run and compared."""
    import shlex
    import subprocess
    import sys

    from conftest import ROOT

    text = (ROOT / "docs/policies.md").read_text(encoding="utf-8")
    section = text.split("## Warn before deny: `warn_at`", 1)[1].split("\n## ", 1)[0]
    block = section.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    command, shown = block[0].removeprefix("$ "), block[1:]
    assert command.startswith("loop-brake ")
    command = f"{shlex.quote(sys.executable)} -m loop_brake_cli " + command.removeprefix(
        "loop-brake "
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, env=cli_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == shown


# --- the hook: each agent's warning field ---------------------------------------------

HOOK_INPUTS = {
    "claude-code": {"hook_event_name": "PreToolUse", "session_id": "s", "tool_use_id": "t{}"},
    "codex": {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "turn_id": "u",
        "tool_use_id": "t{}",
    },
    "gemini": {"hook_event_name": "BeforeTool", "session_id": "s"},
    "cursor": {"hook_event_name": "preToolUse", "conversation_id": "s", "generation_id": "g"},
}


def _hook_calls(agent: str, tmp: Path, *extra: str) -> list[bytes]:
    policy = tmp / "warn.toml"
    policy.write_text("warn_at = 2\n")
    outputs = []
    for number in range(1, 5):
        payload = {k: v.format(number) for k, v in HOOK_INPUTS[agent].items()}
        payload |= {"tool_name": "Bash", "tool_input": {"command": CANARY}}
        done = run_cli(
            "hook",
            "--agent",
            agent,
            "--policy",
            str(policy),
            "--state",
            str(tmp / "state.db"),
            "--log",
            str(tmp / "hook.log"),
            *extra,
            input=json.dumps(payload).encode(),
        )
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        assert CANARY.encode() not in done.stdout
        outputs.append(done.stdout)
    assert CANARY.encode() not in (tmp / "state.db").read_bytes() + (tmp / "hook.log").read_bytes()
    return outputs


@pytest.mark.parametrize("agent", list(HOOK_INPUTS))
def test_the_hook_answers_a_warned_call_in_each_agents_field(agent: str, tmp_path: Path) -> None:
    first, second, third, fourth = _hook_calls(agent, tmp_path)
    assert first == b""
    warning = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        expected = warning.check("Bash", {"command": CANARY}).warning
    if agent == "claude-code":
        assert json.loads(second) == {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": expected}
        }
    elif agent in ("codex", "gemini"):
        assert json.loads(second) == {"systemMessage": expected}
    else:  # Cursor: no field for text beside an undecided call
        assert second == b""
    assert b"deny" in third and b"deny" in fourth  # the deny is unchanged
    logged = [json.loads(line) for line in (tmp_path / "hook.log").read_text().splitlines()]
    assert [(v["verdict"], v.get("warnAt")) for v in logged] == [
        ("pass", 2),
        ("deny", None),
        ("deny", None),
    ]


def test_under_shadow_the_hook_logs_the_warning_and_prints_nothing(tmp_path: Path) -> None:
    outputs = _hook_calls("claude-code", tmp_path, "--shadow")
    assert outputs == [b""] * 4
    logged = [json.loads(line) for line in (tmp_path / "hook.log").read_text().splitlines()]
    assert logged[0]["warn"] is True and logged[0]["count"] == 2


# --- mcp-proxy: a text block appended to a warned call's result ------------------------


def test_append_warning_splices_a_block_and_keeps_the_servers_bytes() -> None:
    from loop_brake_cli.mcp_shared.answers import append_warning

    data = b'{"jsonrpc":"2.0","id":12345678901234567891,"result":{"content":[{"type":"text",'
    data += b'"text":"x"}],"isError":false}}'
    got = append_warning(data, "W \u2026")
    assert got == data.replace(b'"x"}]', b'"x"},{"type":"text","text":"W \xe2\x80\xa6"}]')
    empty = b'{"id":1,"result":{"structuredContent":{},"content":[ ]}}'
    assert (
        append_warning(empty, "W")
        == b'{"id":1,"result":{"structuredContent":{},"content":[ {"type":"text","text":"W"}]}}'
    )
    for unchanged in (b'{"id":1,"error":{"code":-1,"message":"m"}}', b'{"id":1,"result":{}}'):
        assert append_warning(unchanged, "W") == unchanged


def test_mcp_proxy_appends_the_warning_to_a_warned_calls_result(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import sys

    import anyio
    from conftest import ROOT
    from mcp import ClientSession, StdioServerParameters, stdio_client

    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    log = tmp_path / "verdicts.jsonl"
    stderr_path = tmp_path / "stderr.txt"
    args = {"text": f"look up {CANARY}"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "loop_brake_cli", "mcp-proxy", "--policy", str(policy), "--log", str(log)]
        + ["--", sys.executable, str(ROOT / "tests" / "mcp_server.py")],
        env={"MCP_TEST_CALLS": str(tmp_path / "calls.jsonl")},
        cwd=ROOT,
    )
    results: list = []

    async def session() -> None:
        with stderr_path.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    for _ in range(3):
                        results.append(await client.call_tool("echo", args))
                    results.append(await client.call_tool("add", {"a": 2, "b": 3}))

    anyio.run(session)
    first, second, third, other = results
    assert [block.text for block in first.content] == [args["text"]]
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("echo", args).warning
    assert not second.is_error
    assert [block.text for block in second.content] == [args["text"], warning]
    assert third.is_error and "denied before it ran" in third.content[0].text
    assert [block.text for block in other.content] == ["5"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v.get("warnAt")) for v in lines] == [
        ("pass", None),
        ("pass", 2),
        ("deny", None),
        ("pass", None),
    ]
    assert CANARY not in log.read_text() + stderr_path.read_text()
    assert CANARY not in warning + third.content[0].text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_mcp_gateway_appends_the_warning_to_a_warned_calls_result(
    mode: str, tmp_path: Path
) -> None:
    """Both the stateless protocol and the initialize handshake (whose answers the
    upstream may stream as SSE), through a real SDK HTTP server."""
    pytest.importorskip("mcp")
    import anyio
    from remote_helpers import gateway, upstream
    from test_mcp_gateway import connect, in_session

    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    args = {"text": f"look up {CANARY}"}
    results: list = []
    with (
        upstream(tmp_path) as (up, _calls),
        gateway(tmp_path, up, "--policy", str(policy)) as (url, log, stderr),
    ):

        async def run() -> None:
            async with connect(url, mode) as client:
                for _ in range(3):
                    results.append(await client.call_tool("echo", args, meta=in_session("a")))

        anyio.run(run)
    first, second, third = results
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("echo", args).warning
    assert [block.text for block in first.content] == [args["text"]]
    assert not second.is_error
    assert [block.text for block in second.content] == [args["text"], warning]
    assert third.is_error and "denied before it ran" in third.content[0].text
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v.get("warnAt")) for v in lines] == [
        ("pass", None),
        ("pass", 2),
        ("deny", None),
    ]
    assert CANARY not in log.read_text() + stderr.read_text()


def test_the_gateway_adds_the_warning_to_an_sse_stream_cut_anywhere() -> None:
    pytest.importorskip("starlette")
    import anyio

    from loop_brake_cli.mcp_gateway.app import _Reply, _warned

    response = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}'
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'
    other = response.replace(b'"id":7', b'"id":"7"')  # another id: "7" is not 7
    stream = b"event: message\r\ndata: " + note + b"\r\n\r\ndata: " + other + b"\n\n"
    stream += b"event: message\ndata: " + response + b"\n\ndata: " + response + b"\n\n"
    warned = response.replace(b'"x"}]', b'"x"},{"type":"text","text":"W"}]')
    want = stream.replace(b"data: " + response, b"data: " + warned, 1)

    async def collect(size: int, kind: str, body: bytes) -> bytes:
        async def chunks():
            for at in range(0, len(body), size):
                yield body[at : at + size]

        reply = _Reply(7, "W")
        return b"".join([part async for part in _warned(chunks(), kind, reply)])

    for size in (1, 5, 17, len(stream)):
        assert anyio.run(collect, size, "text/event-stream", stream) == want
    assert anyio.run(collect, 3, "application/json", response) == warned
    assert anyio.run(collect, 3, "application/json", other) == other
    assert anyio.run(collect, 3, "text/plain", response) == response


# --- integrations ---------------------------------------------------------------------


def test_the_mcp_sdk_integration_adds_the_warning_to_the_result() -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, TextContent

    from loop_brake_cli.integrations.mcp import attach, with_warning

    server = MCPServer("warned")
    ran: list[str] = []

    @server.tool()
    def search(q: str) -> str:
        """Search."""
        ran.append(q)
        return f"results for {q}"

    attach(server, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    args = {"q": CANARY}

    async def main() -> list:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool("search", args) for _ in range(3)]

    first, second, third = anyio.run(main)
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", args).warning
    assert [b.text for b in first.content] == [f"results for {CANARY}"]
    assert [b.text for b in second.content] == [f"results for {CANARY}", warning]
    assert not second.is_error and second.structured_content == {"result": f"results for {CANARY}"}
    assert third.is_error and ran == [CANARY, CANARY]
    assert CANARY not in warning
    model = CallToolResult(content=[TextContent(type="text", text="r")])
    assert [b.text for b in with_warning(model, "W").content] == ["r", "W"]
    assert with_warning("plain", "W") == "plain"


def test_the_langchain_integration_tells_the_model_in_the_tool_message() -> None:
    pytest.importorskip("langchain")
    from langchain_core.messages import ToolMessage
    from test_integration_langchain import make_agent, script, tool_messages

    from loop_brake_cli.integrations.langchain import LoopBrakeMiddleware
    from loop_brake_cli.integrations.langgraph import with_warning

    ran: list[str] = []
    model = script([{"q": CANARY}] * 3)
    middleware = LoopBrakeMiddleware(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    agent = make_agent(model, ran, middleware)
    result = agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "w"}})
    replies = tool_messages(result)
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert [m.status for m in replies] == ["success", "success", "error"]
    assert replies[0].content == f"results for {CANARY}"
    assert replies[1].content == f"results for {CANARY}\n\n{warning}"
    assert replies[1].tool_call_id == "c1"
    # the model read it on its next turn, before the third call was denied
    assert any(isinstance(m, ToolMessage) and warning in m.content for m in model.seen[2])
    assert ran == [CANARY, CANARY]
    listed = with_warning(
        ToolMessage(content=[{"type": "text", "text": "r"}], tool_call_id="x"), "W"
    )
    assert listed.content == [{"type": "text", "text": "r"}, {"type": "text", "text": "W"}]


def test_the_fastmcp_integration_adds_the_warning_to_the_result() -> None:
    pytest.importorskip("fastmcp")
    import anyio
    from test_integration_fastmcp import make_server

    from loop_brake_cli.integrations.fastmcp import attach

    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])

    async def main() -> list:
        from fastmcp import Client

        async with Client(server, mode="legacy") as client:
            return [
                await client.call_tool("search", {"q": CANARY}, raise_on_error=False)
                for _ in range(3)
            ]

    first, second, third = anyio.run(main)
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert [b.text for b in first.content] == [f"results for {CANARY}"]
    assert [b.text for b in second.content] == [f"results for {CANARY}", warning]
    assert third.is_error and ran == [CANARY, CANARY]


def test_the_claude_agent_sdk_hook_answers_with_additional_context() -> None:
    pytest.importorskip("claude_agent_sdk")
    import anyio

    from loop_brake_cli.integrations.claude_agent_sdk import LoopBrakeHooks

    hooks = LoopBrakeHooks(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])

    def payload(number: int) -> dict:
        return {
            "hook_event_name": "PreToolUse",
            "session_id": "s",
            "tool_name": "Bash",
            "tool_input": {"command": CANARY},
            "tool_use_id": f"t{number}",
        }

    async def main() -> list:
        return [await hooks.pre_tool_use(payload(n), f"t{n}", None) for n in range(3)]

    first, second, third = anyio.run(main)
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("Bash", {"command": CANARY}).warning
    assert first == {}
    assert second == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": warning}
    }
    assert third["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_langgraph_tool_node_wrapper_tells_the_model_in_the_tool_message() -> None:
    pytest.importorskip("langgraph")
    from test_integration_langgraph import braked, script, tool_messages

    from loop_brake_cli.integrations.langgraph import LoopBrakeWrapper

    ran: list[str] = []
    model = script(CANARY, CANARY, CANARY)
    wrapper = LoopBrakeWrapper(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    result = braked(model, ran, wrapper).invoke({"messages": [("user", "go")]})
    replies = tool_messages(result)
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert [m.status for m in replies] == ["success", "success", "error"]
    assert replies[1].content == f"results for {CANARY}\n\n{warning}"
    assert ran == [CANARY, CANARY]


def test_the_google_adk_plugin_adds_the_warning_to_the_response() -> None:
    pytest.importorskip("google.adk")
    import asyncio

    from test_integration_google_adk import call, make_runner, run, script

    from loop_brake_cli.integrations.google_adk import LoopBrakePlugin

    ran: list[str] = []
    model = script(*[call(CANARY) for _ in range(3)])
    plugin = LoopBrakePlugin(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    responses = asyncio.run(run(make_runner(model, ran, plugin)))
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert responses[0] == {"result": f"results for {CANARY}"}
    assert responses[1] == {"result": f"results for {CANARY}", "loop_brake_warning": warning}
    assert "error" in responses[2] and ran == [CANARY, CANARY]
    seen = [part.function_response for part in model.requests[2].contents[-1].parts]
    assert seen[0].response["loop_brake_warning"] == warning  # the model read it


@pytest.mark.parametrize("kind", ["toolset", "capability"])
def test_the_pydantic_ai_integration_sends_the_warning_with_the_return(kind: str) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent, FunctionToolset, ToolReturn
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models.function import FunctionModel
    from test_integration_pydantic_ai import Looper, is_retry, is_return, make_agent

    from loop_brake_cli.integrations.pydantic_ai import LoopBrakeCapability, with_warning

    ran: list[str] = []
    looper = Looper([{"q": CANARY}] * 3)
    policy = policy_of("warn_at = 2\n")[0]
    if kind == "toolset":
        agent = make_agent(looper, ran, max_repeats=3, policy=policy)
    else:

        def search(q: str) -> str:
            """Search the web."""
            ran.append(q)
            return f"results for {q}"

        agent = Agent(
            FunctionModel(looper),
            toolsets=[FunctionToolset([search])],
            capabilities=[LoopBrakeCapability(max_repeats=3, policy=policy)],
        )
    result = agent.run_sync("go")
    expected = LoopBrake(3, policy=policy)
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    told = looper.told
    assert is_return(told["c0"]) and is_return(told["c1"]) and is_retry(told["c2"])
    assert told["c1"].content == f"results for {CANARY}"  # the return value itself
    sent = [
        part.content
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]
    assert [warning] in sent or warning in sent  # beside the return, to the model
    assert ran == [CANARY, CANARY]
    kept = with_warning(ToolReturn(return_value=1, content="own", metadata={"m": 1}), "W")
    assert (kept.return_value, kept.content, kept.metadata) == (1, ["own", "W"], {"m": 1})


def test_the_autogen_workbench_adds_the_warning_to_the_tool_result() -> None:
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.replay")
    import asyncio

    from test_integration_autogen import agent_with, client, results

    ran: list[str] = []
    policy = policy_of("warn_at = 2\n")[0]
    task = asyncio.run(
        agent_with(client(*[CANARY] * 3), ran, max_repeats=3, policy=policy).run(task="go")
    )
    expected = LoopBrake(3, policy=policy)
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    got = results(task)
    assert [r.is_error for r in got] == [False, False, True]
    assert got[0].content == f"results for {CANARY}"
    assert got[1].content == f"results for {CANARY}\n{warning}"
    assert ran == [CANARY, CANARY]


def test_the_llama_index_agent_reads_the_warning_in_the_tool_output() -> None:
    pytest.importorskip("llama_index.core")
    import asyncio

    from test_integration_llama_index import make_agent, run, scripted

    from loop_brake_cli.integrations.llama_index import attach

    ran: list[str] = []
    seen: list = []
    agent = make_agent(scripted(*[(CANARY,)] * 3, seen=seen), ran)
    attach(agent, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    outputs = asyncio.run(run(agent))
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert [o.is_error for o in outputs] == [False, False, True]
    assert outputs[1].content == f"results for {CANARY}\n{warning}"
    assert warning.splitlines()[0] in str(seen[2])  # the model read it on its next turn
    assert ran == [CANARY, CANARY]


def test_the_smolagents_tool_calling_agent_reads_the_warning_in_its_observation() -> None:
    pytest.importorskip("smolagents")
    from test_integration_smolagents import calls, tool_agent

    from loop_brake_cli.integrations.smolagents import attach

    ran: list[str] = []
    agent = tool_agent([calls(CANARY, tag=f"c{i}") for i in range(3)], ran)
    attach(agent, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    assert agent.run("go") == "done"
    expected = LoopBrake(3, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(2):
        warning = expected.check("search", {"q": CANARY}).warning
    assert ran == [CANARY, CANARY]
    assert warning.splitlines()[0] not in str(agent.model.prompts[1])  # not at count 1
    assert warning.splitlines()[0] in str(agent.model.prompts[2])  # read after the 2nd


def test_partials_of_a_warned_replay_merge_into_its_summary(tmp_path: Path) -> None:
    """replay --partial then merge gives replay's own summary and --json, warnings counted;
    a partial of a policy without warn_at holds no warned key."""
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 1\n")
    one, two = tmp_path / "a", tmp_path / "b"
    one.mkdir(), two.mkdir()
    first, second = _events(one, n=2), _events(two, n=3)
    env = cli_env(LOOP_BRAKE_POLICY="")
    whole = run_cli("replay", "--policy", str(policy), str(first), str(second), env=env)
    whole_json = run_cli("replay", "--json", "--policy", str(policy), str(first), str(second))
    parts = []
    for index, path in enumerate((first, second)):
        part = tmp_path / f"part{index}.json"
        done = run_cli("replay", "--policy", str(policy), "--partial", str(part), str(path))
        assert done.returncode == 0, done.stderr
        parts.append(str(part))
    merged = run_cli("merge", *parts, env=env)
    merged_json = run_cli("merge", "--json", *parts, env=env)
    assert merged.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1]
    assert whole.stdout.splitlines()[-1].endswith(b"; 6 call(s) warned")
    assert json.loads(merged_json.stdout)["totals"] == json.loads(whole_json.stdout)["totals"]
    plain = tmp_path / "plain.toml"
    plain.write_text('[[tools]]\nmatch = "ls"\nmax_repeats = 9\n')
    part = tmp_path / "plain.json"
    run_cli("replay", "--policy", str(plain), "--partial", str(part), str(first))
    assert "warned" not in json.loads(part.read_text())


# --- the front-ends that told the model nothing before (issue: warn_at everywhere) -----

PLAIN_POLICY = '[[tools]]\nmatch = "other"\nmax_repeats = 9\n'  # a policy without warn_at


def _expected_warning(tool: str, args: dict, count: int = 2, limit: int = 3) -> str:
    reference = LoopBrake(limit, policy=policy_of("warn_at = 2\n")[0])
    for _ in range(count):
        warning = reference.check(tool, args).warning
    assert warning is not None and CANARY not in warning
    return warning


def test_the_openai_agents_guardrail_sends_the_warning_after_the_output(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("agents")
    import logging

    from agents import Runner
    from test_integration_openai_agents import OFFLINE, make_agent, outputs_seen, script

    from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail

    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    ran: list[str] = []
    model = script([{"q": CANARY}] * 3)
    guard = LoopBrakeGuardrail(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    result = Runner.run_sync(make_agent(model, ran, guard), "go", run_config=OFFLINE)
    warning = _expected_warning("search", {"q": CANARY})
    seen = outputs_seen(model)  # what the model was given, by call id
    assert seen["c0"] == f"results for {CANARY}"
    assert seen["c1"] == f"results for {CANARY}\n\n{warning}"
    assert seen["c2"].startswith('loop brake: tool "search" called 3 times') and ran == [CANARY] * 2
    warned = [
        r.output.output_info
        for r in result.tool_output_guardrail_results
        if r.output.behavior["type"] == "reject_content"
    ]
    assert len(warned) == 1 and warned[0]["warnAt"] == 2 and warned[0]["count"] == 2
    out, err = capfd.readouterr()
    shown = [warning, repr(warned), out, err, caplog.text]
    assert all(CANARY not in text for text in shown)


@pytest.mark.parametrize("policy", [None, PLAIN_POLICY])
def test_the_openai_agents_outputs_without_warn_at_are_the_tools_own(policy) -> None:
    pytest.importorskip("agents")
    from agents import Runner
    from test_integration_openai_agents import OFFLINE, make_agent, outputs_seen, script

    from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail

    model = script([{"q": "w"}] * 2)
    guard = LoopBrakeGuardrail(max_repeats=3, policy=policy and policy_of(policy)[0])
    result = Runner.run_sync(make_agent(model, [], guard), "go", run_config=OFFLINE)
    assert outputs_seen(model) == {"c0": "results for w", "c1": "results for w"}
    behaviors = [r.output.behavior for r in result.tool_output_guardrail_results]
    assert behaviors == [{"type": "allow"}] * 2


def test_the_openai_agents_output_with_a_json_schema_is_left_as_it_is() -> None:
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool
    from test_integration_openai_agents import OFFLINE, outputs_seen, script

    from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail

    @function_tool(output_json_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def search(q: str) -> dict:
        """Search the web."""
        return {"n": len(q)}

    model = script([{"q": CANARY}] * 2)
    guard = LoopBrakeGuardrail(max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    agent = guard.brake_agent(Agent(name="looper", model=model, tools=[search]))
    Runner.run_sync(agent, "go", run_config=OFFLINE)
    seen = outputs_seen(model)
    assert seen["c0"] == seen["c1"] and "loop brake" not in seen["c1"]


def _observations(agent) -> list:
    return [getattr(step, "observations", None) for step in agent.memory.steps]


def test_the_smolagents_code_agent_prints_the_warning_to_its_execution_logs() -> None:
    pytest.importorskip("smolagents")
    from test_integration_smolagents import code, code_agent

    from loop_brake_cli.integrations.smolagents import attach

    ran: list[str] = []
    agent = code_agent([code("weather"), code("weather"), code("weather")], ran)
    attach(agent, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    assert agent.run("go") == "done"
    warning = _expected_warning("search", {"q": "weather"})
    assert ran == ["weather", "weather"]
    seen = _observations(agent)
    assert seen[1] == "Execution logs:\nresults for weather\nLast output from code snippet:\nNone"
    assert seen[2] == (  # the warning at the call, then the code prints the tool's value
        f"Execution logs:\n{warning}\nresults for weather\nLast output from code snippet:\nNone"
    )
    assert warning.splitlines()[0] in str(agent.model.prompts[2])  # read before its third call
    assert 'loop brake: tool "search" called 3 times' in str(agent.memory.steps[3].error)


def test_the_smolagents_code_agent_warning_stays_when_the_code_then_fails() -> None:
    pytest.importorskip("smolagents")
    from smolagents.models import ChatMessage, MessageRole
    from test_integration_smolagents import code_agent

    from loop_brake_cli.integrations.smolagents import attach

    failing = "Thought: go\n<code>\nx = search(q='w')\nx = search(q='w')\nprint(1 / 0)\n</code>"
    step = ChatMessage(role=MessageRole.ASSISTANT, content=failing)
    agent = code_agent([step], [])
    attach(agent, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    agent.run("go")
    warning = _expected_warning("search", {"q": "w"})
    assert _observations(agent)[1] == f"Execution logs:\n{warning}\n"
    assert "division by zero" in str(agent.memory.steps[1].error)


def test_the_smolagents_tool_calling_agent_warns_after_a_non_text_output() -> None:
    pytest.importorskip("smolagents")
    from smolagents import ToolCallingAgent, tool
    from smolagents.monitoring import LogLevel
    from test_integration_smolagents import ScriptedModel, calls

    from loop_brake_cli.integrations.smolagents import attach

    @tool
    def search(q: str) -> dict:
        """Search the web.

        Args:
            q: what to search for.
        """
        return {"hits": 3}

    outputs: list = []
    model = ScriptedModel([calls(CANARY, tag=f"c{i}") for i in range(2)] + [calls(None)])
    agent = ToolCallingAgent(tools=[search], model=model, verbosity_level=LogLevel.OFF)
    attach(agent, max_repeats=3, policy=policy_of("warn_at = 2\n")[0])
    for event in agent.run("go", stream=True):
        if type(event).__name__ == "ToolOutput":
            outputs.append(event.output)
    warning = _expected_warning("search", {"q": CANARY})
    assert outputs == [{"hits": 3}, {"hits": 3}, "done"]  # the values, as the tool gave them
    seen = _observations(agent)
    assert seen[1] == "{'hits': 3}" and seen[2] == "{'hits': 3}\n" + warning
    assert warning.splitlines()[0] in str(model.prompts[2])


@pytest.mark.parametrize("policy", [None, PLAIN_POLICY])
@pytest.mark.parametrize("kind", ["tool", "code"])
def test_the_smolagents_agents_without_warn_at_read_what_they_read_unbraked(policy, kind):
    pytest.importorskip("smolagents")
    from test_integration_smolagents import calls, code, code_agent, tool_agent

    from loop_brake_cli.integrations.smolagents import attach

    def run(braked: bool) -> tuple:
        if kind == "tool":
            agent = tool_agent([calls("w", "w", tag=f"c{i}") for i in range(2)], [])
        else:
            agent = code_agent([code("w", "w"), code("w")], [])
        if braked:
            attach(agent, max_repeats=9, policy=policy and policy_of(policy)[0])
        agent.run("go")
        return _observations(agent), [str(p) for p in agent.model.prompts]

    assert run(True) == run(False)


def test_the_smolagents_warnings_hold_no_argument(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("smolagents")
    import logging

    from test_integration_smolagents import calls, code, code_agent, tool_agent

    from loop_brake_cli.integrations.smolagents import attach

    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    coder = code_agent([code(CANARY, CANARY)], [], result=lambda: "ok")
    caller = tool_agent([calls(CANARY, tag=f"c{i}") for i in range(2)], [], result=lambda: "ok")
    for agent in (coder, caller):
        attach(agent, max_repeats=3, policy=policy_of("warn_at = 1\n")[0])
        agent.run("go")
    logs, observation = _observations(coder)[1], _observations(caller)[2]
    assert logs.count("loop brake: warning:") == 2 and observation.startswith("ok\n\nloop brake")
    out, err = capfd.readouterr()
    assert all(CANARY not in text for text in [logs, observation, caplog.text, out, err])


def test_wrap_execute_and_decorate_tool_return_a_str_result_with_the_warning(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    import logging

    from loop_brake_cli import LoopBrakeError, decorate_tool, wrap_execute

    caplog.set_level(logging.DEBUG, logger="loop_brake_cli")
    policy = policy_of("warn_at = 2\n")[0]
    warning = _expected_warning("search", {"q": CANARY})
    ran: list[str] = []

    def search(args: dict) -> str:
        ran.append(args["q"])
        return "found it"

    async def search_async(args: dict) -> str:
        return search(args)

    guarded = wrap_execute(search, LoopBrake(3, policy=policy), tool="search", session_id="s")
    assert guarded({"q": CANARY}) == "found it"
    assert guarded({"q": CANARY}) == f"found it\n\n{warning}"
    with pytest.raises(LoopBrakeError) as denied:
        guarded({"q": CANARY})
    assert ran == [CANARY, CANARY]
    tool = decorate_tool({"name": "search", "execute": search_async}, LoopBrake(3, policy=policy))

    async def twice() -> list:
        return [await tool["execute"]({"q": CANARY}) for _ in range(2)]

    assert asyncio.run(twice()) == ["found it", f"found it\n\n{warning}"]
    empty = wrap_execute(lambda args: "", LoopBrake(3, policy=policy), tool="search")
    assert [empty({"q": CANARY}) for _ in range(2)] == ["", warning]
    out, err = capfd.readouterr()
    assert all(CANARY not in t for t in [warning, str(denied.value), caplog.text, out, err])


def test_a_warned_call_passing_two_seams_is_warned_once() -> None:
    """One host call seen at two seams (one call_id) is counted once, and warned once:
    at the seam that counted it; the duplicate's result comes back as it is."""
    from loop_brake_cli import wrap_execute

    policy = policy_of("warn_at = 2\n")[0]
    warning = _expected_warning("search", {"q": CANARY})
    guarded = wrap_execute(
        lambda args, call_id=None: "found it", LoopBrake(3, policy=policy), tool="search"
    )
    assert guarded({"q": CANARY}, call_id="c1") == "found it"
    assert guarded({"q": CANARY}, call_id="c2") == f"found it\n\n{warning}"
    assert guarded({"q": CANARY}, call_id="c2") == "found it"  # the second seam


@pytest.mark.parametrize("policy", [None, PLAIN_POLICY])
def test_wrap_execute_results_without_warn_at_are_the_tools_own(policy) -> None:
    from loop_brake_cli import decorate_tool, wrap_execute

    class Text(str):
        pass

    results = ["a text", Text("its own type"), {"hits": 3}, None, ""]
    for result in results:
        brake = LoopBrake(9, policy=policy and policy_of(policy)[0])
        guarded = wrap_execute(lambda args, result=result: result, brake, tool="t")
        assert [guarded({"q": 1}) for _ in range(3)] == [result] * 3
        assert all(type(guarded({"q": 1})) is type(result) for _ in range(2))
        tool = decorate_tool({"name": "t", "execute": lambda args, r=result: r}, brake)
        assert tool["execute"]({"q": 1}) is result


def test_wrap_execute_leaves_a_warned_result_that_is_not_a_str_as_it_is() -> None:
    from loop_brake_cli import wrap_execute

    value = {"hits": 3}
    guarded = wrap_execute(
        lambda args: value, LoopBrake(3, policy=policy_of("warn_at = 1\n")[0]), tool="t"
    )
    assert guarded({"q": CANARY}) is value and guarded({"q": CANARY}) is value
