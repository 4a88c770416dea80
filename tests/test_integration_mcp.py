"""The brake in a real MCP Python SDK server, driven by the SDK's own in-process client.

MCP has no model of its own: the client here plays the looping agent, calling
the same tool with the same arguments again and again, then a different call.
"""

from __future__ import annotations

import gc
import json
import logging
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'loop-brake-cli[mcp]'")

from mcp import Client  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

from loop_brake_cli import LoopBrake, call_hash, hash_prefix  # noqa: E402
from loop_brake_cli.integrations.mcp import LoopBrakeMiddleware, attach, dispose  # noqa: E402

CANARY = "sk-canary-5e1d07"


def make_server(ran: list[str]) -> MCPServer:
    server = MCPServer("braked")

    @server.tool()
    def search(q: str) -> str:
        """Search."""
        ran.append(q)
        return f"results for {q}"

    return server


def prefix(tool: str, args: dict[str, Any]) -> str:
    return hash_prefix(call_hash(tool, args))


async def loop(client: Client, args: dict[str, Any], times: int) -> list[Any]:
    return [await client.call_tool("search", args) for _ in range(times)]


def test_third_identical_call_is_denied_with_is_error_and_the_core_message() -> None:
    ran: list[str] = []
    server = make_server(ran)
    brake = attach(server, max_repeats=3)

    async def main() -> tuple[list[Any], Any]:
        async with Client(server, mode="legacy") as client:
            results = await loop(client, {"q": "weather"}, 4)
            different = await client.call_tool("search", {"q": "news"})
        return results, different

    results, different = anyio.run(main)
    assert ran == ["weather", "weather", "news"]  # maxRepeats - 1 runs, then the different call
    assert [r.is_error for r in results] == [False, False, True, True]
    denial = results[2]
    verdict = LoopBrake(3)
    for _ in range(3):
        expected = verdict.check("search", {"q": "weather"}, session_id="x")
    assert denial.content[0].text == expected.message
    assert prefix("search", {"q": "weather"}) in denial.content[0].text
    meta = denial.meta["loop-brake/denial"]
    assert meta["code"] == "LOOP_BRAKE" and meta["count"] == 3 and meta["maxRepeats"] == 3
    assert meta["hashPrefix"] == prefix("search", {"q": "weather"})
    assert different.is_error is False and different.content[0].text == "results for news"
    assert isinstance(brake, LoopBrake)


def test_tools_added_after_attach_are_braked_too() -> None:
    ran: list[str] = []
    server = MCPServer("late")
    attach(server, max_repeats=2)

    @server.tool()
    def late(q: str) -> str:
        ran.append(q)
        return q

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool("late", {"q": "x"}) for _ in range(2)]

    results = anyio.run(main)
    assert ran == ["x"] and results[1].is_error


def test_two_sessions_in_parallel_do_not_share_a_streak() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3)
    denied: dict[str, list[bool]] = {}

    async def agent(name: str) -> None:
        async with Client(server, mode="legacy") as client:
            results = []
            for _ in range(3):
                results.append(await client.call_tool("search", {"q": "weather"}))
                await anyio.sleep(0)  # interleave the two sessions
            denied[name] = [r.is_error for r in results]

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(agent, "a")
            group.start_soon(agent, "b")

    anyio.run(main)
    assert denied == {"a": [False, False, True], "b": [False, False, True]}
    assert len(ran) == 4


def test_stateless_requests_share_the_server_session_unless_keyed() -> None:
    ran: list[str] = []
    server = make_server(ran)
    server.middleware.append(LoopBrakeMiddleware(max_repeats=2, session_key=lambda ctx: "mine"))

    async def main() -> list[bool]:
        async with Client(server) as client:  # the modern single-exchange protocol
            return [(await client.call_tool("search", {"q": "w"})).is_error for _ in range(2)]

    assert anyio.run(main) == [False, True]


def test_dispose_removes_the_brake_and_forgets_streaks() -> None:
    ran: list[str] = []
    server = make_server(ran)
    before = list(server.middleware)
    brake = attach(server, max_repeats=2)

    async def main() -> list[bool]:
        async with Client(server, mode="legacy") as client:
            first = await client.call_tool("search", {"q": "w"})
            dispose(server)
            rest = await loop(client, {"q": "w"}, 3)
        return [first.is_error] + [r.is_error for r in rest]

    assert anyio.run(main) == [False, False, False, False]
    assert server.middleware == before and len(brake) == 0


def test_canary_in_arguments_reaches_no_log_or_message(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=2)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return await loop(client, {"q": CANARY}, 3)

    results = anyio.run(main)
    assert [r.is_error for r in results] == [False, True, True]
    denials = [r.model_dump_json() for r in results[1:]]
    out, err = capfd.readouterr()
    assert all(CANARY not in text for text in [*denials, caplog.text, out, err])


# -- issue 23: sessions, progress, bounds, explicit policies -----------------------


