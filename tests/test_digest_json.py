"""``fast_digest`` through the C reader's ``digest_json``: the exact digest, or None.

Replay hashes parsed arguments with ``fast_canonical.fast_digest``; where the C
reader is built, orjson's plain (unsorted) dump is read and hashed by
``_event_scan.digest_json``, which must give ``canonical.call_digest`` or decline.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fastpath import VALUES

from loop_brake_cli.core.canonical import call_digest, utf8
from loop_brake_cli.readers import fast_canonical

_event_scan = pytest.importorskip(
    "loop_brake_cli.readers._event_scan",
    reason="the C reader loop_brake_cli.readers._event_scan is not built",
)
digest_json = _event_scan.digest_json

pytestmark = pytest.mark.skipif(not fast_canonical.AVAILABLE, reason="orjson is not installed")

# Parsed values that digest_json must take (not decline), with what makes each worth it.
TAKEN = [
    {"q": "weather", "limit": 10},  # members to sort
    {"b": {"d": 1, "c": [True, False, None]}, "a": ""},  # nested sorting, literals
    [0.25, 2.5, -0.5, 0.000015, 123456789012345, -7],  # numbers JavaScript prints as written
    {"text": 'line\nnext\ttab "quoted" back\\slash \b\f\r'},  # escapes JSON.stringify writes
    {"city": "Zürich 東京 \U0001f600"},  # non-ASCII values (not names)
    {"s": "\x01\x1f\x7f"},  # controls orjson writes as \u0001: rewritten as JSON.stringify does
    "a plain string",
    {},
    [],
]


@pytest.mark.parametrize("value", TAKEN)
def test_values_in_its_subset_are_hashed_there_and_exactly(value):
    got = digest_json(b"Bash\n", orjson.dumps(value))
    assert got is not None
    assert got == call_digest("Bash", value)


@pytest.mark.parametrize(
    "value",
    [
        1.0,  # JavaScript writes 1
        1e21,
        1e-7,
        1234567890123456,  # 16 digits
        {"é": 1},  # a non-ASCII name: the sort order question
    ],
)
def test_values_outside_it_are_declined_and_fast_digest_is_still_exact(value):
    assert digest_json(b"t\n", orjson.dumps(value)) is None
    assert fast_canonical.fast_digest("t", value) == call_digest("t", value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, st.sampled_from(["Bash", "\U0001f600", "Read", ""]))
def test_fast_digest_is_the_exact_digest_with_and_without_the_c_reader(value, tool):
    # a value as a parser made it (tuples, -0.0 and the like as JSON gives them back)
    parsed = orjson.loads(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    exact = call_digest(tool, parsed)
    answer = digest_json(utf8(tool + "\n"), orjson.dumps(parsed))
    assert answer is None or answer == exact
    assert fast_canonical.fast_digest(tool, parsed) == exact


def test_bad_arguments_are_a_type_error_not_a_crash():
    with pytest.raises(TypeError):
        digest_json("t\n", b"{}")
    with pytest.raises(TypeError):
        digest_json(b"t\n")
    assert digest_json(b"t\n", b"") is None
    assert digest_json(b"t\n", b"{} {}") is None
    assert digest_json(b"t\n", b'{"a":1,"a":2}') is None  # duplicate names


def test_digest_json_hashes_like_node(node: str) -> None:
    # test_fastpath_node's documents (every number spelling, escapes, astral keys ...),
    # parsed by orjson as replay parses them, then dumped plainly as fast_digest does
    from conftest import node_canonical
    from test_fastpath_node import _edge_documents
    from test_hash_node import random_documents

    batch = random_documents(3000) + _edge_documents(2000)
    payload = json.dumps([{"tool": t, "raw": r} for t, r in batch])
    theirs = node_canonical(node, payload.encode("ascii"))
    taken = 0
    for (tool, raw), expected in zip(batch, theirs, strict=True):
        try:
            parsed = orjson.loads(raw.encode("utf-8", "surrogatepass"))
        except orjson.JSONDecodeError:
            continue  # replay reads such a line with parse_json: not digest_json's input
        answer = digest_json(utf8(tool + "\n"), orjson.dumps(parsed))
        if answer is not None:
            taken += 1
            assert answer.hex() == expected["hash"], raw
    assert taken > 1000  # most documents are in its subset: the check checks something
