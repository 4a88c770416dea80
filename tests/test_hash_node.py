"""Differential proof of the hash: tens of thousands of random JSON documents, ours vs Node's.

A seeded generator writes raw JSON *text* (so number literals, escapes, whitespace
and duplicate keys vary, not just values), our parser + canonical_json + call_hash
run on it, and Node.js runs ``tests/js/canonical.mjs`` on the same text ONCE for
the whole batch. Every canonical form and hash must be equal, and what JSON.parse
rejects we must reject too. Many objects hold a family of keys that share a prefix
and differ in one character from the places where code-point order and UTF-16
order part (lone high and low surrogates, astral characters, U+E000..U+FFFF).
Skipped, with the reason, where node is not on PATH.

The generator is plain ``random.Random`` with a fixed seed (the same documents on
every run): hypothesis, derandomized, took 2.5 ms a document for the same shapes,
this takes about 35 us, so the batch can be 50,000 documents.
"""

from __future__ import annotations

import json
import random
import struct

import pytest
from conftest import NO_NODE_REASON, NODE, node_canonical, run_cli

from loop_brake_cli.core.canonical import JSONInputError, call_hash, canonical_json, parse_json

DOCUMENTS = 50_000
SEED = 9

TRICKY_CHARS = list('\x00\x01\x08\x09\x0a\x0c\x0d\x1f\x7f"\\/é！')
TRICKY_CHARS += ["\u2028", "\u2029", "\ufeff", "\ue000", "\uffff", "\ufffd", "\ud800", "\udbff"]
TRICKY_CHARS += ["\udc00", "\udfff", "😀", "\U00010000", "\U0010ffff", "\u0301"]
TRICKY_KEYS = ["10", "2", "1", "01", "", "a", "A", "😀", "！", "\ue000", "\uffff", "\U00010000"]
TRICKY_KEYS += ["\ud800", "\udc00", "\ud83d", "__proto__", "constructor", "toString", "é"]
TRICKY_KEYS += ["e\u0301"]
# Where code-point and UTF-16 order part: lone high surrogates (U+D83D is the first
# unit of 😀), lone low ones, astral characters, U+E000..U+FFFF; and some below U+D800.
# Each class: a few chosen characters, and the whole range to draw from.
SPECIAL_CLASSES = [
    (["\ud800", "\ud83d", "\udbff", "\ud83c"], (0xD800, 0xDBFF)),
    (["\udc00", "\ude00", "\udfff", "\ude01"], (0xDC00, 0xDFFF)),
    (["😀", "😁", "\U00010000", "\U0010ffff", "\U0001f5ff"], (0x10000, 0x10FFFF)),
    (["\ue000", "！", "\uffff", "\ufffd", "\ufeff", "\uf8ff"], (0xE000, 0xFFFF)),
    (["\ud7ff", "a", "2", "é", "\u3042"], (0x80, 0xD7FF)),
]
PREFIXES = ["", "", "10", "a", "k", "😀", "\ud83d", "\ue000", "key_"]
SPECIAL_FLOATS = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1]
SPECIAL_FLOATS += [1e16, 1e21, 1e-7, 1e-6, 9007199254740993.0, 123456789.125, 1.5e300]
SPECIAL_LITERALS = ["-0", "-0.0", "1E+2", "1e400", "-1e400", "1e-400", "5e-324"]
BREAKERS = ["NaN", "Infinity", "-Infinity", "01", "+1", ".5", "1.", "1e", "0x1", "'a'"]
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
SHORT_ESCAPES["\t"] = "\\t"


def any_char(rnd: random.Random) -> str:
    """Any character, lone surrogates included, weighted towards the interesting ones."""
    roll = rnd.random()
    if roll < 0.40:
        return chr(rnd.randint(0x20, 0x7E))
    if roll < 0.60:
        return rnd.choice(TRICKY_CHARS)
    if roll < 0.65:
        return chr(rnd.randint(0, 0x1F))
    if roll < 0.75:
        return chr(rnd.randint(0x80, 0xD7FF))
    if roll < 0.83:
        return chr(rnd.randint(0xD800, 0xDFFF))
    if roll < 0.91:
        return chr(rnd.randint(0xE000, 0xFFFF))
    return chr(rnd.randint(0x10000, 0x10FFFF))


def random_string(rnd: random.Random, max_size: int = 12) -> str:
    return "".join(any_char(rnd) for _ in range(rnd.randint(0, max_size)))


def special_char(rnd: random.Random) -> str:
    """A character from one of the classes where code-point and UTF-16 order part."""
    chosen, (low, high) = rnd.choice(SPECIAL_CLASSES)
    return rnd.choice(chosen) if rnd.random() < 0.7 else chr(rnd.randint(low, high))


