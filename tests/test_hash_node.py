"""Differential proof of the hash: thousands of random JSON documents, ours vs Node's.

Hypothesis writes raw JSON *text* (so number literals, escapes, whitespace and
duplicate keys vary, not just values), our parser + canonical_json + call_hash
run on it, and Node.js runs ``tests/js/canonical.mjs`` on the same text ONCE for
the whole batch. Every canonical form and hash must be equal, and what JSON.parse
rejects we must reject too. Skipped, with the reason, where node is not on PATH.
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import NO_NODE_REASON, NODE, node_canonical, run_cli
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from loop_brake_cli.canonical import JSONInputError, call_hash, canonical_json, parse_json

DOCUMENTS = 3000

# Every character, lone surrogates included (hypothesis leaves out category Cs by default).
ANY_CHAR = st.characters(codec=None, categories=None)
TRICKY_CHARS = st.sampled_from(
    list('\x00\x01\x08\x09\x0a\x0c\x0d\x1f\x7f"\\/é！')
    + ["\u2028", "\u2029", "\ufeff", "\ue000", "\uffff", "\ufffd", "\ud800", "\udbff", "\udc00"]
    + ["\udfff", "😀", "\U00010000", "\U0010ffff", "\u0301"]
)
STRINGS = st.text(st.one_of(ANY_CHAR, TRICKY_CHARS), max_size=12)
TRICKY_KEYS = st.sampled_from(
    ["10", "2", "1", "01", "", "a", "A", "😀", "！", "\ue000", "\uffff", "\U00010000"]
    + ["\ud800", "\udc00", "\ud83d", "__proto__", "constructor", "toString", "é", "e\u0301"]
)
KEYS = st.one_of(TRICKY_KEYS, STRINGS)

DIGITS = st.text("0123456789", min_size=1, max_size=25)
LONG_DIGITS = st.integers(300, 1200).map(lambda n: "7" * n)


@st.composite
def number_literal(draw: st.DrawFn) -> str:
    """A JSON number literal: any valid spelling, from 0 to 1e400 and 1200 digits."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return str(draw(st.integers(-(2**70), 2**70)))
    if kind == 1:
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == 2:
        return draw(st.sampled_from(["-0", "-0.0", "1E+2", "1e400", "-1e400", "1e-400", "5e-324"]))
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.one_of(st.just("0"), DIGITS.map(lambda d: "1" + d), LONG_DIGITS))
    frac = draw(
        st.one_of(st.just(""), DIGITS.map(lambda d: "." + d), LONG_DIGITS.map(lambda d: "." + d))
    )
    exp = ""
    if draw(st.booleans()):
        exp = draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"]))
        exp += str(draw(st.integers(0, 420)))
    return sign + whole + frac + exp


def write_string(value: str, rnd: random.Random) -> str:
    """A JSON string literal for ``value``, escaping at random where JSON allows it."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
        short["\t"] = "\\t"
        if ch in short and (code < 0x20 or ch in '"\\' or rnd.random() < 0.5):
            out.append(short[ch])
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


@st.composite
def raw_json(draw: st.DrawFn, rnd: random.Random, depth: int = 0) -> str:
    """Raw JSON text; objects may repeat keys (the last one wins).

    ``rnd`` (drawn once per document) picks escapes and whitespace."""
    if depth >= 4:
        kind = draw(st.integers(0, 4))
    else:
        kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(st.sampled_from(["true", "false", "null"]))
    if kind in (1, 2):
        return draw(number_literal())
    if kind in (3, 4):
        return write_string(draw(STRINGS), rnd)
    if kind == 5:
        items = draw(st.lists(raw_json(rnd, depth + 1), max_size=4))
        inner = ",".join(space(rnd) + item + space(rnd) for item in items)
        return "[" + (inner or space(rnd)) + "]"
    pairs = draw(st.lists(st.tuples(KEYS, raw_json(rnd, depth + 1)), max_size=5))
    if pairs and draw(st.booleans()):
        key, _ = draw(st.sampled_from(pairs))
        pairs.append((key, draw(raw_json(rnd, depth + 1))))  # a duplicate key
    inner = ",".join(
        space(rnd) + write_string(k, rnd) + space(rnd) + ":" + space(rnd) + v + space(rnd)
        for k, v in pairs
    )
    return "{" + (inner or space(rnd)) + "}"


BREAKERS = ["NaN", "Infinity", "-Infinity", "01", "+1", ".5", "1.", "1e", "0x1", "'a'"]


@st.composite
def document(draw: st.DrawFn) -> tuple[str, str]:
    """(tool name, raw args text); about one in twelve is made invalid on purpose."""
    tool = draw(st.one_of(STRINGS, st.sampled_from(["search", "read_file", "\ud800x"])))
    raw = draw(raw_json(random.Random(draw(st.integers(0, 2**32)))))
    if draw(st.integers(0, 11)) == 0:
        how = draw(st.integers(0, 2))
        if how == 0:
            raw = "[" + raw + "," + draw(st.sampled_from(BREAKERS)) + "]"
        elif how == 1:
            raw = "[" + raw + ",]"
        else:
            raw = '{"a":' + raw + ",}"
    return tool, raw


def random_documents(count: int) -> list[tuple[str, str]]:
    """``count`` documents drawn the same way on every run (derandomized, no shrinking)."""
    batch: list[tuple[str, str]] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(document())
    def collect(doc: tuple[str, str]) -> None:
        batch.append(doc)

    collect()
    return batch


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
    assert len(batch) >= DOCUMENTS * 0.9
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
