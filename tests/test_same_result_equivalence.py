"""One engine for ``[same_result]`` and ``progress_max`` (issue 39): every front-end agrees.

Drawn calls whose arguments change, most followed by a result that is mostly the same
("No results found", with a noise line the default patterns strip), are judged by
``filter`` on event lines with result lines (the reference), the hook (pre-tool and
post-tool events of each of the four dialects) and its log replayed; the MCP proxy
runs in front of the SDK server whose tool answers the same text to every argument,
with its traffic replayed and filtered; the MCP integration (``attach``) refuses the
fourth of four rephrased searches in-process. Every argument and result holds a canary
that no output, log, answer or state file holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_batch import CliBatch
from conftest import cli_env
from hypothesis import example, given
from hypothesis import strategies as st
from test_engine_equivalence import AGENTS
from test_policy_engine import CANARY
from test_progress_equivalence import SECRET, event_lines, proxy_session, traffic_events
from test_progress_equivalence import hook_input as result_hook_input
from test_progress_equivalence import replay_verdicts as result_replay
from test_progress_equivalence import run_hook as result_run_hook
from test_rules_equivalence import SETTINGS, compared, run, write

SAME_RESULT = "[same_result]\nafter = 2\n"
ANY_TOOL = "[same_result]\nafter = 2\nany_tool = true\n"


def _text(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


NONE = _text(f"No results found. {SECRET}\nWall time: 0.5 seconds")
NONE_AGAIN = _text(f"No results found. {SECRET}\nWall time: 2.75 seconds")  # the same, cleaned
FOUND = _text(f"1 result: docs/uploads.md {SECRET}")


@st.composite
def searches(draw: st.DrawFn) -> list[dict]:
    """Calls of two tools with changing arguments, most followed by their result: mostly
    the same "No results found" (noise apart), sometimes a found result."""
    out: list[dict] = []
    for number in range(draw(st.integers(2, 12))):
        tool = draw(st.sampled_from(["search", "search", "search", "read"]))
        args = json.dumps({"q": f"q{draw(st.integers(0, 9))}", "secret": SECRET})
        session = draw(st.sampled_from(["s1", "s1", "s1", "s2"]))
        call = {"tool": tool, "args": args, "session": session, "id": f"c{number}"}
        out.append({"kind": "call", **call})
        if draw(st.integers(0, 5)) > 0:
            result = draw(st.sampled_from([NONE, NONE_AGAIN, NONE, FOUND]))
            out.append({"kind": "result", **call, "result": result})
    return out


def _four_searches() -> list[dict]:
    out = []
    for number in range(4):
        args = json.dumps({"q": f"upload retries, phrasing {number}", "secret": SECRET})
        call = {"tool": "search", "args": args, "session": "s1", "id": f"c{number}"}
        out += [{"kind": "call", **call}, {"kind": "result", **call, "result": NONE}]
    return out


def test_same_result_hook_dialects_and_their_logs_equal_filter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each drawn example runs the hook in-process at once; its filter and replay runs are
    made together once every example is drawn (tests/cli_batch.py), then compared."""
    batch = CliBatch(
        tmp_path_factory.mktemp("same-result-runs"),
        env=cli_env(LOOP_BRAKE_POLICY=""),
        secrets=(CANARY, SECRET),
    )
    cases = []

    @SETTINGS
    @given(sequence=searches(), policy_text=st.sampled_from([SAME_RESULT, ANY_TOOL]))
    @example(sequence=_four_searches(), policy_text=SAME_RESULT)
    def draw(sequence: list[dict], policy_text: str) -> None:
        tmp = tmp_path_factory.mktemp("same-result-hooks")
        policy = batch.file(policy_text, ".toml")
        runs = []
        for agent in AGENTS:
            events = batch.file("".join(e + "\n" for e in event_lines(sequence, agent != "gemini")))
            reference = batch.add(("filter", "--policy", policy), events)
            replay = ("replay", "--verdicts", "--format", "events", "--policy", policy)
            replayed_events = batch.add(replay, events)
            inputs = [result_hook_input(agent, step, n) for n, step in enumerate(sequence)]
            logged = batch.file("".join(line + "\n" for line in inputs))
            hooks = ("replay", "--verdicts", "--format", "claude-hooks", "--policy", policy)
            replayed = batch.add((*hooks, "-m", "3"), logged, ok=(0, 3))
            batch.add((*hooks[:1], *hooks[2:], "-m", "3"), logged, ok=(0, 3))  # the summary
            decisions = [d for d in result_run_hook(agent, inputs, tmp, 3, policy) if d]
            runs.append((agent, reference, replayed_events, replayed, decisions))
        cases.append((sequence, runs))

    draw()
    batch.run()
    for sequence, runs in cases:
        for agent, reference_run, replayed_events, replayed, decisions in runs:
            reference = batch.verdicts(reference_run)
            assert [compared(v) for v in batch.verdicts(replayed_events)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            assert [compared(v) for v in batch.verdicts(replayed)] == [
                compared(v) for v in reference
            ], (agent, sequence)
            assert decisions == [
                {"deny": "deny", "pass": "allow"}[v["verdict"]] for v in reference
            ], (agent, sequence)
        if sequence == _four_searches():
            assert [(v["verdict"], v["rule"]) for v in reference] == [("pass", "streak")] * 2 + [
                ("deny", "same_result")
            ] * 2
            assert reference[2]["identicalResults"] == 2 and reference[2]["limit"] == 2


@pytest.mark.parametrize(
    ("script", "verdicts"),
    [
        ("none,none,none,none", ["pass", "pass", "pass", "deny"]),
        ("none,found,none,none,none", ["pass"] * 5 + ["deny"]),
    ],
)
def test_same_result_mcp_proxy_log_traffic_replay_and_filter_agree(
    tmp_path: Path, script: str, verdicts: list[str]
) -> None:
    """The SDK server answers the same text (its Wall time line apart) to rephrased
    searches: ``[same_result] after = 3`` refuses the next one, in the proxy's log, in
    its traffic replayed and in ``filter`` of that traffic."""
    policy = write(tmp_path, "policy.toml", "[same_result]\nafter = 3\n")
    calls = [
        {"tool": "poll", "arguments": {"job": f"phrasing {n} {SECRET}"}}
        for n in range(len(verdicts))
    ]
    proxied, recorded, stderr = proxy_session(tmp_path, calls, script, 9, policy)
    assert [v["verdict"] for v in proxied] == verdicts
    assert [v["rule"] for v in proxied if v["verdict"] == "deny"] == ["same_result"]
    assert SECRET.encode() not in stderr
    traffic = tmp_path / "traffic.log"
    traffic.write_text("".join(line + "\n" for line in recorded), encoding="utf-8")
    replayed = result_replay(traffic, "mcp", 9, policy)
    assert [compared(v) for v in replayed] == [compared(v) for v in proxied]
    events = write(tmp_path, "events.jsonl", "".join(e + "\n" for e in traffic_events(recorded)))
    reference = run("filter", "--policy", policy, "-m", "9", events)
    assert [compared(v) for v in reference] == [compared(v) for v in proxied]


def test_progress_max_in_the_mcp_proxy_equals_filter(tmp_path: Path) -> None:
    """A poll whose answer changes every time (the script) is refused at its ceiling."""
    policy = write(tmp_path, "policy.toml", "progress = true\nprogress_max = 4\n")
    calls = [{"tool": "poll", "arguments": {"job": f"build {SECRET}"}} for _ in range(6)]
    proxied, recorded, _ = proxy_session(tmp_path, calls, "a,b,c,d,e,f", 3, policy)
    assert [(v["verdict"], v["rule"]) for v in proxied] == [("pass", "streak")] * 3 + [
        ("deny", "progress_max"),
        ("deny", "streak"),  # a denied call's answer is not progress
        ("deny", "streak"),
    ]
    assert proxied[3]["identicalCalls"] == 4 and proxied[3]["count"] == 2
    events = write(tmp_path, "events.jsonl", "".join(e + "\n" for e in traffic_events(recorded)))
    reference = run("filter", "--policy", policy, "-m", "3", events)
    assert [compared(v) for v in reference] == [compared(v) for v in proxied]


def test_the_mcp_integration_refuses_the_fourth_rephrased_search(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """``attach`` with ``[same_result] after = 3``: the fourth search never runs; the
    denial carries no argument and no result text; another tool ends the run."""
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from loop_brake_cli.core.policy import parse_policy
    from loop_brake_cli.integrations._denial import META_KEY
    from loop_brake_cli.integrations.mcp import attach

    policy, _ = parse_policy("[same_result]\nafter = 3\n", "inline.toml")
    ran: list[str] = []
    server = MCPServer("docs")

    @server.tool()
    def search(q: str) -> str:
        ran.append(q)
        return f"No results found. {SECRET}"

    @server.tool()
    def read(path: str) -> str:
        return f"UPLOAD_RETRIES = 5 {SECRET}"

    attach(server, max_repeats=3, policy=policy)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            out = [await client.call_tool("search", {"q": f"phrasing {n}"}) for n in range(4)]
            out.append(await client.call_tool("read", {"path": "config.ts"}))
            out.append(await client.call_tool("search", {"q": "UPLOAD_RETRIES"}))
            return out

    results = anyio.run(main)
    assert [r.is_error for r in results] == [False, False, False, True, False, False]
    assert len(ran) == 4  # the fourth search never ran; after read, search runs again
    denial = results[3]
    meta = (denial.meta or {})[META_KEY]
    assert meta["rule"] == "same_result" and meta["toolName"] == "search"
    text = denial.content[0].text
    assert text.startswith("loop brake: 3 calls in a row returned the same result")
    out, err = capfd.readouterr()
    for shown in (text, json.dumps(meta), out, err):
        assert SECRET not in shown and "phrasing 3" not in shown and "No results" not in shown