def key_family(rnd: random.Random) -> list[str]:
    """Keys sharing a prefix and differing in one special character, sometimes
    followed by another (``"\\ud83d\\uffff"`` against ``"😀"``) or plain text."""
    prefix = rnd.choice(PREFIXES)
    keys = []
    for _ in range(rnd.randint(2, 6)):
        suffix = rnd.choice(["", "", "", "x", special_char(rnd), special_char(rnd)])
        keys.append(prefix + special_char(rnd) + suffix)
    return keys


def key(rnd: random.Random) -> str:
    return rnd.choice(TRICKY_KEYS) if rnd.random() < 0.4 else random_string(rnd)


def random_float(rnd: random.Random) -> float:
    roll = rnd.random()
    if roll < 0.3:
        return rnd.choice(SPECIAL_FLOATS)
    if roll < 0.6:
        while True:  # any finite double, by its bits
            value = struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0]
            if value == value and abs(value) != float("inf"):
                return value
    if roll < 0.8:
        return rnd.uniform(-1e6, 1e6)
    return rnd.random() * 10.0 ** rnd.randint(-320, 300)


def digits(rnd: random.Random) -> str:
    return "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 25)))


def long_digits(rnd: random.Random) -> str:
    return "7" * rnd.randint(300, 1200)


def number_literal(rnd: random.Random) -> str:
    """A JSON number literal: any valid spelling, from 0 to 1e400 and 1200 digits."""
    kind = rnd.randint(0, 5)
    if kind == 0:
        if rnd.random() < 0.2:
            return str(rnd.choice([2**53 - 1, 2**53, 2**53 + 1, 2**63, 2**64, -(2**63), 2**70]))
        return str(rnd.getrandbits(rnd.randint(0, 70)) * rnd.choice([1, -1]))
    if kind == 1:
        return repr(random_float(rnd))
    if kind == 2:
        return rnd.choice(SPECIAL_LITERALS)
    sign = rnd.choice(["", "-"])
    roll = rnd.random()
    whole = "0" if roll < 0.45 else "1" + digits(rnd) if roll < 0.9 else long_digits(rnd)
    roll = rnd.random()
    frac = "" if roll < 0.45 else "." + digits(rnd) if roll < 0.9 else "." + long_digits(rnd)
    exp = ""
    if rnd.random() < 0.5:
        exp = rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.randint(0, 420))
    return sign + whole + frac + exp


