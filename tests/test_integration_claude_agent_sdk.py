"""The brake in a real Claude Agent SDK agent: the SDK runs the Claude Code CLI it
bundles, whose model is a scripted Anthropic Messages API on a loopback port (no
network, no key), so the hooks are called by Claude Code itself over the SDK's
control protocol, and the denial reaches the model as Claude Code hands it over.

The tool is an in-process SDK MCP tool (``mcp__t__search``), so the test counts the
executions."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk", reason="needs the claude-agent-sdk extra")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    ClaudeSDKClient,
    create_sdk_mcp_server,
    tool,
)

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.integrations.claude_agent_sdk import attach, dispose  # noqa: E402

CANARY = "sk-canary-c1a0de"
TOOL = "mcp__t__search"


def _sse(blocks: list[dict[str, Any]], stop: str) -> bytes:
    """One streamed Messages API answer holding ``blocks``."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test"}
    usage = {"input_tokens": 1, "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": [], "usage": usage}}
    ]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": i, "content_block": start},
            {"type": "content_block_delta", "index": i, "delta": delta},
            {"type": "content_block_stop", "index": i},
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage},
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


class ScriptedAPI(BaseHTTPRequestHandler):
    """The model: the n-th request of a conversation (n tool results so far) gets the
    n-th scripted turn, then "done"; every request body is kept."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.requests.append(body)  # type: ignore[attr-defined]
        results = [
            block
            for message in body.get("messages", [])
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        turns = self.server.turns  # type: ignore[attr-defined]
        # The first query of a conversation names its script: "go:<name>".
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else json.dumps(first)
        name = next((key for key in turns if f"go:{key}" in text), "")
        script = turns.get(name, [])
        # A model numbering its calls per response ("same"): Claude Code keeps one
        # tool use per id in the history it sends, so its turns are counted by request.
        same = name.startswith("same")
        if same:
            sent = self.server.sent  # type: ignore[attr-defined]
            sent[name] = sent.get(name, 0) + 1
        answered = sent[name] - 1 if same else len({block["tool_use_id"] for block in results})
        turn = done = 0  # the next turn: the first whose calls are not all answered
        while turn < len(script) and done + len(script[turn]) <= answered:
            done += len(script[turn])
            turn += 1
        if turn < len(script):
            blocks = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}" if same else f"toolu_{name}_{turn}_{i}",
                    "name": TOOL,
                    "input": q,
                }
                for i, q in enumerate(script[turn])
            ]
            data = _sse(blocks, "tool_use")
        else:
            data = _sse([{"type": "text", "text": "done"}], "end_turn")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def api() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedAPI)
    server.requests = []  # type: ignore[attr-defined]
    server.turns = {}  # type: ignore[attr-defined]
    server.sent = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def options(api: ThreadingHTTPServer, home: Path, ran: list[str], result: Any = None) -> Any:
    @tool("search", "Search the web", {"q": str})
    async def search(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args["q"])
        text = f"results for {args['q']}" if result is None else result()
        return {"content": [{"type": "text", "text": text}]}

    home.mkdir(exist_ok=True)
    env = {
        "ANTHROPIC_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{api.server_port}",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(home),
    }
    return ClaudeAgentOptions(
        mcp_servers={"t": create_sdk_mcp_server("t", tools=[search])},
        allowed_tools=[TOOL],
        tools=[],
        setting_sources=[],
        env=env,
    )


async def converse(opts: Any, name: str) -> list[Any]:
    """Run one query to its result; the tool results Claude Code handed the model."""
    results = []
    async with ClaudeSDKClient(opts) as client:
        await client.query(f"go:{name}")
        async for message in client.receive_response():
            for block in getattr(message, "content", None) or []:
                if type(block).__name__ == "ToolResultBlock":
                    results.append(block)
    return results


def text(block: Any) -> str:
    content = block.content
    return content if isinstance(content, str) else content[0]["text"]


def denial(n: int) -> str:
    reference = LoopBrake(3)
    for _ in range(n):
        verdict = reference.check(TOOL, {"q": "weather"})
    return verdict.message


def test_third_identical_call_is_denied_by_claude_code(
    api: ThreadingHTTPServer, tmp_path: Path
) -> None:
    api.turns["loop"] = [[{"q": "weather"}]] * 4 + [[{"q": "news"}]]  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    attach(opts, max_repeats=3)
    results = asyncio.run(converse(opts, "loop"))
    assert ran == ["weather", "weather", "news"]
    assert [bool(r.is_error) for r in results] == [False, False, True, True, False]
    assert denial(3) in text(results[2]) and denial(4) in text(results[3])
    # The model's next request carried the denial as that tool use's result.
    sent = json.dumps(api.requests[3]["messages"])  # type: ignore[attr-defined]
    assert json.dumps(denial(3))[1:-1] in sent


def test_parallel_identical_calls_in_one_turn(api: ThreadingHTTPServer, tmp_path: Path) -> None:
    api.turns["par"] = [[{"q": "weather"}] * 3]  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    attach(opts, max_repeats=3)
    results = asyncio.run(converse(opts, "par"))
    assert ran == ["weather", "weather"]
    assert sorted(bool(r.is_error) for r in results) == [False, False, True]


def test_two_sessions_at_once_do_not_share_a_streak(
    api: ThreadingHTTPServer, tmp_path: Path
) -> None:
    api.turns["a"] = api.turns["b"] = [[{"q": "weather"}]] * 3  # type: ignore[attr-defined]
    ran: list[str] = []
    first = options(api, tmp_path / "home-a", ran)
    second = options(api, tmp_path / "home-b", ran)
    brake = attach(first, max_repeats=3)
    attach(second, brake)  # one brake, two Claude sessions

    async def both() -> list[list[Any]]:
        return list(await asyncio.gather(converse(first, "a"), converse(second, "b")))

    for results in asyncio.run(both()):
        assert [bool(r.is_error) for r in results] == [False, False, True]
    assert len(ran) == 4


def test_stop_ends_the_run(api: ThreadingHTTPServer, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[stop]\nafter_denials = 2\n")
    api.turns["stop"] = [[{"q": "weather"}]] * 6  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    attach(opts, max_repeats=3, policy=str(policy))
    results = asyncio.run(converse(opts, "stop"))
    assert ran == ["weather", "weather"]
    assert len(results) == 4 and "calls in a row were denied" in text(results[3])
    assert len(api.requests) == 4  # type: ignore[attr-defined]  # not asked again


def test_progress_feeds_results(api: ThreadingHTTPServer, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("progress = true\n")
    api.turns["poll"] = [[{"q": "job"}]] * 4  # type: ignore[attr-defined]
    ticks = iter(range(100))
    opts = options(api, tmp_path / "home", [], result=lambda: f"tick {next(ticks)}")
    attach(opts, max_repeats=3, policy=str(policy))
    results = asyncio.run(converse(opts, "poll"))
    assert [bool(r.is_error) for r in results] == [False] * 4  # results changed: no loop


def test_canary_reaches_no_denial_or_log(
    api: ThreadingHTTPServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    api.turns["canary"] = [[{"q": CANARY}]] * 3  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    attach(opts, max_repeats=2)
    results = asyncio.run(converse(opts, "canary"))
    denials = [text(r) for r in results if r.is_error]
    assert len(denials) == 2 and len(ran) == 1
    out, err = capfd.readouterr()
    assert all(CANARY not in shown for shown in [*denials, caplog.text, out, err])


def test_dispose_removes_the_hooks(api: ThreadingHTTPServer, tmp_path: Path) -> None:
    api.turns["free"] = [[{"q": "weather"}]] * 3  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    brake = attach(opts, max_repeats=2)
    dispose(opts)
    assert all(not matchers for matchers in opts.hooks.values())
    results = asyncio.run(converse(opts, "free"))
    assert ran == ["weather"] * 3 and not any(r.is_error for r in results)
    assert len(brake) == 0


def test_a_model_that_reuses_its_tool_use_id_every_turn_is_braked(
    api: ThreadingHTTPServer, tmp_path: Path
) -> None:
    """Issue 36.3: the tool use id ``toolu_0`` every turn. PostToolUse ends each call,
    so the next turn's ``toolu_0`` is a new call: 2 of 6 run at the default limit."""
    api.turns["same"] = [[{"q": "weather"}]] * 6  # type: ignore[attr-defined]
    ran: list[str] = []
    opts = options(api, tmp_path / "home", ran)
    attach(opts)  # the default limit, 3
    results = asyncio.run(converse(opts, "same"))
    assert ran == ["weather", "weather"]
    assert [bool(r.is_error) for r in results] == [False, False, True, True, True, True]
