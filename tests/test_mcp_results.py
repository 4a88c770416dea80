"""MCP results: which server message is the result of which call (``wire.mcp``).

The decoder is shared by ``formats/mcp.py`` and ``mcp-proxy``; these are its
edges, read through the format as ``replay`` reads a recorded log. The proxy
itself, before a real server, is in tests/test_progress_equivalence.py.
"""

from __future__ import annotations

import json

from adapter_helpers import parse_bytes
from conftest import run_cli

from loop_brake_cli.core.records import ToolCall, ToolResult
from loop_brake_cli.readers.wire.mcp import MAX_PENDING, Connections

SECRET = "canary-8e2a-mcp-result-secret"


def call(request_id: object, name: str = "poll") -> str:
    params = {"name": name, "arguments": {"job": "j"}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def response(request_id: object, text: str = SECRET, error: bool = False) -> str:
    if error:
        body = {"error": {"code": -32602, "message": text}}
    else:
        body = {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, **body})


def records(lines: list[str]) -> list[tuple]:
    out = []
    for record in parse_bytes("mcp", "\n".join(lines).encode() + b"\n"):
        if isinstance(record, ToolResult):
            out.append(("result", record.session, record.call_id, record.line))
        elif isinstance(record, ToolCall):
            out.append(("call", record.session, record.call_id, record.line))
    return out


def test_a_response_is_the_result_of_its_pending_call_once() -> None:
    got = records(
        [
            "STDIN: " + call(1),
            "STDIN: " + call("1"),
            "STDOUT: " + response("1"),
            "STDOUT: " + response(1),
            "STDOUT: " + response(1),  # answered already: traffic
            "STDOUT: " + response(9),  # never a call
        ]
    )
    assert got == [
        ("call", "mcp#1", 1, 1),
        ("call", "mcp#1", "1", 2),
        ("result", "mcp#1", "1", 3),
        ("result", "mcp#1", 1, 4),
    ]


def test_an_error_response_is_a_result_and_other_responses_are_not() -> None:
    init = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {}})
    lines = [
        "STDIN: " + init,
        "STDOUT: " + json.dumps({"jsonrpc": "2.0", "id": 5, "result": {}}),
        "STDIN: " + call(6),
        "STDOUT: " + response(6, error=True),
    ]
    parsed = parse_bytes("mcp", "\n".join(lines).encode())
    (result,) = [r for r in parsed if isinstance(r, ToolResult)]
    assert result.call_id == 6 and result.result == {"error": {"code": -32602, "message": SECRET}}


def test_a_reconnect_forgets_the_pending_calls() -> None:
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    got = records(["STDIN: " + call(1), "STDIN: " + init, "STDOUT: " + response(1)])
    assert got == [("call", "mcp#1", 1, 1)]


def test_raw_lines_and_claude_desktop_lines_carry_results() -> None:
    assert records([call(3), response(3)]) == [
        ("call", "mcp#1", 3, 1),
        ("result", "mcp#1", 3, 2),
    ]
    desktop = [
        "2026-01-05T10:00:00.000Z [odoo] [info] Message from client: " + call(4),
        "2026-01-05T10:00:01.000Z [odoo] [info] Message from server: " + response(4),
    ]
    assert records(desktop) == [("call", "odoo#1", 4, 1), ("result", "odoo#1", 4, 2)]


def test_pending_calls_are_bounded() -> None:
    connections = Connections()
    for number in range(MAX_PENDING + 1):
        connections.client_message(json.loads(call(number)))
    oldest = connections.server_message(json.loads(response(0)))
    newest = connections.server_message(json.loads(response(MAX_PENDING)))
    assert oldest is None and newest is not None and newest.call_id == MAX_PENDING
    assert Connections().server_message(json.loads(response(1))) is None  # results off


def test_results_never_reach_any_output(tmp_path) -> None:
    log = tmp_path / "traffic.log"
    lines = []
    for number in range(1, 6):
        lines += ["STDIN: " + call(number), "STDOUT: " + response(number, f"{SECRET} {number}")]
    lines += ["STDIN: " + call(6), "STDOUT: " + response(6, SECRET, error=True)]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    policy = tmp_path / "progress.toml"
    policy.write_text("progress = true\n", encoding="utf-8")
    for extra in (["--verdicts"], ["--json"], [], ["--compare-policy", str(policy)]):
        args = ["replay", "--format", "mcp", "-m", "3", *extra]
        if "--compare-policy" not in extra:
            args += ["--policy", str(policy)]
        done = run_cli(*args, str(log))
        assert done.returncode in (0, 3), done.stderr
        assert SECRET.encode() not in done.stdout + done.stderr
    verdicts = run_cli(
        "replay", "--verdicts", "--format", "mcp", "-m", "3", "--policy", str(policy), str(log)
    )
    assert [json.loads(v)["verdict"] for v in verdicts.stdout.splitlines()] == ["pass"] * 6


def test_the_documented_progress_polls(tmp_path) -> None:
    """docs/mcp-proxy.md: five polls whose output changes until the third, limit 3."""
    log = "tests/fixtures/mcp/synthetic--progress-polls.log"
    policy = "samples/policies/progress.toml"
    runs = {
        "progress": run_cli("replay", "--verdicts", "--policy", policy, "--format", "mcp", log),
        "seed": run_cli("replay", "--verdicts", "--format", "mcp", log),
    }
    kinds = {k: [json.loads(v)["verdict"] for v in r.stdout.splitlines()] for k, r in runs.items()}
    assert kinds == {
        "progress": ["pass"] * 4 + ["deny"],
        "seed": ["pass"] * 2 + ["deny"] * 3,
    }
