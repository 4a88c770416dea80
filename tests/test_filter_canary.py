"""Acceptance 3 for `filter` and `hash`: a secret in the arguments never comes out.

The canary sits in argument values and keys, in malformed lines, in a line too
long to read, in a line nested too deep, in a line whose tool name is missing or
not a string, and in `hash`'s ARGS_JSON (valid or not). No option combination
may print it, on stdout or stderr, in any spelling JSON could give it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import run_cli

SECRET = "sk-CANARY-9f1e-🔑-ßecret-7d3a"
SPELLINGS = [
    SECRET.encode("utf-8"),
    json.dumps(SECRET).encode("ascii").strip(b'"'),  # \ud83d\udd11 escapes
    b"CANARY-9f1e",
    b"7d3a",
]


def assert_no_secret(*streams: bytes) -> None:
    for stream in streams:
        for spelling in SPELLINGS:
            assert spelling not in stream


def _lines() -> list[bytes]:
    s = json.dumps(SECRET, ensure_ascii=False).encode("utf-8")  # "..."
    e = json.dumps(SECRET).encode("ascii")  # "...\\ud83d..."
    call = b'{"tool":"login","args":{"token":' + s + b'},"sessionId":"s1"}'
    return [
        call,
        call,
        call,  # denied: the message must not carry the arguments
        b'{"tool":"login","args":{' + e + b':1},"sessionId":"s1"}',  # secret as a key
        b'{"tool":"login","arguments":"' + SECRET.encode() + b'","sessionId":"s2"}',
        b'{"tool":"x","args":{"token":' + s + b',"n":NaN}}',
        b'{"tool":"x","args":{"token":' + s + b",}}",
        b'{"tool":"x","args":{"token":' + s + b"}",  # unterminated
        b'{"tool":"x","args":{"token":' + s + b'}} {"extra":' + s + b"}",
        b'{"tool":"x","args":{"token":' + s + b',"bad":"\xff\xfe"}}',  # invalid UTF-8 after it
        b"[" + s + b"]",  # not an object
        b'{"args":{"token":' + s + b"}}",  # tool name missing
        b'{"tool":{"token":' + s + b'},"args":{}}',  # tool name not a string
        b'{"tool":"x","callId":{"token":' + s + b"}}",  # callId of the wrong type
        b'{"tool":"x","args":{"token":' + s + b',"pad":"' + b"p" * 3000 + b'"}}',  # too long
        b'{"tool":"x","args":{"token":' + s + b',"d":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"tool":"x","args":{"token":' + s + b',"big":' + b"9" * 5000 + b"}}",
        b'{"tool":"x","note":' + s + b',"args":{}}',  # an unknown field
    ]


@pytest.fixture(scope="module")
def canary_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("canary")
    first, second = folder / "a.jsonl", folder / "b.jsonl"
    first.write_bytes(b"\n".join(_lines()) + b"\n")
    second.write_bytes(b"\r\n".join(reversed(_lines())))
    return [first, second]


FLAG_SETS = [
    ("-m", "1"),
    ("--only", "deny"),
    ("--only", "error"),
    ("--fail-on-deny",),
    ("--strict",),
    ("--summary",),
    ("--continue-sessions",),
]


@pytest.mark.parametrize(
    "flags",
    [
        tuple(itertools.chain.from_iterable(combo))
        for size in (0, 1, 2, len(FLAG_SETS))
        for combo in itertools.combinations(FLAG_SETS, size)
        if size != 2 or combo[0] == FLAG_SETS[0]
    ],
    ids=lambda flags: " ".join(flags) or "no-flags",
)
def test_filter_never_prints_the_secret(canary_files: list[Path], flags: tuple[str, ...]) -> None:
    both = run_cli("filter", "--max-line-bytes", "2000", *flags, *map(str, canary_files))
    data = canary_files[0].read_bytes()
    stdin = run_cli("filter", "--max-line-bytes", "2000", *flags, input=data)
    for result in (both, stdin):
        assert_no_secret(result.stdout, result.stderr)
        assert b"Traceback" not in result.stderr
    if "--only" not in flags:
        rows = [json.loads(line) for line in stdin.stdout.splitlines()]
        assert {row["verdict"] for row in rows} >= {"error", "deny"}
        assert sum(row["verdict"] == "error" for row in rows) >= 12


def test_the_denial_still_names_the_call(canary_files: list[Path]) -> None:
    result = run_cli("filter", str(canary_files[0]))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    deny = rows[2]
    assert deny["verdict"] == "deny" and deny["toolName"] == "login"
    assert len(deny["hashPrefix"]) == 12


@pytest.mark.parametrize(
    "args_json",
    [
        json.dumps({"token": SECRET}),
        json.dumps({SECRET: [SECRET]}, ensure_ascii=False),
        '{"token":"' + SECRET + '"',
        '{"token":"' + SECRET + '",}',
        '{"token":"' + SECRET + '","n":NaN}',
        "'" + SECRET + "'",
        SECRET,
        "[" * 5000 + json.dumps(SECRET) + "]" * 5000,
    ],
)
def test_hash_never_prints_the_secret(args_json: str) -> None:
    for extra in ((), ("--full",)):
        result = run_cli("hash", *extra, "login", args_json)
        assert_no_secret(result.stdout, result.stderr)
        assert b"Traceback" not in result.stderr
        if result.returncode == 0:
            digest = result.stdout.strip().decode()
            assert len(digest) == (64 if extra else 12)
            assert all(c in "0123456789abcdef" for c in digest)
        else:
            assert result.returncode == 2 and result.stdout == b""


def test_hash_with_invalid_utf8_argument() -> None:
    result = run_cli("hash", "login", b'{"token":"' + SECRET.encode() + b'\xff"}')  # type: ignore[arg-type]
    assert result.returncode == 2
    assert b"not valid UTF-8" in result.stderr
    assert_no_secret(result.stdout, result.stderr)
