"""``filter --shard K/N``: N processes, each with a share of the sessions, together
give exactly the verdicts of one process."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from conftest import cli_env, run_cli

from loop_brake_cli.readers.shard import parse_shard, shard_of


def _stream(n: int = 600, seed: int = 3) -> bytes:
    rnd = random.Random(seed)
    sessions = [f"s{i}" for i in range(9)] + ["\u00e9t\u00e9", "\U0001f600"]
    lines = []
    for i in range(n):
        kind = rnd.random()
        if kind < 0.04:
            lines.append(rnd.choice([b"{", b"[]", b'{"tool": 1}', b"\xff", b"   "]))
            continue
        event = {
            "tool": rnd.choice(["search", "read"]),
            "args": {"q": rnd.choice(["a", "b"]), "n": rnd.choice([1, 2.5])},
            "callId": f"c{i}",
        }
        if kind < 0.1:
            event["agentId"] = rnd.choice(sessions)
        elif kind < 0.9:
            event["sessionId"] = rnd.choice(sessions)
        lines.append(json.dumps(event).encode())
    return b"\n".join(lines) + b"\n"


def _verdicts(output: bytes) -> dict[int, bytes]:
    return {json.loads(line)["line"]: line for line in output.splitlines()}


@pytest.mark.parametrize("exact", ["", "1"])
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_union_of_shards_equals_one_process(tmp_path, shards, exact):
    path = tmp_path / "events.jsonl"
    path.write_bytes(_stream())
    env = cli_env(LOOP_BRAKE_EXACT=exact)
    single = run_cli("filter", "-m", "2", str(path), env=env)
    assert single.returncode == 0, single.stderr
    whole = _verdicts(single.stdout)
    union: dict[int, bytes] = {}
    for k in range(shards):
        part = run_cli("filter", "-m", "2", "--shard", f"{k}/{shards}", str(path), env=env)
        assert part.returncode == 0, part.stderr
        mine = _verdicts(part.stdout)
        assert not set(mine) & set(union), "a line was judged by two shards"
        union.update(mine)
        lines = [json.loads(line)["line"] for line in part.stdout.splitlines()]
        assert lines == sorted(lines)  # each shard keeps input order
    assert union == whole
    assert any(b'"deny"' in line for line in whole.values())


def test_each_session_belongs_to_one_shard(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(_stream())
    seen: dict[str, int] = {}
    for k in range(4):
        out = run_cli("filter", "--shard", f"{k}/4", "--only", "pass", "--only", "deny", str(path))
        for line in out.stdout.splitlines():
            session = json.loads(line)["sessionId"]
            assert seen.setdefault(session, k) == k
            assert shard_of(session, 4) == k


def test_the_shard_hash_is_the_documented_one():
    # first 8 bytes of sha256 of the UTF-8 session key, big-endian, mod N
    for key in ["s1", "default", "\u00e9t\u00e9", "\U0001f600", ""]:
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        for n in (1, 2, 7, 1000):
            assert shard_of(key, n) == int.from_bytes(digest[:8], "big") % n
    assert shard_of("s1", 4) == 3  # pinned: changing it re-partitions every deployment
    assert shard_of("x\ud800", 3) == shard_of("x\ufffd", 3)


@pytest.mark.parametrize("bad", ["2/2", "-1/2", "1", "a/b", "0/0", "1/"])
def test_bad_shard_is_a_usage_error(bad):
    with pytest.raises(ValueError):
        parse_shard(bad)
    result = run_cli("filter", "--shard", bad, input=b"")
    assert result.returncode == 2
    assert b"--shard" in result.stderr


def test_parse_shard_accepts_k_of_n():
    assert parse_shard("0/1") == (0, 1)
    assert parse_shard("3/4") == (3, 4)