def write_string(value: str, rnd: random.Random) -> str:
    """A JSON string literal for ``value``, escaping at random where JSON allows it."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in SHORT_ESCAPES and (code < 0x20 or ch in '"\\' or rnd.random() < 0.5):
            out.append(SHORT_ESCAPES[ch])
        elif ch == "/" and rnd.random() < 0.5:
            out.append("\\/")
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF or rnd.random() < 0.2:
            if code > 0xFFFF:
                high, low = divmod(code - 0x10000, 0x400)
                units = [0xD800 + high, 0xDC00 + low]
            else:
                units = [code]
            for unit in units:
                esc = f"\\u{unit:04x}"
                out.append(esc.upper().replace("\\U", "\\u") if rnd.random() < 0.3 else esc)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def space(rnd: random.Random) -> str:
    return rnd.choice(["", "", "", " ", "\t", "\r\n", "\n  "])


def raw_json(rnd: random.Random, depth: int = 0) -> str:
    """Raw JSON text; objects may repeat keys (the last one wins), and about half of
    them hold a key family (see ``key_family``), maybe among ordinary keys."""
    kind = rnd.randint(0, 4 if depth >= 4 else 6)
    if kind == 0:
        return rnd.choice(["true", "false", "null"])
    if kind in (1, 2):
        return number_literal(rnd)
    if kind in (3, 4):
        return write_string(random_string(rnd), rnd)
    if kind == 5:
        items = [raw_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
        inner = ",".join(space(rnd) + item + space(rnd) for item in items)
        return "[" + (inner or space(rnd)) + "]"
    keys = [key(rnd) for _ in range(rnd.randint(0, 5))]
    if rnd.random() < 0.5:
        keys = keys[: rnd.randint(0, 2)] + key_family(rnd)
        rnd.shuffle(keys)
    pairs = [(k, raw_json(rnd, depth + 1)) for k in keys]
    if pairs and rnd.random() < 0.5:
        pairs.append((rnd.choice(pairs)[0], raw_json(rnd, depth + 1)))  # a duplicate key
    inner = ",".join(
        space(rnd) + write_string(k, rnd) + space(rnd) + ":" + space(rnd) + v + space(rnd)
        for k, v in pairs
    )
    return "{" + (inner or space(rnd)) + "}"


def document(rnd: random.Random) -> tuple[str, str]:
    """(tool name, raw args text); about one in twelve is made invalid on purpose."""
    if rnd.random() < 0.5:
        # a high surrogate drawn next to a low one is one astral character, as in any
        # tool name read from JSON (and as Node sees it once the batch is sent)
        tool = random_string(rnd).encode("utf-16-le", "surrogatepass")
        tool = tool.decode("utf-16-le", "surrogatepass")
    else:
        tool = rnd.choice(["search", "read_file", "\ud800x"])
    raw = raw_json(rnd)
    if rnd.randint(0, 11) == 0:
        how = rnd.randint(0, 2)
        if how == 0:
            raw = "[" + raw + "," + rnd.choice(BREAKERS) + "]"
        elif how == 1:
            raw = "[" + raw + ",]"
        else:
            raw = '{"a":' + raw + ",}"
    return tool, raw


def random_documents(count: int, seed: int = SEED) -> list[tuple[str, str]]:
    """``count`` documents, the same ones on every run."""
    rnd = random.Random(seed)
    return [document(rnd) for _ in range(count)]


def _ours(tool: str, raw: str) -> dict:
    try:
        args = parse_json(raw.encode("utf-8"))
    except JSONInputError:
        return {"error": True}
    return {"canonical": canonical_json(args), "hash": call_hash(tool, args)}


@pytest.fixture(scope="module")
def node_batch() -> list[tuple[str, str, dict]]:
    """DOCUMENTS random (tool, raw) pairs and what Node printed for each (one node run)."""
    if NODE is None:
        pytest.skip(NO_NODE_REASON)
    batch = random_documents(DOCUMENTS)
    for doc in batch:
        _ours(*doc)  # our side must never crash, whatever the text
    payload = json.dumps([{"tool": t, "raw": r} for t, r in batch])  # \udxxx-escaped
    theirs = node_canonical(NODE, payload.encode("ascii"))
    assert len(theirs) == len(batch)
    return [(tool, raw, expected) for (tool, raw), expected in zip(batch, theirs, strict=True)]


def test_random_documents_hash_like_node(node_batch: list[tuple[str, str, dict]]) -> None:
    mismatches = []
    for tool, raw, expected in node_batch:
        ours = _ours(tool, raw)
        if "error" in expected:
            same = "error" in ours
        else:
            same = ours == {"canonical": expected["canonical"], "hash": expected["hash"]}
        if not same:
            mismatches.append({"tool": tool, "raw": raw, "node": expected, "ours": ours})
    errors = sum("error" in expected for _, _, expected in node_batch)
    assert not mismatches, json.dumps(mismatches[:5], indent=1)[:4000]
    assert 0 < errors < len(node_batch) / 4  # both sides were exercised


def test_filter_prints_nodes_prefix_for_every_document(
    node_batch: list[tuple[str, str, dict]],
) -> None:
    """The same documents as event lines through `loop-brake filter` (whatever fast
    path it takes): every hashPrefix is Node's, every document Node rejects is an error."""
    lines = []
    for tool, raw, _ in node_batch:
        one_line = raw.replace("\r", " ").replace("\n", " ")  # only ever whitespace
        lines.append('{"tool":' + json.dumps(tool) + ',"args":' + one_line + "}")
    result = run_cli("filter", "-m", "1000000", input="\n".join(lines).encode("utf-8"))
    assert result.returncode == 0 and result.stderr == b""
    rows = [json.loads(line) for line in result.stdout.split(b"\n") if line]
    assert len(rows) == len(node_batch)
    for (tool, raw, expected), row in zip(node_batch, rows, strict=True):
        if "error" in expected:
            assert row["verdict"] == "error", (tool, raw)
        elif parse_json(raw.encode("utf-8")) is None:
            assert row["hashPrefix"] == call_hash(tool, {})[:12]  # "args": null means {}
        else:
            assert row.get("hashPrefix") == expected["hash"][:12], (tool, raw, row)


def test_key_order_and_number_spelling_never_change_the_hash() -> None:
    """Without Node: properties the specification implies."""
    assert call_hash("t", parse_json('{"b":[1.0,1e0],"a":{"y":1,"x":2}}')) == call_hash(
        "t", parse_json('{"a":{"x":2,"y":1},"b":[1,1]}')
    )
    assert canonical_json(parse_json('{"a":1,"a":2}')) == '{"a":2}'
    assert (
        canonical_json(parse_json("[1E+2,-0,1e-7,1.5e-7,0.000001]"))
        == "[100,0,1e-7,1.5e-7,0.000001]"
    )
