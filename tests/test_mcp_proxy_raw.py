"""``loop-brake mcp-proxy`` at the byte level, against an echo server subprocess.

``tests/echo_server.py`` copies its stdin to its stdout, so the proxy's output
is exactly what it forwarded to the server plus its own denial answers. These
tests pin byte-for-byte forwarding, the denial answer, cancellations, batches,
the log, exit statuses, signals and shutdown; ``test_mcp_proxy.py`` drives the
same proxy with the official MCP SDK.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, wait_in_syscall

from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.verdicts import deny_message

ECHO = [sys.executable, str(ROOT / "tests" / "echo_server.py")]
CANARY = "CANARY-5e1f0c2a-do-not-log"


def proxy_argv(*options: str, server: list[str] | None = None) -> list[str]:
    return [
        sys.executable,
        "-m",
        "loop_brake_cli",
        "mcp-proxy",
        *options,
        "--",
        *(ECHO if server is None else server),
    ]


def run_proxy(
    data: bytes, *options: str, server: list[str] | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        proxy_argv(*options, server=server),
        input=data,
        capture_output=True,
        env=env or cli_env(),
        cwd=ROOT,
        timeout=60,
    )


def request(request_id: object, name: str, arguments: object = None, **params: object) -> bytes:
    body: dict[str, object] = {"name": name, **params}
    if arguments is not None:
        body["arguments"] = arguments
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def cancelled(request_id: object) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "timeout"},
    }
    return json.dumps(message).encode() + b"\n"


def denial(request_id: object, name: str, arguments: object, count: int, limit: int = 3) -> bytes:
    """The exact line the proxy must answer a denied call with."""
    text = deny_message(name, count, limit, call_hash(name, arguments)[:12])
    answer = {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": text}], "isError": True},
    }
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_every_kind_of_line_passes_byte_for_byte(tmp_path: Path) -> None:
    """What is JSON reaches the server byte for byte; what is not (issue 36.2: a
    server's laxer parser could read a call in it) is answered with a parse error,
    id null, and never forwarded."""
    big_json = request(2, "big", {"x": "a" * (8 << 20)})
    passed = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}\n',
        b'  {"jsonrpc" : "2.0",   "method":"notifications/initialized"}\r\n',
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t",'
        b'"arguments":{"b":1.0,"a":[1e2, -0]}},"extra":"\\u00e9"}\n',
        big_json,
        b"\n",
        b"[]\n",
    ]
    refused = [
        b'\xff\xfe not UTF-8 but mentions "tools/call"\n',
        b'{"method":"tools/call", this is not JSON\n',
        b"x" * (3 << 20) + b"\n",
    ]
    last = b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}'  # no newline at EOF
    record = tmp_path / "received"
    data = b"".join(passed[:4] + refused[:2] + passed[4:] + refused[2:]) + last
    result = run_proxy(data, server=[*ECHO, "--record", str(record)])
    assert result.returncode == 0, result.stderr
    assert record.read_bytes() == b"".join(passed) + last
    answers = [line for line in lines(result.stdout) if line not in passed and line != last]
    assert [json.loads(line)["error"]["code"] for line in answers] == [-32700] * 3
    assert all(json.loads(line)["id"] is None for line in answers)
    assert result.stderr.count(b"not strict JSON") == 3 and b"x" * 20 not in result.stderr


def test_third_identical_call_is_answered_by_the_proxy_and_never_forwarded(
    tmp_path: Path,
) -> None:
    record = tmp_path / "received.jsonl"
    args = {"q": "weather"}
    calls = [
        request(1, "search", args, _meta={"progressToken": 1}),
        request(2, "search", args, _meta={"progressToken": 2}),  # _meta is not hashed
        request(3, "search", args, _meta={"progressToken": 3}),
    ]
    after = [
        cancelled(3),  # the proxy answered 3: dropped
        cancelled(2),  # the server has 2: forwarded
        cancelled("3"),  # a different id: forwarded
        request(4, "search", {"q": "weather "}),  # different arguments: streak resets
        request(5, "search", args),  # back to 1, not 3
        request(6, "search", args),
    ]
    result = run_proxy(b"".join(calls + after), server=[*ECHO, "--record", str(record)])
    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert denial(3, "search", args, 3) in out
    forwarded = [line for line in out if line != denial(3, "search", args, 3)]
    assert forwarded == [calls[0], calls[1], *after[1:]]
    assert lines(record.read_bytes()) == forwarded
    assert b"denied tools/call id 3" in result.stderr


def test_missing_arguments_hash_as_empty_object_and_limit_from_env() -> None:
    calls = [request(1, "ping"), request(2, "ping", {})]
    env = cli_env(DSH_LOOP_BRAKE_MAX_REPEATS="2")
    result = run_proxy(b"".join(calls), env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(lines(result.stdout)) == sorted([calls[0], denial(2, "ping", {}, 2, limit=2)])


def test_max_repeats_option_and_the_denied_id_answered_as_written() -> None:
    first = request("s-1", "t", {"a": 1})
    second = request(2, "t", {"a": 1.0}).replace(b'"id":2,', b'"id":2.0e0,')
    result = run_proxy(first + second, "-m", "2")
    assert result.returncode == 0, result.stderr
    answer = denial(2, "t", {"a": 1}, 2, limit=2).replace(b'"id":2,', b'"id":2.0e0,')
    assert sorted(lines(result.stdout)) == sorted([first, answer])  # 2.0e0 is 2, kept as sent
    assert b"denied tools/call id 2.0e0 " in result.stderr


def test_a_new_initialize_starts_the_session_afresh() -> None:
    args = {"k": "v"}
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'
    data = request(1, "t", args) + request(2, "t", args) + init + request(3, "t", args)
    result = run_proxy(data)
    assert result.stdout == data  # nothing denied
    result = run_proxy(request(1, "t", args) + request(2, "t", args) + request(3, "t", args))
    assert denial(3, "t", args, 3) in lines(result.stdout)


def test_batches_withhold_only_the_denied_call() -> None:
    args = {"n": 1}
    one = json.loads(request(1, "t", args))
    two = json.loads(request(2, "t", args))
    three = json.loads(request(3, "t", args))
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    batch = json.dumps([one, two, note, three]).encode() + b"\n"
    result = run_proxy(batch)
    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert len(out) == 2
    forwarded = next(json.loads(line) for line in out if b"method" in line)
    answers = next(json.loads(line) for line in out if b"isError" in line)
    assert forwarded == [one, two, note]
    assert answers == [json.loads(denial(3, "t", args, 3))]
    # a batch with nothing withheld is forwarded as it was sent
    unchanged = json.dumps([one, note], indent=1).replace("\n", " ").encode() + b"\n"
    assert run_proxy(unchanged).stdout == unchanged


def test_log_has_one_verdict_per_call_and_no_argument_anywhere(tmp_path: Path) -> None:
    log = tmp_path / "verdicts.jsonl"
    log.write_text('{"earlier":"line"}\n')
    args = {"token": CANARY, "nested": [CANARY]}
    data = b"".join(
        [
            request(1, "deploy", args, _meta={"trace": CANARY}),
            request(2, "deploy", args),
            request(3, "deploy", args),
            b'{"method":"tools/call","params":{"arguments":"' + CANARY.encode() + b'"}\n',
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"'
            + CANARY.encode()
            + b'"}}\n',
        ]
    )
    result = run_proxy(data, "--log", str(log))
    assert result.returncode == 0, result.stderr
    assert CANARY.encode() not in result.stderr
    text = log.read_text()
    assert CANARY not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0] == {"earlier": "line"}  # appended, not truncated
    assert [r["verdict"] for r in records[1:]] == ["pass", "pass", "deny", "error"]
    assert [r.get("callId") for r in records[1:]] == [1, 2, 3, None]
    assert [r.get("count") for r in records[1:]] == [1, 2, 3, None]
    assert records[4] == {"verdict": "error", "line": 4, "error": records[4]["error"]}
    deny = records[3]
    assert deny["toolName"] == "deploy"
    assert deny["hashPrefix"] == call_hash("deploy", args)[:12]
    assert deny["code"] == "LOOP_BRAKE"
    assert deny["message"] == deny_message("deploy", 3, 3, deny["hashPrefix"])
    assert deny["sessionId"] == "mcp#1"


def test_shadow_forwards_everything_and_logs_what_would_have_been_denied(tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    data = b"".join(request(i, "t", {"secret": CANARY}) for i in range(1, 5))
    result = run_proxy(data, "--shadow", "--log", str(log))
    assert result.returncode == 0, result.stderr
    assert result.stdout == data
    verdicts = [json.loads(line)["verdict"] for line in log.read_text().splitlines()]
    assert verdicts == ["pass", "pass", "deny", "deny"]
    assert b"shadow: would deny tools/call id 3" in result.stderr
    assert CANARY.encode() not in result.stderr + log.read_bytes()


def test_denial_answers_never_split_server_lines() -> None:
    """Big server lines and proxy answers share the client's stdout: each stays whole."""
    big = [b'{"jsonrpc":"2.0","method":"big","params":"' + b"z" * (2 << 20) + b'"}\n'] * 4
    calls = [request(i, "t", {}) for i in range(1, 9)]  # 3..8 denied
    data = b"".join(x for pair in zip(big + big, calls, strict=True) for x in pair)
    result = run_proxy(data)
    out = lines(result.stdout)
    expected = big * 2 + calls[:2] + [denial(i, "t", {}, i) for i in range(3, 9)]
    assert sorted(out) == sorted(expected)


def test_server_exit_status_and_stderr_pass_through() -> None:
    result = run_proxy(b"", server=[*ECHO, "--exit", "7", "--stderr", "server says h\u00e9llo"])
    assert result.returncode == 7
    assert result.stderr == "server says h\u00e9llo\n".encode()
    killed = run_proxy(b"", server=["sh", "-c", "kill -9 $$"])
    assert killed.returncode == 128 + signal.SIGKILL


def test_server_exit_ends_the_proxy_while_the_client_is_still_connected() -> None:
    proc = subprocess.Popen(
        proxy_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=cli_env(), cwd=ROOT
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"a":1}\n{"__exit__":5}\n')
    proc.stdin.flush()
    try:
        assert proc.wait(timeout=120) == 5
        assert proc.stdout.read() == b'{"a":1}\n'
    finally:
        proc.stdin.close()
        proc.stdout.close()


def start(*options: str, server_options: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """A proxy whose server has announced (on stderr) that its handlers are installed."""
    proc = subprocess.Popen(
        proxy_argv(*options, server=[*ECHO, "--stderr", "READY", *server_options]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=ROOT,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline() == b"READY\n"
    return proc


def finish(proc: subprocess.Popen[bytes], timeout: float = 120) -> tuple[int, bytes]:
    try:
        returncode = proc.wait(timeout=timeout)
    finally:
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stderr.close()
    return returncode, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_are_forwarded_to_the_server(signum: signal.Signals) -> None:
    proc = start()
    proc.send_signal(signum)
    returncode, err = finish(proc)
    assert err == f"echo_server: got {signum.name}\n".encode()
    assert returncode == 128 + signum  # the server's status: it chose to exit


def test_client_eof_closes_the_server_stdin_and_the_server_exits() -> None:
    # a shutdown timeout far beyond finish()'s deadline: waiting it out would hang the test
    proc = start("--shutdown-timeout", "3600", server_options=("--exit", "0"))
    assert proc.stdin is not None
    proc.stdin.close()
    returncode, err = finish(proc, timeout=120)
    assert returncode == 0
    assert err == b""  # no signal: the server ended on its own


def test_client_eof_then_sigterm_for_a_server_that_stays() -> None:
    proc = start("--shutdown-timeout", "0.2", server_options=("--stay",))
    assert proc.stdin is not None
    proc.stdin.close()
    returncode, err = finish(proc)
    assert err == b"echo_server: got SIGTERM\n"
    assert returncode == 128 + signal.SIGTERM


def test_client_eof_then_sigkill_for_a_server_that_ignores_sigterm() -> None:
    proc = start("--shutdown-timeout", "0.2", server_options=("--stay", "--ignore-term"))
    assert proc.stdin is not None
    proc.stdin.close()
    returncode, err = finish(proc, timeout=120)
    assert returncode == 128 + signal.SIGKILL
    assert err == b"echo_server: ignored SIGTERM\n"  # SIGTERM first, then SIGKILL


def test_a_closed_client_stdout_shuts_down_quietly() -> None:
    proc = start()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()  # the client stops reading
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"x"}\n')  # echoed into the closed pipe
    proc.stdin.flush()
    returncode, err = finish(proc)  # the client's stdin is still open here
    assert returncode == 0
    assert err == b""


def test_invalid_configuration_exits_2_before_the_server_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    cases = [
        ((), cli_env(DSH_LOOP_BRAKE_MAX_REPEATS="three"), b"DSH_LOOP_BRAKE_MAX_REPEATS"),
        (("-m", "0"), cli_env(), b"--max-repeats"),
        (("--log", str(tmp_path / "missing" / "log")), cli_env(), b"cannot open the log"),
    ]
    for options, env, needle in cases:
        result = run_proxy(b"", *options, server=server, env=env)
        assert result.returncode == 2, (options, result.stderr)
        assert needle in result.stderr
        assert b"Traceback" not in result.stderr
        assert result.stderr.count(b"\n") == 1
    assert not marker.exists()


def test_unrunnable_servers_and_missing_commands() -> None:
    missing = run_proxy(b"", server=["no-such-server-command-xyz", "--token", CANARY])
    assert missing.returncode == 127
    assert missing.stderr == (
        b"loop-brake mcp-proxy: cannot start the server: "
        b"no-such-server-command-xyz: command not found\n"
    )
    not_executable = run_proxy(b"", server=[str(ROOT / "tests" / "echo_server.py")])
    if os.access(ROOT / "tests" / "echo_server.py", os.X_OK):  # pragma: no cover
        pytest.skip("echo_server.py is executable here")
    assert not_executable.returncode == 126
    no_command = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy"],
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )
    assert no_command.returncode == 2
    assert b"Traceback" not in no_command.stderr


def test_options_after_the_server_command_belong_to_the_server() -> None:
    """Without ``--``, everything from the first word on is the server's command line."""
    result = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", *ECHO, "--exit", "3"],
        input=b"{}\n",
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 3
    assert result.stdout == b"{}\n"


def test_non_blocking_stdio_from_the_client_is_waited_on_not_taken_for_eof() -> None:
    """Some parents hand their children non-blocking pipes: a full or empty pipe
    must mean "wait", not "the client has gone"."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    for fd in (in_read, out_write):
        os.set_blocking(fd, False)
    proc = subprocess.Popen(proxy_argv(), stdin=in_read, stdout=out_write, env=cli_env(), cwd=ROOT)
    os.close(in_read)
    os.close(out_write)
    line = b'{"jsonrpc":"2.0","method":"x","params":"' + b"n" * (4 << 20) + b'"}\n'
    wait_in_syscall(proc.pid, "select")  # the proxy found the empty pipe and waits on it
    with os.fdopen(in_write, "wb") as to_proxy, os.fdopen(out_read, "rb") as from_proxy:
        to_proxy.write(line)
        to_proxy.flush()
        # the line came back from the server: the proxy waits on the full pipe (and on
        # the empty one again)
        wait_in_syscall(proc.pid, "select", threads=2)
        assert from_proxy.readline() == line
        to_proxy.close()
        assert from_proxy.read() == b""
    assert proc.wait(timeout=120) == 0


def test_the_server_gets_the_proxy_environment_and_working_directory(tmp_path: Path) -> None:
    server = ["sh", "-c", 'printf "%s|%s\\n" "$(pwd -P)" "$MCP_PROXY_TEST_MARK"']
    result = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--", *server],
        capture_output=True,
        env=cli_env(MCP_PROXY_TEST_MARK="mark-42", PYTHONPATH=str(ROOT)),
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{tmp_path.resolve()}|mark-42\n".encode()
