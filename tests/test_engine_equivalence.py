"""One engine: every front-end gives the same verdict, count and hash prefix, call by call.

Hypothesis draws sequences of calls with the edges where front-ends used to
drift: numbers that are equal as doubles (``1`` and ``1.0``), keys whose
UTF-16 order differs from their code-point order, arguments sent as a JSON
string, ``null`` arguments, empty and non-string session ids, repeated and
numeric call ids, continuation params no server asked for (``inputResponses``,
``requestState``: counted as calls), non-string tool names, lone surrogates in tool names, session
ids and call ids, JSON-RPC ids that are not call ids (``1.5``, ``1e400``, 30
digits, ``true``, an object, an array). The same calls are then expressed in
each wire shape and judged by

* ``filter`` on event lines (the reference),
* ``loop-brake hook`` in each of the four agent dialects (its real entry point,
  one decision per input, a fresh state store per sequence),
* ``replay --verdicts`` of those hook inputs logged one per line,
* ``loop-brake mcp-proxy`` in front of a real subprocess (its ``--log``),
* ``replay --verdicts`` of the same client traffic recorded as ``STDIN:`` lines;
* and ``filter``, ``loop-brake hook`` and ``mcp-proxy`` counting in a shared Redis
  store (``--store redis://``, a real redis-server, flushed for each front-end).

Under ``reset_on_user_turn`` (issue 29) the sequences also hold user turns,
expressed as the event line ``{"type": "user"}``, each agent's user-turn hook
input, a log of those inputs, and ``LoopBrake.user_turn`` in the library; the
same verdicts are required of all of them, in memory, SQLite and Redis.

Where ``filter`` gives an error verdict, the hook must let the call run (it
fails open) and the logs and replays must give the same error line.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_batch import CliBatch
from conftest import ROOT, cli_env, run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp_reference import equal_until, proxy_log

from loop_brake_cli.hook.runner import main as hook_main

CANARY = "canary-7f3e-engine-secret"

# JSON texts of arguments. Pairs that are one call: 1 and 1.0; key orders.
ARGS = [
    '{"q":"x","n":1}',
    '{"n":1.0,"q":"x"}',
    '{"q":"y"}',
    "{}",
    "[1,2]",
    '{"10\\udfff":100,"10\\ud83d\\ude00":false}',
    '{"10\\ud83d\\ude00":false,"10\\udfff":100.0}',
    '{"\\ue000":1,"\\ud800":2,"\\U0001f600":3}'.replace("\\U0001f600", "\\ud83d\\ude00"),
    '{"k":9007199254740993}',
    '{"k":9007199254740992}',
    '{"big":1e400}',
    '"plain text, not JSON"',
    '{"secret":"' + CANARY + '"}',
    "null",
]
TOOLS = ["search", "read", "", 7, "\ud800x"]  # a lone surrogate: valid JSON, not valid text
SESSIONS = ["s1", "s1", "s2", "", None, 42, "s\udfff", "s\udc00"]


class RawJSON:
    """An id written as this JSON text: one that is not a string or an integer within
    +-2**53 (``1e400`` has no Python value that ``json.dumps`` writes back as it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"RawJSON({self.text!r})"


# JSON-RPC ids a client may send that the brake cannot compare: the MCP decoder judges
# such a call without a call id (filter refuses such a callId: the reference has none).
ODD_IDS = [RawJSON(text) for text in ("1.5", "1e400", "1" * 30, "true", '{"k":[1]}', "[1,2]")]
CALL_IDS = ["c1", "c2", "c3", 7, None, "c\udc00", *ODD_IDS]
AGENTS = ("claude-code", "codex", "gemini", "cursor")
COMPARED = ("verdict", "toolName", "sessionId", "callId", "count", "maxRepeats", "hashPrefix")


# params that mark a retry of a call the server answered with input_required; sent
# without such an answer (a client's forgery, or a stale retry) they continue nothing
CONTINUATIONS = [
    "",
    "",
    '"inputResponses":{},',
    '"requestState":"forged",',
    '"inputResponses":{"k":{"action":"accept"}},"requestState":"s1",',
]


@st.composite
def calls(draw: st.DrawFn) -> list[dict]:
    """A sequence of calls; streaks are likely (each call often repeats the last)."""
    out: list[dict] = []
    for _ in range(draw(st.integers(1, 14))):
        if out and draw(st.integers(0, 2)) > 0:
            call = dict(out[-1])
            call["id"] = draw(st.sampled_from(CALL_IDS))
        else:
            call = {
                "tool": draw(st.sampled_from(TOOLS)),
                "args": draw(st.sampled_from(ARGS)),
                "session": draw(st.sampled_from(SESSIONS)),
                "id": draw(st.sampled_from(CALL_IDS)),
            }
        call["as_string"] = draw(st.booleans())  # arguments sent as a JSON string
        # continuation params no server asked for (issue 36.1): each is a call, counted
        call["continuation"] = draw(st.sampled_from(CONTINUATIONS))
        out.append(call)
    return out


def _json(value: object) -> str:
    """JSON text; a string holding a lone surrogate (no UTF-8 form) with ``\\u`` escapes."""
    if isinstance(value, RawJSON):
        return value.text
    text = json.dumps(value, ensure_ascii=False)
    if any("\ud800" <= char <= "\udfff" for char in text):
        return json.dumps(value)
    return text


def _wire_args(call: dict) -> str:
    """The arguments as a wire shape that defines them as an object carries them."""
    text = call["args"]
    if call["as_string"] and text != "null":
        return _json(text)
    return text


def event_line(call: dict, session: object) -> str:
    fields = [f'"tool":{_json(call["tool"])}', f'"args":{call["args"]}']
    if session is not None:
        fields.append(f'"sessionId":{_json(session)}')
    if call["id"] is not None:
        fields.append(f'"callId":{_json(call["id"])}')
    return "{" + ",".join(fields) + "}"


def hook_input(agent: str, call: dict) -> str:
    """The pre-tool input each agent sends, as its documentation shows it."""
    fields: list[str] = []
    session = call["session"]
    if agent == "cursor":
        fields += ['"hook_event_name":"preToolUse"', '"generation_id":"g1"']
        if session is not None:
            fields.append(f'"conversation_id":{_json(session)}')
    else:
        event = "BeforeTool" if agent == "gemini" else "PreToolUse"
        fields += [f'"hook_event_name":"{event}"', '"cwd":"/work"', '"transcript_path":"/t"']
        if session is not None:
            fields.append(f'"session_id":{_json(session)}')
        if agent == "codex":
            fields.append('"turn_id":"t1"')
    fields.append(f'"tool_name":{_json(call["tool"])}')
    fields.append(f'"tool_input":{_wire_args(call)}')
    if agent != "gemini" and call["id"] is not None:
        fields.append(f'"tool_use_id":{_json(call["id"])}')
    return "{" + ",".join(fields) + "}"


def mcp_request(call: dict, number: int) -> str:
    request_id = call["id"] if call["id"] is not None else f"r{number}"
    return (
        f'{{"jsonrpc":"2.0","id":{_json(request_id)},"method":"tools/call",'
        f'"params":{{"name":{_json(call["tool"])},"arguments":{_wire_args(call)},'
        f'{call.get("continuation", "")}"_meta":{{"progressToken":{number}}}}}}}'
    )


def verdict_lines(stdout: bytes) -> list[dict]:
    return [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]


def logged_verdicts(path: Path) -> list[dict]:
    """A hook's verdict log: written at its first denial (or fail-open), so a log not
    there yet holds no verdict."""
    return verdict_lines(path.read_bytes() if path.exists() else b"")


def compared(verdict: dict) -> tuple:
    if verdict["verdict"] == "error":
        return ("error",)
    return tuple(verdict.get(key) for key in COMPARED) + (verdict.get("duplicate", False),)


def filter_verdicts(
    tmp: Path, lines: list[str], max_repeats: int, store: str | None = None, *extra: str
) -> list[dict]:
    path = tmp / "events.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    where = ("--store", store) if store else ()
    result = run_cli("filter", "-m", str(max_repeats), *where, *extra, str(path))
    assert result.returncode in (0, 3), result.stderr
    return verdict_lines(result.stdout)


def replay_verdicts(path: Path, fmt: str, max_repeats: int, *extra: str) -> list[dict]:
    result = run_cli(
        "replay", "--verdicts", "--format", fmt, "-m", str(max_repeats), *extra, str(path)
    )
    assert result.returncode in (0, 3), result.stderr
    assert CANARY.encode() not in result.stdout + result.stderr
    return verdict_lines(result.stdout)


def run_hook(
    agent: str,
    inputs: list[str],
    tmp: Path,
    max_repeats: int,
    store: str | None = None,
    *extra: str,
) -> list[str]:
    """Each input through the hook's real entry point; 'deny', 'allow' or 'fail-open'."""
    state, log = tmp / f"{agent}.db", tmp / f"{agent}.log"
    where = ["--store", store] if store else ["--state", str(state)]
    decisions = []
    for text in inputs:
        out, err = io.BytesIO(), io.StringIO()
        argv = ["--agent", agent, "-m", str(max_repeats), *where, "--log", str(log), *extra]
        status = hook_main(argv, io.BytesIO(text.encode()), out, err)
        assert status == 0
        assert CANARY not in out.getvalue().decode() + err.getvalue()
        if out.getvalue() and b'"systemMessage"' not in out.getvalue():
            assert b'"deny"' in out.getvalue()
            decisions.append("deny")
        else:  # a fail-open may tell the person once per session (hook/notice.py)
            decisions.append("fail-open" if "allowed" in err.getvalue() else "allow")
    stored = state.read_bytes() if state.exists() else b""
    assert CANARY.encode() not in stored
    return decisions


def run_proxy(
    requests: list[str], tmp: Path, max_repeats: int, store: str | None = None, policy: str = ""
) -> tuple[bytes, bytes]:
    """The proxy's ``--log`` and its stdout (the server's echoes and its own answers)."""
    log = tmp / "proxy.log"
    command = [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--log", str(log)]
    command += ["--policy", policy] if policy else []
    if store:
        command += ["--store", store, "--session", "mcp"]
    command += [
        "-m",
        str(max_repeats),
        "--",
        sys.executable,
        str(ROOT / "tests" / "echo_server.py"),
    ]
    payload = "".join(line + "\n" for line in requests).encode()
    done = subprocess.run(command, input=payload, capture_output=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert CANARY.encode() not in done.stderr
    body = log.read_bytes()
    assert CANARY.encode() not in body
    return body, done.stdout


SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_hook_and_hook_log_replay_equal_filter(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("hooks-runs"), env=cli_env(), ok=(0, 3), secrets=(CANARY,)
    )
    cases = []

    @SETTINGS
    @given(sequence=calls(), max_repeats=st.sampled_from([1, 2, 3]))
    def draw(sequence: list[dict], max_repeats: int) -> None:
        tmp = tmp_path_factory.mktemp("hooks")
        limit = ("-m", str(max_repeats))
        runs = []
        for agent in AGENTS:
            lines = [
                event_line(call if agent != "gemini" else {**call, "id": None}, call["session"])
                for call in sequence
            ]
            reference = batch.add(("filter", *limit), batch.file("".join(x + "\n" for x in lines)))
            inputs = [hook_input(agent, call) for call in sequence]
            log = batch.file("".join(line + "\n" for line in inputs))
            replayed = batch.add(("replay", "--verdicts", "--format", "claude-hooks", *limit), log)
            decisions = run_hook(agent, inputs, tmp, max_repeats)
            logged = logged_verdicts(tmp / f"{agent}.log")
            runs.append((agent, reference, replayed, decisions, logged))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        for agent, reference_run, replayed, decisions, logged in runs:
            reference = batch.verdicts(reference_run)
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            expected = [
                {"error": "fail-open", "deny": "deny", "pass": "allow"}[v["verdict"]]
                for v in reference
            ]
            assert decisions == expected, (agent, sequence)
            assert [compared(v) for v in logged if v["verdict"] != "error"] == [
                compared(v) for v in reference if v["verdict"] == "deny"
            ], (agent, sequence)
            # and one error line per call the hook failed open on (054c0e8)
            errors = sum(v["verdict"] == "error" for v in logged)
            assert errors == expected.count("fail-open"), (agent, sequence)


def test_mcp_proxy_log_and_traffic_replay_equal_filter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the proxy at once; its filter and replay runs are made
    together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("mcp-runs"), env=cli_env(), ok=(0, 3), secrets=(CANARY,)
    )
    cases = []

    @SETTINGS
    @given(sequence=calls(), max_repeats=st.sampled_from([1, 2, 3]))
    def draw(sequence: list[dict], max_repeats: int) -> None:
        tmp = tmp_path_factory.mktemp("mcp")
        limit = ("-m", str(max_repeats))
        requests = [mcp_request(call, number) for number, call in enumerate(sequence, 1)]
        sent_ids = [
            _json(call["id"]) if call["id"] is not None else f'"r{number}"'
            for number, call in enumerate(sequence, 1)
        ]
        for number, call in enumerate(sequence, 1):
            if call["id"] is None:
                call["id"] = f"r{number}"
            elif isinstance(call["id"], RawJSON):
                call["id"] = None  # judged without a call id; the denial echoes the id's bytes
        lines = [event_line(call, "mcp#1") for call in sequence]
        reference = batch.add(("filter", *limit), batch.file("".join(x + "\n" for x in lines)))
        recorded = batch.file("".join(f"STDIN: {line}\n" for line in requests), ".log")
        replayed = batch.add(("replay", "--verdicts", "--format", "mcp", *limit), recorded)
        proxied, answers = run_proxy(requests, tmp, max_repeats)
        echoed = [
            line[len(b'{"jsonrpc":"2.0","id":') : line.index(b',"result":{"content"')].decode()
            for line in answers.splitlines()
            if b',"result":{"content"' in line and b'"method"' not in line
        ]
        # equal byte for byte to a replay, but for a call reusing the id of one the proxy
        # answered (denied): the proxy counts it (issue 36.3), a replay of the client's
        # lines cannot
        expected, diverges = proxy_log(requests, max_repeats)
        assert proxied == expected
        cases.append((sequence, sent_ids, reference, replayed, proxied, echoed, diverges))

    draw()
    batch.run()
    for sequence, sent_ids, reference_run, replayed, proxied, echoed, diverges in cases:
        reference = batch.verdicts(reference_run)
        assert [compared(v) for v in batch.verdicts(replayed)] == [
            compared(v) for v in reference
        ], sequence
        # each denial answers with the id's own bytes: the proxy's denials, which are
        # filter's but for a call reusing a denied call's id (above)
        logged = verdict_lines(proxied)
        denied = [s for s, v in zip(sent_ids, logged, strict=True) if v["verdict"] == "deny"]
        assert echoed == denied, sequence
        assert equal_until(proxied, batch.output(replayed), diverges), sequence


@settings(SETTINGS, max_examples=6)
@given(sequence=calls(), max_repeats=st.sampled_from([1, 2, 3]))
def test_redis_backed_front_ends_equal_filter(
    tmp_path_factory: pytest.TempPathFactory, redis_server, sequence: list[dict], max_repeats: int
) -> None:
    """filter, the hook and mcp-proxy counting in one Redis give filter's verdicts."""
    tmp = tmp_path_factory.mktemp("redis")
    url = redis_server.url + "?socket_timeout=5&socket_connect_timeout=5"  # a loaded CI
    lines = [event_line(call, call["session"]) for call in sequence]
    reference = filter_verdicts(tmp, lines, max_repeats)
    redis_server.command("FLUSHALL")
    shared = filter_verdicts(tmp, lines, max_repeats, url)
    assert [compared(v) for v in shared] == [compared(v) for v in reference]
    redis_server.command("FLUSHALL")
    decisions = run_hook(
        "claude-code", [hook_input("claude-code", c) for c in sequence], tmp, max_repeats, url
    )
    assert decisions == [
        {"error": "fail-open", "deny": "deny", "pass": "allow"}[v["verdict"]] for v in reference
    ]
    requests = [mcp_request(call, number) for number, call in enumerate(sequence, 1)]
    in_memory = run_proxy(requests, tmp, max_repeats)[0]  # its own equality: the test above
    (tmp / "proxy.log").unlink()
    redis_server.command("FLUSHALL")
    proxied = run_proxy(requests, tmp, max_repeats, url)[0]
    assert [compared(v) for v in verdict_lines(proxied)] == [
        compared(v) for v in verdict_lines(in_memory)
    ]


# -- user turns (reset_on_user_turn) ----------------------------------------------------

TURN_SESSIONS = ["s1", "s1", "s2", None]


@st.composite
def calls_and_turns(draw: st.DrawFn) -> list[dict]:
    """Calls (streaks likely) with user turns between them; a turn is ``{"turn": session}``."""
    out: list[dict] = []
    for call in draw(calls()):
        if draw(st.integers(0, 3)) == 0:
            out.append({"turn": draw(st.sampled_from(TURN_SESSIONS))})
        if call["session"] not in TURN_SESSIONS:
            call = {**call, "session": draw(st.sampled_from(TURN_SESSIONS))}
        out.append(call)
    return out


def turn_event(session: object) -> str:
    fields = ['"type":"user"', f'"prompt":{_json(CANARY)}']
    if session is not None:
        fields.append(f'"sessionId":{_json(session)}')
    return "{" + ",".join(fields) + "}"


def turn_input(agent: str, session: object) -> str:
    """Each agent's user-turn hook input (the prompt is the canary)."""
    event = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit",
             "gemini": "BeforeAgent", "cursor": "beforeSubmitPrompt"}[agent]  # fmt: skip
    fields = [f'"hook_event_name":"{event}"', f'"prompt":{_json(CANARY)}']
    key = "conversation_id" if agent == "cursor" else "session_id"
    if session is not None:
        fields.append(f'"{key}":{_json(session)}')
    if agent == "codex":
        fields.append('"turn_id":"t2"')
    return "{" + ",".join(fields) + "}"


def library_verdicts(sequence: list[dict], max_repeats: int, policy: Path, store=None) -> list:
    """What ``pipeline.judge`` gives for the same records, in process (the library)."""
    from loop_brake_cli import LoopBrake
    from loop_brake_cli.formats import events, parse_records
    from loop_brake_cli.readers.pipeline import judge
    from loop_brake_cli.readers.reader import Source

    lines = [
        turn_event(e["turn"]) if "turn" in e else event_line(e, e["session"]) for e in sequence
    ]
    source = Source(io.BytesIO("".join(line + "\n" for line in lines).encode()), "<events>")
    brake = LoopBrake(max_repeats, policy=str(policy), store=store)
    records = parse_records(events, source, brake.progress, brake.user_turns)
    return [
        ("error",) if verdict is None else (verdict.count, verdict.denied, verdict.duplicate)
        for record, verdict in judge(records, brake)
        if verdict is not None or record.__class__.__name__ == "BadRecord"
    ]


def _short(verdict: dict) -> tuple:
    if verdict["verdict"] == "error":
        return ("error",)
    return (verdict["count"], verdict["verdict"] == "deny", verdict.get("duplicate", False))


def test_user_turns_end_streaks_alike_in_every_front_end(
    tmp_path_factory: pytest.TempPathFactory, redis_server
) -> None:
    """Each drawn example runs the hook and the library in-process, and filter on Redis,
    at once; its in-memory filter and replay runs are made together once every example
    is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("turns-runs"), env=cli_env(), ok=(0, 3), secrets=(CANARY,)
    )
    policy = Path(batch.file("reset_on_user_turn = true\n", ".toml"))
    url = redis_server.url + "?socket_timeout=5&socket_connect_timeout=5"
    cases = []

    @SETTINGS
    @given(sequence=calls_and_turns(), max_repeats=st.sampled_from([1, 2, 3]))
    def draw(sequence: list[dict], max_repeats: int) -> None:
        tmp = tmp_path_factory.mktemp("turns")
        options = ("-m", str(max_repeats), "--policy", str(policy))
        runs = []
        for agent in AGENTS:
            lines = [
                turn_event(e["turn"])
                if "turn" in e
                else event_line(e if agent != "gemini" else {**e, "id": None}, e["session"])
                for e in sequence
            ]
            events = batch.file("".join(line + "\n" for line in lines))
            reference = batch.add(("filter", *options), events)
            inputs = [
                turn_input(agent, e["turn"]) if "turn" in e else hook_input(agent, e)
                for e in sequence
            ]
            log = batch.file("".join(line + "\n" for line in inputs))
            replayed = batch.add(
                ("replay", "--verdicts", "--format", "claude-hooks", *options), log
            )
            decided = []
            for store in (None, url):
                redis_server.command("FLUSHALL")
                decisions = run_hook(
                    agent, inputs, tmp, max_repeats, store, "--policy", str(policy)
                )
                (tmp / f"{agent}.db").unlink(missing_ok=True)
                (tmp / f"{agent}.log").unlink(missing_ok=True)
                turns = [d for d, e in zip(decisions, sequence, strict=True) if "turn" in e]
                assert turns == ["allow"] * len(turns)  # a user turn: exit 0, nothing printed
                got = [d for d, e in zip(decisions, sequence, strict=True) if "turn" not in e]
                decided.append((store, got))
            library = shared = shared_library = None
            if agent == "claude-code":
                library = library_verdicts(sequence, max_repeats, policy)
                redis_server.command("FLUSHALL")
                shared = filter_verdicts(tmp, lines, max_repeats, url, "--policy", str(policy))
                redis_server.command("FLUSHALL")
                shared_library = library_verdicts(sequence, max_repeats, policy, url)
            runs.append((agent, reference, replayed, decided, library, shared, shared_library))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        calls_only = [e for e in sequence if "turn" not in e]
        for agent, reference_run, replayed, decided, library, shared, shared_library in runs:
            reference = batch.verdicts(reference_run)
            assert len(reference) == len(calls_only)  # a user line gives no verdict line
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            expected = [
                {"error": "fail-open", "deny": "deny", "pass": "allow"}[v["verdict"]]
                for v in reference
            ]
            for store, got in decided:
                assert got == expected, (agent, store, sequence)
            if agent == "claude-code":
                shorts = [_short(v) for v in reference]
                assert library == shorts, sequence
                assert shared is not None
                assert [compared(v) for v in shared] == [compared(v) for v in reference], sequence
                assert shared_library == shorts, sequence


# args_ignore (issue 29, item 5): policies whose paths reach into the drawn arguments
# (the secret, a number, every member, an array element, a quoted key) for some tools
ARGS_IGNORE_POLICIES = [
    '[[tools]]\nmatch = "search"\nargs_ignore = ["$.secret", "$.n"]\n',
    '[[tools]]\nmatch = "*"\nargs_ignore = ["$.*"]\n',
    '[[tools]]\nmatch = "read"\nmax_repeats = 2\nargs_ignore = ["$[0]", \'$["q"]\']\n'
    '[[tools]]\nmatch = "search"\nargs_ignore = ["$.k", "$.big"]\n',
]
ARGS_IGNORE_COMPARED = COMPARED + ("policyHash", "rule", "limit")


def compared_under_policy(verdict: dict) -> tuple:
    if verdict["verdict"] == "error":
        return ("error",)
    return tuple(verdict.get(key) for key in ARGS_IGNORE_COMPARED) + (
        verdict.get("duplicate", False),
    )


SECRET_POLLS = [
    {"tool": "search", "args": a, "session": "s1", "id": i, "as_string": False}
    for a, i in (('{"secret":"' + CANARY + '"}', "c1"), ("{}", "c2"), (ARGS[12], "c3"))
]


def test_args_ignore_policies_agree_in_every_front_end(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Under a drawn args_ignore policy: filter, the hook, replay of its log, mcp-proxy and
    replay of the traffic give the same verdicts, counts, policy hashes and marks. Each
    drawn example runs the hook and the proxy at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("argsignore-runs"), env=cli_env(), ok=(0, 3), secrets=(CANARY,)
    )
    cases = []

    @settings(SETTINGS, max_examples=8)
    @example(sequence=SECRET_POLLS, max_repeats=3, policy_text=ARGS_IGNORE_POLICIES[0])
    @given(
        sequence=calls(),
        max_repeats=st.sampled_from([2, 3]),
        policy_text=st.sampled_from(ARGS_IGNORE_POLICIES),
    )
    def draw(sequence: list[dict], max_repeats: int, policy_text: str) -> None:
        tmp = tmp_path_factory.mktemp("argsignore")
        policy = batch.file(policy_text, ".toml")
        options = ("-m", str(max_repeats), "--policy", policy)
        agent = "claude-code"
        lines = [event_line(call, call["session"]) for call in sequence]
        reference = batch.add(("filter", *options), batch.file("".join(x + "\n" for x in lines)))
        inputs = [hook_input(agent, call) for call in sequence]
        log = batch.file("".join(line + "\n" for line in inputs))
        replayed = batch.add(("replay", "--verdicts", "--format", "claude-hooks", *options), log)
        decisions = run_hook(agent, inputs, tmp, max_repeats, None, "--policy", policy)
        mcp = [dict(call) for call in sequence]
        requests = [mcp_request(call, number) for number, call in enumerate(mcp, 1)]
        for number, call in enumerate(mcp, 1):
            if call["id"] is None:
                call["id"] = f"r{number}"
            elif isinstance(call["id"], RawJSON):
                call["id"] = None
        mcp_lines = [event_line(call, "mcp#1") for call in mcp]
        mcp_reference = batch.add(
            ("filter", *options), batch.file("".join(x + "\n" for x in mcp_lines))
        )
        recorded = batch.file("".join(f"STDIN: {line}\n" for line in requests), ".log")
        traffic = batch.add(("replay", "--verdicts", "--format", "mcp", *options), recorded)
        proxied, _answers = run_proxy(requests, tmp, max_repeats, policy=policy)
        expected, diverges = proxy_log(requests, max_repeats, policy)
        assert proxied == expected  # the replay's, but a reused id of a denied call counts
        runs = (reference, replayed, decisions, mcp_reference, traffic, proxied, diverges)
        cases.append((sequence, sequence is SECRET_POLLS, runs))

    draw()
    batch.run()
    assert any(secret_polls for _, secret_polls, _ in cases)  # the explicit example ran
    for sequence, secret_polls, runs in cases:
        reference_run, replayed, decisions, mcp_reference_run, traffic, proxied, diverges = runs
        reference = batch.verdicts(reference_run)
        assert [compared_under_policy(v) for v in batch.verdicts(replayed)] == [
            compared_under_policy(v) for v in reference
        ], sequence
        if secret_polls:  # the secret is the ignored path: one call, denied
            assert [(v["verdict"], v["policyHash"]) for v in reference] == [
                ("pass", True),
                ("pass", True),
                ("deny", True),
            ]
        assert decisions == [
            {"error": "fail-open", "deny": "deny", "pass": "allow", "stop": "deny"}[v["verdict"]]
            for v in reference
        ], sequence
        mcp_reference = [compared_under_policy(v) for v in batch.verdicts(mcp_reference_run)]
        assert [compared_under_policy(v) for v in batch.verdicts(traffic)] == mcp_reference
        logged = [compared_under_policy(v) for v in verdict_lines(proxied)]
        assert logged[:diverges] == mcp_reference[:diverges], sequence
