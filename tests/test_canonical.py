"""canonical.py unit behaviour beyond the Node vectors: Python-side values, errors.

The vectors (test_canonical_vectors.py) and the differential test
(test_hash_node.py) pin what JSON text hashes to. These pin what the library
does with values a Python host builds itself, and how bad input is reported.
"""

from __future__ import annotations

import pytest

from loop_brake_cli.core.canonical import (
    JSONInputError,
    call_hash,
    canonical_json,
    hash_prefix,
    js_number,
    js_string,
    parse_json,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # Expected values printed by Node: String(x) for each double.
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (123e-20, "1.23e-18"),
        (-1.5e300, "-1.5e+300"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2.0**53, "9007199254740992"),
        (2.0**53 + 2, "9007199254740994"),
        (12345678901234567890.0, "12345678901234567000"),
        (0.30000000000000004, "0.30000000000000004"),
        (float("inf"), "null"),
        (float("-inf"), "null"),
        (float("nan"), "null"),
    ],
)
def test_js_number(value: float, expected: str) -> None:
    assert js_number(value) == expected


def test_python_values_hash_like_their_json() -> None:
    assert canonical_json({"t": (1, 2), "f": 2.0, "b": True, "n": None}) == (
        '{"b":true,"f":2,"n":null,"t":[1,2]}'
    )
    # Python ints beyond 2**53 become doubles, as Number(BigInt) would; 10**400 is Infinity.
    assert canonical_json([2**53 + 1, 10**21, 10**400, -(10**400)]) == (
        "[9007199254740992,1e+21,null,null]"
    )
    assert call_hash("t", {"n": 1}) == call_hash("t", {"n": 1.0})


def test_js_string_escapes() -> None:
    assert js_string('"\\\b\f\n\r\t\x00\x1f\x7f\u2028😀\ud800') == (
        '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\u2028😀\\ud800"'
    )


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", {"a": object()}])
def test_non_json_values_raise_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        canonical_json(value)


SECRET = "hunter2-canary"


@pytest.mark.parametrize(
    "raw",
    [
        '{"k":"' + SECRET + '"',
        '{"k":"' + SECRET + '",}',
        '["' + SECRET + '",NaN]',
        SECRET,
        '{"k":"' + SECRET + '"} extra',
        "[" * 100_000 + "]" * 100_000,
        '{"k":"' + SECRET + '\x01"}',
    ],
)
def test_parse_errors_are_located_and_quote_nothing(raw: str) -> None:
    with pytest.raises(JSONInputError) as info:
        parse_json(raw.encode("utf-8"))
    assert SECRET not in str(info.value)
    assert str(info.value).startswith("not valid JSON")


def test_invalid_utf8_names_the_column() -> None:
    with pytest.raises(JSONInputError) as info:
        parse_json(b'{"k":"\xc3\x28"}')
    assert str(info.value) == "not valid UTF-8 at column 7"


def test_long_digit_strings_do_not_hit_python_limits() -> None:
    # Python refuses int("1" * 5000) by default; JSON.parse reads it as a double.
    assert canonical_json(parse_json("[" + "1" * 5000 + "]")) == "[null]"
    assert canonical_json(parse_json("[" + "1" * 300 + "]")) == "[1.1111111111111112e+299]"
    assert canonical_json(parse_json("[0." + "0" * 5000 + "1]")) == "[0]"


def test_hash_prefix_of_digest_and_hex() -> None:
    digest = call_hash("search", {"q": "weather"})
    assert hash_prefix(digest) == "35dca543bb3b"
    assert hash_prefix(bytes.fromhex(digest)) == "35dca543bb3b"


def test_the_example_of_docs_hash_md() -> None:
    """docs/hash.md states the hash with this example (its prefix and full hash)."""
    from conftest import ROOT

    doc = (ROOT / "docs" / "hash.md").read_text(encoding="utf-8")
    digest = call_hash("search", {"q": "weather"})
    assert """`loop-brake hash search '{"q":"weather"}'`""" in doc
    assert f"prints `{hash_prefix(digest)}`" in doc and f"`{digest}`" in doc


# Characters on every side of the places where code-point and UTF-16 order part.
_KEY_CHARS = ["a", "2", "\u00e9", "\ud7ff", "\ud800", "\ud83d", "\udbff", "\udc00", "\ude00"]
_KEY_CHARS += ["\udfff", "\ue000", "\uff01", "\uffff", "\U00010000", "\U0001f600", "\U0010ffff"]


def test_keys_sort_by_utf16_units_wherever_they_first_differ() -> None:
    """Every pair of keys ``P + c1 + c2`` (P a shared prefix, c1 any of those characters,
    c2 one of each kind or absent) sorts as JavaScript sorts: by UTF-16 unit, a lone
    surrogate as one unit. The shortcut in _sorted_keys (no re-sort unless a key holds
    an astral character) never skips a re-sort it needed. (The Node vectors pin the
    same rule on fewer keys.)"""
    tails = ("", "a", "\ud800", "\udc00", "\ue000", "\uffff", "\U0001f600")  # one of a kind
    units = {
        (p + c1 + c2).encode("utf-16-be", "surrogatepass")
        for p in ("", "10")
        for c1 in _KEY_CHARS
        for c2 in tails
    }
    # decoding joins a high surrogate followed by a low one into the astral character,
    # as parse_json does: no parsed key holds such a pair
    utf16 = [k.decode("utf-16-be", "surrogatepass") for k in sorted(units)]
    for i, first in enumerate(utf16):
        for second in utf16[i + 1 :]:
            expected = "{" + js_string(first) + ":1," + js_string(second) + ":2}"
            assert canonical_json({second: 2, first: 1}) == expected, (first, second)


def test_error_message_says_at_column_once() -> None:
    """Python's message "Unterminated string starting at" is not followed by another "at"."""
    with pytest.raises(JSONInputError) as info:
        parse_json('{"a":"x')
    assert str(info.value) == "not valid JSON: unterminated string starting at column 6"
