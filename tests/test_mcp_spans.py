"""mcp_shared.spans: byte offsets of batch elements and of an object's member.

Checked against the parser on random JSON written with random whitespace and
escapes: each span's bytes parse to the value the parser gave, and nothing
outside a span belongs to a value.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.core.canonical import parse_json
from loop_brake_cli.mcp_shared.spans import array_element_spans, member_span

_TEXT = st.text(alphabet=st.sampled_from('ab"\\]}[{,: \n\u00e9\U0001f600'), max_size=6)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_SPACE = st.sampled_from(["", " ", "\t", "  \r\n "])


def _dump(value: object, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_VALUES, _SPACE, _SPACE), max_size=5), st.booleans(), _SPACE)
def test_array_element_spans_match_the_parser(elements, ascii_only, edge) -> None:
    parts = [before + _dump(value, ascii_only) + after for value, before, after in elements]
    data = (edge + "[" + ",".join(parts) + "]" + edge).encode()
    parsed = parse_json(data)
    spans = array_element_spans(data)
    assert len(spans) == len(parsed)
    for (start, end), value in zip(spans, parsed, strict=True):
        piece = data[start:end]
        assert piece == piece.strip(b" \t\r\n")
        assert parse_json(piece) == value


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["id", "i\\u0064", "x", "ids", "\\\\"]), _VALUES), max_size=5
    ),
    _SPACE,
)
def test_member_span_is_the_last_occurrence_like_the_parser(members, space) -> None:
    parts = [f'{space}"{key}"{space}:{space}{json.dumps(value)}{space}' for key, value in members]
    data = ("{" + ",".join(parts) + "}").encode()
    parsed = parse_json(data)
    span = member_span(data, "id")
    if "id" not in parsed:
        assert span is None
    else:
        assert span is not None
        assert parse_json(data[span[0] : span[1]]) == parsed["id"]


def test_an_empty_array_and_an_empty_object() -> None:
    assert array_element_spans(b" [ ] ") == []
    assert member_span(b"{ }", "id") is None
    assert array_element_spans(b'[1e5,"]",-0.5,[],{}]') == [
        (1, 4),
        (5, 8),
        (9, 13),
        (14, 16),
        (17, 19),
    ]
