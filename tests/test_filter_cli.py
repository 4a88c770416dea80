"""`loop-brake filter` from the outside: bad input, exit codes, options, signals.

Every bad-input case must give a located error (line number, what was wrong),
keep going, and never show a Python traceback. These run the real CLI in a
subprocess (``python -m loop_brake_cli``), as a user or a script would.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, run_cli, spawn_cli, wait_in_syscall

SEARCH = b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}'
OTHER = b'{"tool":"read_file","args":{"path":"a"},"sessionId":"s1"}'


def verdicts(stdout: bytes) -> list[dict]:
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]


def assert_clean(result: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in result.stderr
    assert b"Traceback" not in result.stdout


def one_bad_line(bad: bytes, **kwargs: object) -> tuple[dict, dict]:
    """Run [bad, good] and return the two verdicts; the good line must still pass."""
    result = run_cli("filter", *kwargs.get("args", ()), input=bad + b"\n" + SEARCH + b"\n")
    assert_clean(result)
    assert result.returncode == 0, result.stderr
    rows = verdicts(result.stdout)
    assert len(rows) == 2
    assert rows[1]["verdict"] == "pass" and rows[1]["line"] == 2
    return rows[0], rows[1]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (b'{"tool":"search","args":{"q":"weather"}', "not valid JSON"),
        (b'{"tool":"search" "args":{}}', "at column 18"),
        (b'{"tool":"caf\xe9"}', "not valid UTF-8"),
        (b"\xff\xfe\x00", "not valid UTF-8 at column 1"),
        (b'{"tool":"x","args":{"a":NaN}}', "NaN is not a JSON value"),
        (b'{"tool":"x","args":Infinity}', "Infinity is not a JSON value"),
        (b'{"tool":"x","args":-Infinity}', "not valid JSON"),
        (b'{"tool":"x","args":[1,2,]}', "not valid JSON"),
        (b'{"tool":"x",}', "not valid JSON"),
        (b'{"tool":"x"} trailing', "extra data"),
        (b"[1,2,3]", "not a JSON object"),
        (b'"search"', "not a JSON object"),
        (b"null", "not a JSON object"),
        (b'{"tool":5,"args":{}}', "tool name not a string"),
        (b'{"args":{"q":1}}', "tool name missing"),
        (b'{"tool":"x","sessionId":5}', "sessionId is not a string"),
        (b'{"tool":"x","agentId":{"a":1}}', "agentId is not a string"),
        (b'{"tool":"x","callId":1.5}', "callId is not a string or an integer"),
        pytest.param(
            b'{"tool":"x","args":' + b"[" * 100000 + b"]" * 100000 + b"}",
            "nested too deep",
            id="arrays-100000-deep",  # a readable id: the line itself is 200 kB
        ),
        pytest.param(
            b'{"tool":"x","args":' + b'{"a":' * 100000 + b"1" + b"}" * 100000 + b"}",
            "nested too deep",
            id="objects-100000-deep",
        ),
    ],
)
def test_bad_line_gets_located_error_and_run_goes_on(bad: bytes, expected: str) -> None:
    error, _ = one_bad_line(bad)
    assert error["verdict"] == "error"
    assert error["line"] == 1
    assert expected in error["error"]


def test_line_longer_than_limit_is_an_error_and_the_next_line_is_judged() -> None:
    long_line = b'{"tool":"x","args":{"s":"' + b"y" * 5000 + b'"}}'
    error, _ = one_bad_line(long_line, args=("--max-line-bytes", "1000"))
    assert error == {"verdict": "error", "line": 1, "error": "line longer than 1000 bytes"}
    # A line of exactly the limit is fine (CRLF's \r does not count).
    exact = b'{"tool":"x","args":{"s":"' + b"y" * (1000 - 28) + b'"}}'
    assert len(exact) == 1000
    result = run_cli("filter", "--max-line-bytes", "1000", input=exact + b"\r\n")
    assert verdicts(result.stdout)[0]["verdict"] == "pass"


RSS_PROBE = """
import sys
from loop_brake_cli.cli import main
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS inherited from the parent
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
sys.stderr.write("peak_kb=" + peak + "\\n")
sys.exit(code)
"""


def _peak_kb(data: bytes, *args: str) -> tuple[int, list[dict]]:
    result = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, "filter", *args],
        input=data,
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    peak = int(result.stderr.decode().rsplit("peak_kb=", 1)[1])
    return peak, verdicts(result.stdout)


@pytest.mark.skipif(
    not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux /proc peak-RSS reset"
)
def test_a_50_mb_line_is_never_held_in_memory() -> None:
    huge = b'{"tool":"x","args":{"s":"' + b"z" * 50_000_000 + b'"}}\n' + SEARCH + b"\n"
    baseline, _ = _peak_kb(SEARCH + b"\n", "--max-line-bytes", "1000")
    peak, rows = _peak_kb(huge, "--max-line-bytes", "1000")
    assert rows[0] == {"verdict": "error", "line": 1, "error": "line longer than 1000 bytes"}
    assert rows[1]["verdict"] == "pass" and rows[1]["line"] == 2
    # The 50 MB line would add 50 000 kB at least; reading in 64 KiB chunks adds ~nothing.
    assert peak - baseline < 10_000, (baseline, peak)


def test_bom_crlf_and_blank_lines(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + SEARCH + b"\r\n\r\n   \n" + SEARCH + b"\r\n\n" + SEARCH
    for source in ("stdin", "file"):
        if source == "file":
            path = tmp_path / "bom.jsonl"
            path.write_bytes(data)
            result = run_cli("filter", str(path))
        else:
            result = run_cli("filter", input=data)
        assert_clean(result)
        rows = verdicts(result.stdout)
        assert [(r["verdict"], r["line"], r["count"]) for r in rows] == [
            ("pass", 1, 1),
            ("pass", 4, 2),
            ("deny", 6, 3),
        ]


def test_fail_on_deny_and_strict_exit_codes() -> None:
    loop = (SEARCH + b"\n") * 3
    assert run_cli("filter", input=loop).returncode == 0
    assert run_cli("filter", "--fail-on-deny", input=loop).returncode == 1
    assert run_cli("filter", "--fail-on-deny", input=SEARCH + b"\n").returncode == 0
    bad = SEARCH + b"\nnot json\n"
    assert run_cli("filter", input=bad).returncode == 0
    assert run_cli("filter", "--strict", input=bad).returncode == 3
    assert run_cli("filter", "--strict", input=loop).returncode == 0
    # Unreadable input outranks a deny.
    assert run_cli("filter", "--strict", "--fail-on-deny", input=loop + b"{\n").returncode == 3


def test_missing_file_is_named_and_other_files_still_run(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(SEARCH + b"\n")
    missing = tmp_path / "no-such-file.jsonl"
    result = run_cli("filter", str(missing), str(good))
    assert_clean(result)
    assert result.returncode == 3
    assert str(missing).encode() in result.stderr
    rows = verdicts(result.stdout)
    assert rows == [dict(rows[0], file=str(good))] and rows[0]["verdict"] == "pass"


@pytest.mark.parametrize("value", ["abc", "0", "2.5", "-1", "5x", "1e3", "true"])
def test_invalid_env_max_repeats_exits_2_before_reading_input(value: str) -> None:
    """stdin is a pipe nobody writes to or closes: only an early exit can return."""
    proc = spawn_cli("filter", env=cli_env(DSH_LOOP_BRAKE_MAX_REPEATS=value))
    try:
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stdout, stderr = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert status == 2
    assert stdout == b""
    assert b"DSH_LOOP_BRAKE_MAX_REPEATS" in stderr and value.encode() in stderr
    assert b"Traceback" not in stderr


@pytest.mark.parametrize(("value", "limit"), [(" 5 ", 5), ("", 3), ("1", 1), ("+2", 2)])
def test_env_max_repeats_accepted_forms(value: str, limit: int) -> None:
    result = run_cli("filter", input=SEARCH + b"\n", env=cli_env(DSH_LOOP_BRAKE_MAX_REPEATS=value))
    assert result.returncode == 0, result.stderr
    assert verdicts(result.stdout)[0]["maxRepeats"] == limit


def test_flag_wins_over_env_and_bad_flags_exit_2() -> None:
    env = cli_env(DSH_LOOP_BRAKE_MAX_REPEATS="7")
    assert (
        verdicts(run_cli("filter", "-m", "2", input=SEARCH + b"\n", env=env).stdout)[0][
            "maxRepeats"
        ]
        == 2
    )
    for bad in ("0", "-3", "abc", "2.5"):
        result = run_cli("filter", "-m", bad, input=SEARCH + b"\n")
        assert result.returncode == 2, bad
        assert result.stdout == b""
        assert_clean(result)


def test_only_selects_verdict_kinds() -> None:
    data = (SEARCH + b"\n") * 3 + b"oops\n" + OTHER + b"\n"
    kinds = lambda *only: [  # noqa: E731
        r["verdict"]
        for r in verdicts(run_cli("filter", *[f"--only={o}" for o in only], input=data).stdout)
    ]
    assert kinds() == ["pass", "pass", "deny", "error", "pass"]
    assert kinds("deny") == ["deny"]
    assert kinds("error") == ["error"]
    assert kinds("pass", "error") == ["pass", "pass", "error", "pass"]
    assert run_cli("filter", "--only", "nope", input=data).returncode == 2


def test_multiple_files_add_file_and_reset_streaks(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes((SEARCH + b"\n") * 2)
    second.write_bytes(SEARCH + b"\n")
    rows = verdicts(run_cli("filter", str(first), str(second)).stdout)
    assert [(r["file"], r["line"], r["count"]) for r in rows] == [
        (str(first), 1, 1),
        (str(first), 2, 2),
        (str(second), 1, 1),
    ]
    rows = verdicts(run_cli("filter", "--continue-sessions", str(first), str(second)).stdout)
    assert [(r["count"], r["verdict"]) for r in rows] == [(1, "pass"), (2, "pass"), (3, "deny")]
    single = verdicts(run_cli("filter", str(first)).stdout)
    assert "file" not in single[0]
    # "-" in the list is stdin, labelled as such.
    rows = verdicts(run_cli("filter", str(first), "-", input=SEARCH + b"\n").stdout)
    assert rows[-1]["file"] == "<stdin>" and rows[-1]["count"] == 1


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes((SEARCH + b"\n" + OTHER + b"\n") * 100_000)
    producer = subprocess.Popen(
        [sys.executable, "-m", "loop_brake_cli", "filter", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=ROOT,
    )
    head = subprocess.run(["head", "-1"], stdin=producer.stdout, capture_output=True, timeout=60)
    producer.stdout.close()  # type: ignore[union-attr]
    status = producer.wait(timeout=60)
    stderr = producer.stderr.read()  # type: ignore[union-attr]
    producer.stderr.close()  # type: ignore[union-attr]
    assert json.loads(head.stdout)["line"] == 1
    assert stderr == b""
    assert status == 0


def test_ctrl_c_exits_130_without_traceback() -> None:
    proc = spawn_cli("filter")
    try:
        proc.stdin.write(SEARCH + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # a generous deadline: a hang
        assert ready, "no verdict within 120 s"
        first = proc.stdout.readline()  # type: ignore[union-attr]  # it is up and waiting
        assert json.loads(first)["verdict"] == "pass"
        wait_in_syscall(proc.pid, "read", fd=0)  # it waits for the next line
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read()  # type: ignore[union-attr]
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()  # type: ignore[union-attr]
    assert status == 130
    assert b"Traceback" not in stderr
    assert b"interrupted" in stderr


def test_python_dash_m_help_lists_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert b"filter" in result.stdout and b"hash" in result.stdout
    assert b"loop-brake help exit-codes" in b" ".join(result.stdout.split())
    result = run_cli("filter", "--help")
    assert result.returncode == 0
    for option in (b"--max-repeats", b"--only", b"--fail-on-deny", b"--strict", b"--summary"):
        assert option in result.stdout
    assert b"--continue-sessions" in result.stdout and b"--max-line-bytes" in result.stdout


def test_summary_goes_to_stderr_and_leaves_stdout_alone() -> None:
    data = (SEARCH + b"\n") * 3 + b"oops\n"
    plain = run_cli("filter", input=data)
    summarised = run_cli("filter", "--summary", input=data)
    assert summarised.stdout == plain.stdout
    assert plain.stderr == b""
    text = " ".join(summarised.stderr.decode().split())  # rich wraps at 80 columns
    assert "3 calls" in text and "1 denied" in text and "1 unreadable" in text
    assert "maxRepeats = 3 (default)" in text


def test_verdict_line_schema() -> None:
    data = (
        b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c7"}\n'
        b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c8"}\n'
        b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c9"}\n'
        b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1","callId":"c9"}\n'
        b'{"tool":"search","args":{"q":"weather"},"sessionId":"s1"}\n'
    )
    out = run_cli("filter", input=data).stdout
    # the exact path (records.verdict_record) writes the same bytes as the fast path
    assert run_cli("filter", input=data, env={**cli_env(), "LOOP_BRAKE_EXACT": "1"}).stdout == out
    lines = out.decode().splitlines()
    assert lines[0] == (
        '{"verdict":"pass","line":1,"toolName":"search","sessionId":"s1","callId":"c7",'
        '"count":1,"maxRepeats":3,"hashPrefix":"35dca543bb3b"}'
    )
    message = (
        'loop brake: tool \\"search\\" called 3 times in a row with identical arguments '
        "(call 35dca543bb3b\u2026, limit 3); the call was denied before it ran.\\n"
        "Change the arguments, call a different tool, or stop."
    )
    assert lines[2] == (
        '{"verdict":"deny","line":3,"toolName":"search","sessionId":"s1","callId":"c9",'
        '"count":3,"maxRepeats":3,"hashPrefix":"35dca543bb3b","code":"LOOP_BRAKE",'
        f'"plugin":"dsh-loop-brake","message":"{message}"}}'
    )
    doc = (ROOT / "docs" / "filter.md").read_text(encoding="utf-8")
    assert lines[0] + "\n" + lines[2] + "\n" in doc  # the schema as docs/filter.md shows it
    duplicate = json.loads(lines[3])
    assert duplicate["duplicate"] is True and duplicate["count"] == 3
    assert duplicate["verdict"] == "deny"
    last = json.loads(lines[4])
    assert "callId" not in last and last["count"] == 4 and last["verdict"] == "deny"


def test_gzip_input_and_a_truncated_gzip(tmp_path: Path) -> None:
    import gzip

    good = tmp_path / "log.jsonl.gz"
    good.write_bytes(gzip.compress(b"\xef\xbb\xbf" + (SEARCH + b"\n") * 3))
    truncated = tmp_path / "cut.gz"
    truncated.write_bytes(good.read_bytes()[:20])
    result = run_cli("filter", str(truncated), str(good))
    assert_clean(result)
    assert result.returncode == 3
    assert str(truncated).encode() in result.stderr
    rows = verdicts(result.stdout)
    assert [(r["file"], r["count"], r["verdict"]) for r in rows] == [
        (str(good), 1, "pass"),
        (str(good), 2, "pass"),
        (str(good), 3, "deny"),
    ]
