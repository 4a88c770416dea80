"""The proxy keeps the client's bytes: batches, big ids, big numbers, ids in answers.

Numbers are read as doubles (as JavaScript reads them), so nothing the proxy
forwards or echoes may be re-serialised from parsed values: the kept elements
of a batch are forwarded with their own bytes and a denial answer carries the
request's id as the client wrote it. ``tests/echo_server.py --record`` keeps
every line the server received, to compare bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

from loop_brake_cli.core.canonical import call_hash
from loop_brake_cli.core.verdicts import deny_message

ECHO = [sys.executable, str(ROOT / "tests" / "echo_server.py")]
BIG_ID = b"12345678901234567891"
BIG_NUMBER = b"9007199254740993"


def call(request_id: bytes, name: str = "t", arguments: bytes = b'{"a":1}') -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":'
        + request_id
        + b',"method":"tools/call","params":{"name":"'
        + name.encode()
        + b'","arguments":'
        + arguments
        + b"}}"
    )


def cancel(request_id: bytes) -> bytes:
    body = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":'
    return body + request_id + b"}}"


def answer(id_bytes: bytes, count: int, limit: int, name: str = "t", arguments=None) -> bytes:
    """The denial answer, written out by hand around the id as the client sent it."""
    prefix = call_hash(name, {"a": 1} if arguments is None else arguments)[:12]
    text = deny_message(name, count, limit, prefix).replace('"', '\\"').replace("\n", "\\n")
    return (
        b'{"jsonrpc":"2.0","id":'
        + id_bytes
        + b',"result":{"content":[{"type":"text","text":"'
        + text.encode()
        + b'"}],"isError":true}}'
    )


def proxy(lines: list[bytes], tmp: Path, *options: str) -> tuple[list[bytes], list[bytes]]:
    """(what the client got, what the server received), line by line."""
    record = tmp / "received"
    done = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", *options, "--", *ECHO]
        + ["--record", str(record)],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    received = record.read_bytes().splitlines() if record.exists() else []
    return done.stdout.splitlines(), received


def test_a_batch_with_a_denial_forwards_the_other_elements_byte_for_byte(tmp_path: Path) -> None:
    big = call(BIG_ID, "other", b'{"n":' + BIG_NUMBER + b',"f":1.10,"s":"]},\\"[{"}')
    note = b'{ "jsonrpc" : "2.0" , "method" : "notifications/progress" , "params" : { } }'
    denied = call(b'"r\\u00e9-\\"]}"')  # escapes and brackets inside the id string
    # the denied call first: the big-id call is a call too (of another tool)
    batch = b"[ " + denied + b" ,\t" + big + b" , " + note + b" ]"
    got, received = proxy([call(b"1"), batch], tmp_path, "-m", "2")
    assert received == [call(b"1"), b"[" + big + b"," + note + b"]"]
    assert b"[" + answer(b'"r\\u00e9-\\"]}"', 2, 2) + b"]" in got
    assert BIG_ID in received[1] and BIG_NUMBER in received[1]  # not 1.2345678901234567e+19


def test_a_batch_of_denials_only_forwards_nothing(tmp_path: Path) -> None:
    batch = b"[" + call(b"2") + b"," + call(b"3.0") + b"]"
    got, received = proxy([call(b"1"), batch], tmp_path, "-m", "2")
    assert received == [call(b"1")]
    assert sorted(got) == sorted(
        [call(b"1"), b"[" + answer(b"2", 2, 2) + b"," + answer(b"3.0", 3, 2) + b"]"]
    )


def test_a_single_denial_echoes_the_id_bytes(tmp_path: Path) -> None:
    twice = call(b"1").replace(b'"id":1,', b'"id":1,"id":7e0,')
    got, received = proxy([call(b"-0"), twice], tmp_path, "-m", "2")
    assert received == [call(b"-0")]
    assert answer(b"7e0", 2, 2) in got  # the parser keeps the last "id"; so does the answer


ODD_IDS = [
    BIG_ID,
    b"1.5",
    b"1e400",
    b"123456789012345678901234567890",
    b"true",
    b'{"k":[1,"}"]}',
    b"[1, 2]",
]


@pytest.mark.parametrize("odd_id", ODD_IDS)
def test_a_call_whose_id_is_not_a_call_id_is_judged_and_answered_with_its_bytes(
    tmp_path: Path, odd_id: bytes
) -> None:
    """Issue 23: such calls were forwarded unjudged, so their client was never braked.
    Judged without a call id (never a duplicate), denied at the third call."""
    arguments = b'{"a":' + BIG_NUMBER + b"}"
    lines = [call(odd_id, arguments=arguments)] * 4
    log = tmp_path / "log"
    got, received = proxy(lines, tmp_path, "--log", str(log))
    assert received == lines[:2]
    denied = [answer(odd_id, count, 3, arguments={"a": 9007199254740993}) for count in (3, 4)]
    assert sorted(got) == sorted(lines[:2] + denied)
    verdicts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(v["verdict"], v["count"], "callId" in v) for v in verdicts] == [
        ("pass", 1, False),
        ("pass", 2, False),
        ("deny", 3, False),
        ("deny", 4, False),
    ]


def test_a_cancellation_is_dropped_once_per_answer(tmp_path: Path) -> None:
    tools_list = b'{"jsonrpc":"2.0","id":4,"method":"tools/list"}'
    lines = [
        call(b"1"),
        call(b"3"),  # denied: answered by the proxy
        call(b"3"),  # sent again after its answer: a new call (issue 36.3), denied again
        cancel(b"3"),  # dropped
        cancel(b"3"),  # dropped: the second answer
        cancel(b"3"),  # forwarded: nothing left to cancel here
        call(b"4"),  # denied
        tools_list,  # id 4 reused for a request the server gets
        cancel(b"4"),  # so its cancellation reaches the server
        cancel(b'"1"'),  # a different id
    ]
    got, received = proxy(lines, tmp_path, "-m", "2")
    assert received == [call(b"1"), cancel(b"3"), tools_list, cancel(b"4"), cancel(b'"1"')]
    assert answer(b"3", 2, 2) in got and answer(b"3", 3, 2) in got
    assert answer(b"4", 4, 2) in got


def test_ids_1_and_string_1_stay_apart_in_answers_and_cancellations(tmp_path: Path) -> None:
    """Issue 42: a proxy that merged 1 and "1" would drop the cancellation of "1" (a
    request the server has) as if it cancelled the denied 1, and count them as one."""
    lines = [
        call(b'"1"', arguments=b'{"a":2}'),  # forwarded: the server has "1"
        call(b"5"),
        call(b"6"),
        call(b"1"),  # denied (the third): answered by the proxy
        cancel(b'"1"'),  # the server's request: forwarded
        cancel(b"1"),  # the proxy's answer: dropped
        cancel(b"1"),  # nothing left: forwarded
    ]
    got, received = proxy(lines, tmp_path, "-m", "3")
    assert received == [lines[0], lines[1], lines[2], cancel(b'"1"'), cancel(b"1")]
    assert answer(b"1", 3, 3) in got


def response(request_id: bytes, text: bytes = b"ok") -> bytes:
    """A tools/call response; sent by the client, the echo server hands it back as its own."""
    body = b'{"jsonrpc":"2.0","id":' + request_id + b',"result":{"content":[{"type":"text","text":"'
    return body + text + b'"}]}}'


WARNING_BLOCK = b',{"type":"text","text":"loop brake: '


def test_only_the_answer_to_a_warned_call_gets_the_warning(tmp_path: Path) -> None:
    """Issue 42: a request of the server's own that reuses a warned call's id (the echo
    of the call itself here) passes unchanged and leaves the warning for the answer; an
    answer to "2" is not one to 2."""
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    lines = [call(b"1"), call(b"2"), response(b'"2"'), response(b"2"), response(b"2")]
    got, received = proxy(lines, tmp_path, "--policy", str(policy))
    assert received == lines
    assert got.count(call(b"2")) == 1  # the server's request with id 2: unchanged
    warned = [line for line in got if WARNING_BLOCK in line]
    assert len(warned) == 1 and warned[0].startswith(response(b"2")[:-4])
    assert got.count(response(b"2")) == 1 and response(b'"2"') in got


def test_shadow_mode_adds_no_warning(tmp_path: Path) -> None:
    """Issue 42: under --shadow every server line reaches the client as it was."""
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    lines = [call(b"1"), response(b"1"), call(b"2"), response(b"2"), call(b"3"), call(b"4")]
    got, received = proxy(lines, tmp_path, "--policy", str(policy), "--shadow")
    assert received == lines
    assert sorted(got) == sorted(lines)
