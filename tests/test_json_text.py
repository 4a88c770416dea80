"""``--json`` documents written by orjson are the bytes the standard library wrote.

``commands/_report_output.json_text`` writes with orjson where it provably writes
what ``json.dumps(doc, ensure_ascii=False, indent=2)`` wrote, and with the standard
library elsewhere; both ways are checked here, on generated documents (every JSON
type, floats of every magnitude, any character, what orjson refuses) and on the
documents real replays of every sample write.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.commands._report_output import json_text


def stdlib(doc: object) -> bytes:
    """What every ``--json`` wrote before orjson did."""
    return (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode(
        "utf-8", "backslashreplace"
    )


FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e-4, 9.99e-5, 1e-5, 4.5e-05, 1e-7, 1.5e-7, 1e-10, 1e15, 1e16, 1.5e300, 5e-324]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond 64 bits: orjson refuses
    | FLOATS
    | st.text()  # lone surrogates included: orjson refuses them
    | st.text(alphabet=st.characters(max_codepoint=0x7F))
)
DOCS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers(0, 9), inner, min_size=1, max_size=2)
    ),  # not strings
    max_leaves=30,
)


@settings(max_examples=1500, deadline=None)
@given(DOCS)
def test_any_document_is_written_as_the_standard_library_wrote_it(doc):
    assert json_text(doc) == stdlib(doc)


@pytest.mark.parametrize(
    "value",
    [4.5e-05, 1e-7, 0.00001, -3e-6, 1e16, 123456.789, 0.0001, 2.5],
    ids=str,
)
def test_floats_of_every_magnitude_in_a_document(value):
    doc = {"waste": {"cost": {"amount": value, "currency": "USD"}}, "n": [value, {}]}
    assert json_text(doc) == stdlib(doc)
    assert math.isfinite(value)


def test_deep_and_surrogate_documents_take_the_standard_library():
    deep: object = []
    for _ in range(300):  # orjson stops at 255 levels
        deep = [deep]
    for doc in (deep, {"s": "\ud800"}, {"n": 2**64}, {1: "a"}):
        assert json_text(doc) == stdlib(doc)


SAMPLES = sorted((ROOT / "samples" / "formats").iterdir()) + sorted(
    path for path in (ROOT / "samples").glob("*.jsonl")
)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda path: path.name)
def test_every_sample_replays_to_the_standard_librarys_bytes(path: Path):
    """A real ``replay --json``'s whole stdout, re-read and written by the standard
    library (floats read back exactly: repr round-trips), is the same bytes; with
    ``--prices`` too, whose dollar amounts are the documents' floats."""
    for extra in ([], ["--prices", str(ROOT / "samples" / "prices.example.toml")]):
        run = run_cli("replay", "--json", *extra, str(path))
        assert run.returncode in (0, 1), run.stderr
        assert run.stdout == stdlib(json.loads(run.stdout))