def test_stateless_clients_never_share_a_streak_by_default() -> None:
    """The SDK's default Client(server) (the 2026-07-28 single-exchange protocol): three
    clients making one identical call each; on the old main the third was denied (a
    denial telling one client what another had called)."""
    ran: list[str] = []
    server = make_server(ran)
    brake = attach(server, max_repeats=3)

    async def one_client() -> bool:
        async with Client(server) as client:
            return (await client.call_tool("search", {"q": "weather"})).is_error

    async def main() -> list[bool]:
        return [await one_client() for _ in range(3)]

    assert anyio.run(main) == [False, False, False]
    assert ran == ["weather"] * 3
    gc.collect()
    assert len(brake) == 0  # each request's streak went with it


def test_a_shared_stateless_key_is_the_user_s_explicit_choice() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3, session_key=lambda ctx: "tenant-a")

    async def one_client() -> bool:
        async with Client(server) as client:
            return (await client.call_tool("search", {"q": "weather"})).is_error

    async def main() -> list[bool]:
        return [await one_client() for _ in range(3)]

    assert anyio.run(main) == [False, False, True]


def test_a_session_key_that_is_not_a_str_is_a_clear_error() -> None:
    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3, session_key=lambda ctx: 42)

    async def main() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("search", {"q": "weather"})

    with pytest.raises(Exception) as caught:
        anyio.run(main)
    assert "session_key returned int" in repr(caught.value)  # the client gets the error
    assert ran == []


def progress_server(answers: list[str]) -> tuple[MCPServer, list[str]]:
    ran: list[str] = []
    server = MCPServer("polled")

    @server.tool()
    def poll(job: int) -> str:
        ran.append(str(job))
        return answers[min(len(ran), len(answers)) - 1]

    return server, ran


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        (["1%", "40%", "80%", "95%", "done"], [False] * 5),  # changing: never denied
        (["running"], [False, False, True, True, True]),  # the same: denied at the limit
    ],
)
def test_progress_mode_reads_each_result(answers: list[str], expected: list[bool]) -> None:
    """Under ``progress = true`` a poll whose result changes is never denied; on the old
    main no result was fed, so the changing poll was denied at the third call."""
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("progress = true\n", "inline.toml")
    server, _ = progress_server(answers)
    attach(server, max_repeats=3, policy=policy)

    async def main() -> list[bool]:
        async with Client(server, mode="legacy") as client:
            return [(await client.call_tool("poll", {"job": 7})).is_error for _ in range(5)]

    assert anyio.run(main) == expected


def test_connections_release_their_streaks() -> None:
    """300 clients come and go: no session is left (the old main kept all 300)."""
    ran: list[str] = []
    server = make_server(ran)
    brake = attach(server, max_repeats=3)

    async def main() -> None:
        for _ in range(300):
            async with Client(server, mode="legacy") as client:
                await client.call_tool("search", {"q": "weather"})

    anyio.run(main)
    gc.collect()
    assert len(ran) == 300 and len(brake) == 0


def test_the_default_brake_is_bounded() -> None:
    from loop_brake_cli.integrations._session import DEFAULT_MAX_SESSIONS

    server = make_server([])
    assert attach(server).max_sessions == DEFAULT_MAX_SESSIONS


