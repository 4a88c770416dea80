"""The progress mode's canonical form, as expected values written from its documented
rule (progress.py, docs/policies.md): each default pattern deletes its matches line by
line, an MCP result keeps only ``content`` and ``isError`` (false when absent), and the
digest is sha256 of the canonical JSON of what is left. The hook, the proxy and replay
all hash through ``progress``, so their agreement cannot catch a break here."""

from __future__ import annotations

import hashlib

import pytest

from loop_brake_cli.core.progress import digest_of_hex, normalise, result_digest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("started pid 4242 ok", "started  ok"),
        ("started PID: 4242 ok", "started  ok"),
        ("started pid=4242 ok", "started  ok"),
        ("started Pid #4242 ok", "started  ok"),
        ("rapid 4242", "rapid 4242"),  # \bpid\b: a word of its own
        ("pid\n4242", "pid\n4242"),  # a pattern never joins lines
        ("pid 1\npid 2", "\n"),
        ("out\nChunk ID: 9a8b\nmore", "out\n\nmore"),
        ("Chunk ID: 9a8b", ""),
        ("see Chunk ID: 9a8b", "see Chunk ID: 9a8b"),  # ^...$: the whole line only
        ("Wall time: 1.5 seconds", ""),
        ("x\nWall time: 0.0021 seconds\ny", "x\n\ny"),
        ("at 9:05:01 done", "at  done"),
        ("at 11:43:08.120 done", "at  done"),
        ("on 2026-05-11T11:43:08.123Z", "on "),
        ("on 2026-05-11 11:43:08+02:00.", "on ."),
        ("took 3.78s and 1316ms and 2 us", "took  and  and "),
        ("took 1.2 seconds", "took "),
        ('{"duration_seconds":2.2,"exit":0}', '{,"exit":0}'),
        ("exit code 1", "exit code 1"),
        ("3 files", "3 files"),
    ],
    ids=repr,
)
def test_the_default_patterns(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_containers_are_cleaned_inside_and_a_tuple_like_a_list() -> None:
    assert normalise(("pid 1", "x", {"k": ["pid 2"]})) == ["", "x", {"k": [""]}]
    assert normalise({"a": "pid 3", "b": 3}) == {"a": "", "b": 3}
    assert result_digest(("pid 1", 2)) == result_digest(["pid 9", 2])


def _sha(canonical: str) -> bytes:
    return hashlib.sha256(canonical.encode("utf-8")).digest()


def test_an_mcp_result_is_its_content_and_is_error() -> None:
    content = [{"type": "text", "text": "pid 4242 at 11:43:08"}]
    expected = _sha('{"content":[{"text":" at ","type":"text"}],"isError":false}')
    assert result_digest({"content": content}) == expected
    assert result_digest({"content": content, "isError": False}) == expected
    assert result_digest({"content": content, "_meta": {"took": 1}}) == expected
    assert result_digest({"content": content, "structuredContent": {"a": 1}}) == expected
    error = _sha('{"content":[{"text":" at ","type":"text"}],"isError":true}')
    assert result_digest({"content": content, "isError": True}) == error
    other = {"content": content, "extra": 1}  # not an MCP result: hashed whole
    assert result_digest(other) == _sha('{"content":[{"text":" at ","type":"text"}],"extra":1}')


def test_strings_and_values_digest_as_their_canonical_json() -> None:
    assert result_digest("1") == _sha('"1"') != result_digest(1) == _sha("1")
    assert result_digest({"b": 1, "a": "pid 2"}) == _sha('{"a":"","b":1}')
    assert result_digest("pid 2", ()) == _sha('"pid 2"')  # no patterns: nothing removed


def test_a_host_digest_is_exactly_64_hex_characters() -> None:
    assert digest_of_hex("ab" * 32) == bytes.fromhex("ab" * 32)
    assert digest_of_hex("AB" * 32) == bytes.fromhex("ab" * 32)
    for bad in ("a" * 65, "a" * 63, "g" * 64, " " + "a" * 64, "a" * 64 + "\n", 5, None):
        assert digest_of_hex(bad) is None
