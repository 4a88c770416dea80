"""The hash contract, pinned by vectors that Node.js produced.

``tests/vectors/canonical.json`` holds raw JSON text, a tool name, and what
``tests/js/canonical.mjs`` (the specification in a dozen lines of JavaScript)
printed for it: the canonical form and the sha256, or the name of the error
``JSON.parse`` threw. These tests need no Node; test_hash_node.py regenerates the
file with Node and checks it still agrees. Regenerate after adding a case with::

    node tests/js/canonical_reference.mjs < tests/vectors/canonical.json > new.json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import node_canonical

from loop_brake_cli.core.canonical import (
    JSONInputError,
    call_hash,
    canonical_json,
    hash_prefix,
    parse_json,
)

VECTORS_PATH = Path(__file__).parent / "vectors" / "canonical.json"
VECTORS = json.loads(VECTORS_PATH.read_text("utf-8"))
VALID = [v for v in VECTORS if "hash" in v]
INVALID = [v for v in VECTORS if "error" in v]


def _id(vector: dict) -> str:
    return vector["note"][:60]


def test_vectors_cover_the_issue_examples() -> None:
    by_raw = {(v["tool"], v["raw"]): v for v in VALID}
    assert (
        by_raw[("search", '{"q":"weather"}')]["hash"]
        == "35dca543bb3bd644ba0724701fbaacb94cb7ef4e01e1d81f9c270199c0ef60bb"
    )
    assert (
        by_raw[("search", '{"b":2,"a":1}')]["hash"] == by_raw[("search", '{"a":1,"b":2}')]["hash"]
    )
    assert (
        by_raw[("search", '{"q":"weather "}')]["hash"]
        != by_raw[("search", '{"q":"weather"}')]["hash"]
    )
    assert by_raw[("t", '{"n":1.0}')]["canonical"] == '{"n":1}'
    assert by_raw[("t", '{"n":1e21}')]["canonical"] == '{"n":1e+21}'
    assert (
        by_raw[("t", "[-0,12345678901234567890,1e400,0.1]")]["canonical"]
        == "[0,12345678901234567000,null,0.1]"
    )
    emoji = r'{"k":"\ud83d\ude00","\uff01":1,"\ud83d\ude00":2}'
    assert by_raw[("t", emoji)]["canonical"] == '{"k":"😀","😀":2,"！":1}'
    assert len(VALID) >= 100 and len(INVALID) >= 30


@pytest.mark.parametrize("vector", VALID, ids=_id)
def test_canonical_form_and_hash_equal_nodes(vector: dict) -> None:
    args = parse_json(vector["raw"].encode("utf-8"))
    assert canonical_json(args) == vector["canonical"]
    assert call_hash(vector["tool"], args) == vector["hash"]
    assert hash_prefix(call_hash(vector["tool"], args)) == vector["hash"][:12]


@pytest.mark.parametrize("vector", INVALID, ids=_id)
def test_what_node_rejects_is_rejected(vector: dict) -> None:
    with pytest.raises(JSONInputError):
        parse_json(vector["raw"].encode("utf-8"))


def test_lone_surrogate_in_tool_name_hashes_as_replacement_character() -> None:
    lone = call_hash("\ud800search", {})
    assert lone == call_hash("\ufffdsearch", {})
    assert lone != call_hash("search", {})


def test_vectors_file_is_what_node_prints(node: str) -> None:
    """The committed vectors are exactly Node's output for their inputs, today."""
    text = VECTORS_PATH.read_text("utf-8")
    assert node_canonical(node, text.encode("utf-8"), timeout=60) == VECTORS


def test_hash_command_prints_the_same_as_node() -> None:
    """`loop-brake hash` on a few vectors: the prefix by default, all of it with --full."""
    from conftest import run_cli

    picked = [v for v in VALID if v["tool"].isascii() and v["tool"].isprintable()][::15]
    assert len(picked) >= 5
    for vector in picked:
        prefix = run_cli("hash", vector["tool"], vector["raw"])
        full = run_cli("hash", "--full", vector["tool"], vector["raw"])
        assert prefix.stdout.decode().strip() == vector["hash"][:12], vector["note"]
        assert full.stdout.decode().strip() == vector["hash"], vector["note"]
    default = run_cli("hash", "search")
    assert default.stdout.strip() == run_cli("hash", "search", "{}").stdout.strip()


def test_hash_command_sorts_a_lone_surrogate_key_after_an_astral_one() -> None:
    """Issue 9: the JSON text holds \\u escapes; Node prints 34de1ec6a21b (the vector)."""
    from conftest import run_cli

    raw = r'{"10\udfff":100,"10\ud83d\ude00":false}'
    result = run_cli("hash", "t", raw)
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout == b"34de1ec6a21b\n"
    by_raw = {(v["tool"], v["raw"]): v for v in VALID}
    assert by_raw[("t", raw)]["hash"].startswith("34de1ec6a21b")
    assert by_raw[("t", raw)]["canonical"] == '{"10\U0001f600":false,"10\\udfff":100}'