def test_no_policy_is_discovered_from_the_working_directory(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .loop-brake.toml nobody passed changes nothing (the old main read it)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".loop-brake.toml").write_text('[[tools]]\nmatch = "search"\nmax_repeats = 2\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOP_BRAKE_POLICY", raising=False)
    server = make_server([])
    brake = attach(server, max_repeats=3)
    assert brake.policy is None

    async def main() -> list[bool]:
        async with Client(server, mode="legacy") as client:
            return [(await client.call_tool("search", {"q": "w"})).is_error for _ in range(3)]

    assert anyio.run(main) == [False, False, True]
    from loop_brake_cli.core.brake import DISCOVER

    assert attach(make_server([]), policy=DISCOVER).policy is not None  # the opt-in


def test_principal_session_key_brakes_each_authenticated_stateless_client() -> None:
    """Stateless requests keyed by the SDK's bearer-auth principal: one client's third
    identical call is denied, another principal's first call is not, and a request with
    no principal is alone."""
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from loop_brake_cli.integrations.mcp import principal_session_key

    ran: list[str] = []
    server = make_server(ran)
    attach(server, max_repeats=3, session_key=principal_session_key)

    async def as_client(client_id: str | None) -> bool:
        user = None
        if client_id is not None:
            user = AuthenticatedUser(AccessToken(token="t", client_id=client_id, scopes=[]))
        token = auth_context_var.set(user)
        try:
            async with Client(server) as client:
                return (await client.call_tool("search", {"q": "weather"})).is_error
        finally:
            auth_context_var.reset(token)

    async def main() -> list[bool]:
        order = ["alice", "alice", None, "bob", None, "alice", "bob"]
        return [await as_client(who) for who in order]

    assert anyio.run(main) == [False, False, False, False, False, True, False]


def test_canary_in_results_reaches_no_denial_log_or_output(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Under the progress mode results are hashed and forgotten: a secret in them is in
    no denial, log line or output."""
    from loop_brake_cli.core.policy import parse_policy

    caplog.set_level(logging.DEBUG)
    policy, _ = parse_policy("progress = true\n", "inline.toml")
    server, _ = progress_server([f"{CANARY} still running"])
    attach(server, max_repeats=3, policy=policy)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool("poll", {"job": 7}) for _ in range(4)]

    results = anyio.run(main)
    assert [r.is_error for r in results] == [False, False, True, True]
    assert "the last 2 results identical" in results[2].content[0].text
    out, err = capfd.readouterr()
    shown = [r.model_dump_json() for r in results[2:]] + [caplog.text, out, err]
    assert all(CANARY not in text for text in shown)


def test_same_error_denies_the_tools_next_call_after_identical_errors() -> None:
    """Issue 29: ``[same_error] after = 2``: a tool that fails the same way for three
    different arguments is refused at its third call (rule ``same_error``); the
    denial carries no argument and no error text; another tool ends the run."""
    from mcp.server.mcpserver.exceptions import ToolError

    from loop_brake_cli.core.policy import parse_policy
    from loop_brake_cli.integrations._denial import META_KEY

    policy, _ = parse_policy("[same_error]\nafter = 2\n", "inline.toml")
    ran: list[str] = []
    server = MCPServer("failing")

    @server.tool()
    def edit(path: str) -> str:
        ran.append(path)
        raise ToolError("no such file")

    @server.tool()
    def look() -> str:
        return "listing"

    attach(server, max_repeats=9, policy=policy)

    async def main() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            out = [await client.call_tool("edit", {"path": f"f{n} {CANARY}"}) for n in range(3)]
            out.append(await client.call_tool("look", {}))
            out.append(await client.call_tool("edit", {"path": "g"}))
            return out

    results = anyio.run(main)
    assert [r.is_error for r in results] == [True, True, True, False, True]
    assert len(ran) == 3  # the third edit never ran; after look, edit runs (and fails) again
    denial = results[2]
    meta = (denial.meta or {})[META_KEY]
    assert meta["rule"] == "same_error" and meta["toolName"] == "edit"
    text = denial.content[0].text
    assert text.startswith('loop brake: tool "edit" returned the same error 2 times in a row')
    assert CANARY not in text + str(meta) and "no such file" not in text


# -- issue 36.5: a stdio server's one client, in the SDK's default mode too ----------

STDIO_SERVER = """
import sys
sys.path.insert(0, {root!r})
from mcp.server.mcpserver import MCPServer
from loop_brake_cli.integrations.mcp import attach

server = MCPServer("tools")
ran = open({ran!r}, "a", encoding="utf-8")


@server.tool()
def search(q: str) -> str:
    ran.write("ran\\n")
    ran.flush()
    return "results"


attach(server)  # the default limit, 3
server.run()
"""


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_stdio_server_brakes_its_one_client_in_the_sdk_s_default_mode(
    tmp_path: Any, mode: str
) -> None:
    """A real server process on real stdio, the SDK's own client: under ``mode="auto"``
    (the 2026-07-28 protocol, a connection per request) c40a10b ran 6 of 6 identical
    calls, each request a session alone; the stream is the one client, so 2 of 6 run.
    The canary in the arguments reaches no result and nothing the server wrote."""
    import sys
    from pathlib import Path

    from mcp.client.stdio import StdioServerParameters, stdio_client

    ran, errors = tmp_path / "ran", tmp_path / "stderr"
    script = tmp_path / "server.py"
    root = str(Path(__file__).resolve().parent.parent)
    script.write_text(STDIO_SERVER.format(root=root, ran=str(ran)), encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=[str(script)])

    async def main() -> list[Any]:
        with errors.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                return [await client.call_tool("search", {"q": CANARY}) for _ in range(6)]

    results = anyio.run(main)
    assert [r.is_error for r in results] == [False, False, True, True, True, True]
    assert ran.read_text(encoding="utf-8").count("ran") == 2
    assert results[2].meta["loop-brake/denial"]["count"] == 3
    shown = [r.model_dump_json() for r in results] + [errors.read_text(encoding="utf-8")]
    assert all(CANARY not in text for text in shown)


def test_a_client_that_reuses_its_request_id_is_braked(tmp_path: Any) -> None:
    """Issue 36.3: JSON-RPC lets a client reuse an id once it is answered; six
    identical calls all with id 1 over real stdio: 2 run (each call gets a call id of
    its own in the brake, never the client's)."""
    import sys
    from pathlib import Path

    from jsonrpc_stdio import calls_with_one_id

    ran = tmp_path / "ran"
    script = tmp_path / "server.py"
    root = str(Path(__file__).resolve().parent.parent)
    script.write_text(STDIO_SERVER.format(root=root, ran=str(ran)), encoding="utf-8")
    answers = calls_with_one_id(
        [sys.executable, str(script)], [("search", {"q": CANARY})] * 6, tmp_path / "stderr"
    )
    assert [a["result"]["isError"] for a in answers] == [False, False] + [True] * 4
    assert ran.read_text(encoding="utf-8").count("ran") == 2
    shown = [json.dumps(a) for a in answers[2:]] + [(tmp_path / "stderr").read_text()]
    assert all(CANARY not in text for text in shown)
