"""The filter fast path against Node.js: hashes of thousands of random documents.

The documents are those of ``test_hash_node`` (raw JSON text: every number
spelling, escapes, astral and lone-surrogate strings, tricky keys, duplicates,
some invalid), plus a batch aimed at the fast path's edges (floats of every
magnitude, integers around 2**53 and 2**64, keys that sort differently by code
point and by UTF-16 unit). Each becomes an event line in its own session and
goes through ``fastpath.filter_events``; every hashPrefix must be Node's, and a
document Node rejects must get an error verdict. A last batch takes the fast
path's key-order condition apart: every pair of keys that first differ where
code-point and UTF-16 order can part. Skipped without node.
"""

from __future__ import annotations

import io
import json
import random

import pytest
from conftest import node_canonical
from test_hash_node import random_documents

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_hash, parse_json
from loop_brake_cli.readers import fastpath, prove
from loop_brake_cli.readers.output import LineWriter
from loop_brake_cli.readers.pipeline import Tally
from loop_brake_cli.readers.reader import Source

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

EDGE_NUMBERS = [
    "0.1",
    "0.5",
    "2.5",
    "1.0",
    "-0.0",
    "1e21",
    "1e20",
    "1e-7",
    "1e-6",
    "1e-5",
    "0.000001",
    "1e16",
    "1e15",
    "123456789.125",
    "9007199254740991",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "5e-324",
    "1.7976931348623157e308",
    "0.30000000000000004",
    "100",
    "1E2",
    "12e-1",
]
EDGE_KEYS = ["\U0001f600", "\uff01", "\ue000", "\ud7ff", "a", "10", "2", "\u00e9", ""]
EDGE_KEYS += ["a\U0001f600", "a\uff01", "a\uffff", "10\U00010000", "10\ue000", "10\ud7ff"]
# Where code-point and UTF-16 order can part (lone surrogates never reach orjson, but
# are here to show they go the exact way).
KEY_CHARS = ["a", "2", "\u00e9", "\u3042", "\ud7ff", "\ue000", "\uff01", "\uffff", "\U00010000"]
KEY_CHARS += ["\U0001f600", "\U0010ffff", "\ud800", "\ud83d", "\udc00", "\udfff"]


def _edge_documents(count: int, seed: int = 6) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    docs = []
    for _ in range(count):
        pairs = []
        for _ in range(rnd.randint(0, 4)):
            key = json.dumps(rnd.choice(EDGE_KEYS), ensure_ascii=rnd.random() < 0.3)
            value = rnd.choice(
                [rnd.choice(EDGE_NUMBERS), repr(rnd.uniform(-1e6, 1e6)), repr(rnd.random() / 1e5)]
                + [str(rnd.getrandbits(60)), json.dumps("x\u2028\x7f\n\x01y"), "[1,2.5,true]"]
            )
            pairs.append(f"{key}:{value}")
        docs.append(("tool", "{" + ",".join(pairs) + "}"))
    return docs


def _collect() -> list[tuple[str, str]]:
    return random_documents(10_000) + _edge_documents(3000)


def _fast_verdicts(batch: list[tuple[str, str]]) -> list[dict]:
    lines = []
    for i, (tool, raw) in enumerate(batch):
        head = '{"tool":' + json.dumps(tool) + ',"sessionId":"s' + str(i) + '","args":'
        raw = raw.replace("\r", " ").replace("\n", " ")  # whitespace only: strings escape them
        lines.append((head + raw + "}").encode("utf-8", "surrogatepass"))
    out = io.BytesIO()
    writer = LineWriter(out)
    source = Source(io.BytesIO(b"\n".join(lines) + b"\n"), "t", 1 << 24, writer.flush)
    fastpath.filter_events(source, LoopBrake(3), Tally(), writer, {"pass", "deny", "error"})
    writer.flush()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_fast_path_hashes_like_node(node: str) -> None:
    batch = _collect()
    payload = json.dumps([{"tool": t, "raw": r} for t, r in batch])
    theirs = node_canonical(node, payload.encode("ascii"))
    ours = _fast_verdicts(batch)
    assert len(ours) == len(theirs) == len(batch)
    mismatches = []
    fast = 0
    for (tool, raw), expected, verdict in zip(batch, theirs, ours, strict=True):
        if "error" in expected:
            same = verdict["verdict"] == "error"
        elif expected["canonical"] == "null" and parse_json(raw) is None:  # null args are {}
            same = verdict.get("hashPrefix") == call_hash(tool, {})[:12]
        else:
            same = verdict.get("hashPrefix") == expected["hash"][:12]
        if not same:
            mismatches.append({"tool": tool, "raw": raw, "node": expected, "ours": verdict})
        try:
            if fastpath.fast_canonical(prove._loads(raw)) is not None:
                fast += 1
        except prove._DecodeError:
            pass
    assert not mismatches, json.dumps(mismatches[:5], indent=1)[:4000]
    assert fast > len(batch) / 4  # the fast path itself was exercised, not only its fallbacks


def _key_pairs() -> list[tuple[str, str]]:
    """Two-key objects whose keys share a prefix and first differ at a character from
    KEY_CHARS against another (every ordered pair, followed by random characters), or
    at the character after one (every pair): every way the two orders can part."""
    rnd = random.Random(16)
    tails = ("", *KEY_CHARS)
    pairs = []
    for prefix in ("", "a"):
        for x in KEY_CHARS:
            for y in KEY_CHARS:
                if x != y:
                    for _ in range(3):
                        pairs.append(
                            (prefix + x + rnd.choice(tails), prefix + y + rnd.choice(tails))
                        )
            for i, u in enumerate(tails):
                for v in tails[i + 1 :]:
                    pairs.append((prefix + x + u, prefix + x + v))
    return [("t", "{" + json.dumps(a) + ":1," + json.dumps(b) + ":2}") for a, b in pairs]


def _has_lone_surrogate(raw: str) -> bool:
    """Whether a parsed key holds a lone surrogate (a high one before a low one is a pair)."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for key in parse_json(raw) for ch in key)


def test_fast_canonical_declines_every_key_order_it_would_get_wrong(node: str) -> None:
    """The fallback condition, for key order: orjson sorts by code point, Node by UTF-16
    unit. For every pair of keys that first differ at any of the characters where the
    two orders can part, fast_canonical gives Node's canonical form or declines; only
    keys with a lone surrogate are refused by orjson (and go the exact way)."""
    docs = _key_pairs()
    theirs = node_canonical(node, json.dumps([{"tool": t, "raw": r} for t, r in docs]).encode())
    fast = declined = 0
    for (_, raw), expected in zip(docs, theirs, strict=True):
        try:
            args = prove._loads(raw)
        except prove._DecodeError:
            assert _has_lone_surrogate(raw), raw
            continue
        out = fastpath.fast_canonical(args)
        if out is None:
            declined += 1
        else:
            fast += 1
            assert out.decode("utf-8") == expected["canonical"], raw
    assert fast > 1000 and declined > 500
