"""Deterministic input generators for the benchmarks (no arguments ever printed).

* ``events(n)``: ~150-byte event lines, 7 interleaved sessions, streaks of 1..6,
  30% of streaks a brand-new call (the rest reuse one of the session's earlier
  calls, so alternations happen), nested args with strings, ints, booleans,
  lists and a few floats, every event with its own call id.
* ``distinct_sessions(n)``: the same shape of event, each in its own session.
* ``claude_transcript(target_bytes)``: a Claude Code session transcript (assistant
  messages with ``usage`` and a ``tool_use`` block, user ``tool_result`` blocks with
  realistic padding): calls, results and usage all flow through replay.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

WORDS = (
    "weather forecast berlin python asyncio retry backoff invoice parser "
    "kubernetes pod crash loop release notes changelog latency budget"
).split()
DIRS = ("src", "lib", "tests", "docs", "app/api", "app/models", "scripts")
EXTS = ("py", "ts", "md", "json", "yaml")


def _args(rng: random.Random) -> tuple[str, dict]:
    kind = rng.randrange(4)
    if kind == 0:
        args = {
            "q": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))),
            "limit": rng.choice((5, 10, 20)),
            "filters": {"safe": rng.random() < 0.5, "lang": rng.choice(("en", "de", "fr"))},
        }
        if rng.random() < 0.15:
            args["temperature"] = rng.choice((0.2, 0.7, 1.5))
        return "search", args
    if kind == 1:
        path = f"{rng.choice(DIRS)}/{rng.choice(WORDS)}_{rng.randrange(100)}.{rng.choice(EXTS)}"
        start = rng.randrange(1, 500)
        return "read_file", {"path": path, "range": [start, start + rng.randrange(10, 200)]}
    if kind == 2:
        test = f"tests/test_{rng.choice(WORDS)}.py"
        args = {"cmd": ["pytest", "-q", test], "env": {"CI": True}, "timeout": rng.choice((30, 60))}
        if rng.random() < 0.15:
            args["timeout"] = rng.choice((2.5, 0.25))
        return "run_shell", args
    path = f"{rng.choice(DIRS)}/{rng.choice(WORDS)}.{rng.choice(EXTS)}"
    return "edit_file", {
        "path": path,
        "edits": [{"line": rng.randrange(1, 400), "text": rng.choice(WORDS)}],
        "dry_run": rng.random() < 0.3,
    }


def events(n: int, sessions: int = 7, seed: int = 6) -> Iterator[bytes]:
    rng = random.Random(seed)
    names = [f"sess-{i:02d}-{rng.randrange(16**8):08x}" for i in range(sessions)]
    current: list[tuple[str, dict] | None] = [None] * sessions
    left = [0] * sessions
    pools: list[list[tuple[str, dict]]] = [[] for _ in range(sessions)]
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    for i in range(n):
        s = rng.randrange(sessions)
        if left[s] == 0:
            pool = pools[s]
            if not pool or rng.random() < 0.3:
                call = _args(rng)
                pool.append(call)
                if len(pool) > 8:
                    pool.pop(0)
            else:
                call = rng.choice(pool)
            current[s] = call
            left[s] = rng.randint(1, 6)
        left[s] -= 1
        tool, args = current[s]  # type: ignore[misc]
        event = {"tool": tool, "args": args, "sessionId": names[s], "callId": f"call_{i:07d}"}
        yield (dumps(event) + "\n").encode()


def distinct_sessions(n: int, seed: int = 7) -> Iterator[bytes]:
    rng = random.Random(seed)
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    for i in range(n):
        tool, args = _args(rng)
        event = {"tool": tool, "args": args, "sessionId": f"s{i:07d}-{rng.randrange(16**6):06x}"}
        event["callId"] = f"call_{i:07d}"
        yield (dumps(event) + "\n").encode()


def escaped_long(n: int, size: int = 102_000, seed: int = 9) -> Iterator[bytes]:
    """Distinct long arguments, each holding one ``\\u00e9`` (json.dumps' ASCII
    escape): the corner where the C reader used to decline every line (issue 30)."""
    rng = random.Random(seed)
    for i in range(n):
        text = "".join(rng.choice(WORDS) + " " for _ in range(size // 8))[:size] + "caf\u00e9"
        event = {"tool": "write_file", "args": {"path": f"/tmp/f{i}", "content": text}}
        event.update(sessionId=f"s{i % 7}", callId=f"call_{i:07d}")
        yield (json.dumps(event, separators=(",", ":")) + "\n").encode()


def near_limit(n: int, size: int = 7_800_000, seed: int = 10) -> Iterator[bytes]:
    """Distinct lines just under the default 8 MiB line limit, half of them repeated
    once: what the caches must not hold by the thousand."""
    rng = random.Random(seed)
    for i in range(n):
        text = f"{i:08d}" + "".join(rng.choice(WORDS) for _ in range(size // 6))[:size]
        event = {"tool": "write_file", "args": {"content": text}, "sessionId": "s"}
        line = (json.dumps({**event, "callId": f"c{i}"}, separators=(",", ":")) + "\n").encode()
        yield line
        if i % 2:
            yield line.replace(f'"c{i}"'.encode(), f'"c{i}b"'.encode())


def claude_transcript(target_bytes: int, seed: int = 8, usage: bool = True) -> Iterator[bytes]:
    """Claude Code JSONL: assistant tool_use / user tool_result pairs, each assistant
    line with its message id and usage (``usage=False``: neither, the transcript
    issue 12's replay target was first measured on)."""
    rng = random.Random(seed)
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    session = "0f3c2a1e-7b7d-4c1a-9e55-2d7f3c8b9a10"
    written = 0
    i = 0
    while written < target_bytes:
        tool, args = _args(rng)
        use_id = f"toolu_{i:012d}"
        message: dict = {"role": "assistant", "model": "claude-sonnet"}
        if usage:
            message = {"id": f"msg_{i:012d}", **message}
            message["usage"] = {
                "input_tokens": rng.randint(3, 40),
                "output_tokens": rng.randint(20, 400),
                "cache_read_input_tokens": rng.randint(1000, 90000),
                "cache_creation_input_tokens": rng.randint(0, 2000),
            }
        message["content"] = [
            {"type": "text", "text": "Let me check that. " * rng.randint(1, 4)},
            {"type": "tool_use", "id": use_id, "name": tool, "input": args},
        ]
        assistant = {
            "type": "assistant",
            "sessionId": session,
            "uuid": f"a-{i}",
            "timestamp": "2026-11-29T12:00:00.000Z",
            "message": message,
        }
        result = {
            "type": "user",
            "sessionId": session,
            "uuid": f"u-{i}",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use_id,
                        "content": "line of output\n" * rng.randint(5, 60),
                    }
                ],
            },
        }
        for obj in (assistant, result):
            data = (dumps(obj) + "\n").encode()
            written += len(data)
            yield data
        i += 1


def write(path: str, lines: Iterator[bytes]) -> int:
    size = 0
    with open(path, "wb") as fh:
        batch: list[bytes] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 4096:
                data = b"".join(batch)
                fh.write(data)
                size += len(data)
                batch.clear()
        data = b"".join(batch)
        fh.write(data)
        size += len(data)
    return size
