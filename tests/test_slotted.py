"""The record classes keep what the dataclasses they replaced gave them."""

from __future__ import annotations

import pickle

import pytest

from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage
from loop_brake_cli.core.verdicts import Verdict


def test_records_compare_field_by_field_within_one_class() -> None:
    call = ToolCall("t", {"a": 1}, "s", line=3)
    assert call == ToolCall("t", {"a": 1}, "s", None, 3)
    assert call != ToolCall("t", {"a": 2}, "s", line=3)
    assert BadRecord("m", 1) != ToolResult("m", 1)
    assert Usage("s", input_tokens=3) == Usage("s", None, None, 3)
    with pytest.raises(TypeError):
        hash(call)


def test_repr_names_every_field_in_order() -> None:
    assert repr(BadRecord("m", 2)) == "BadRecord(message='m', line=2, path=None)"


def test_a_verdict_is_frozen_hashable_and_pickles() -> None:
    verdict = Verdict(True, "t", "s", 3, 3, "0123456789ab", duplicate=True, rule="stop")
    same = Verdict(True, "t", "s", 3, 3, "0123456789ab", None, True, "stop")
    assert verdict == same and hash(verdict) == hash(same)
    assert pickle.loads(pickle.dumps(verdict)) == verdict
    assert verdict.stop and verdict.duplicate
    with pytest.raises(AttributeError):
        verdict.count = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del verdict.count


def test_records_pickle() -> None:
    for record in (ToolCall("t", [1], "s", "id", 1, "$.x", True), Usage("s", "turn", "m", 1, 2)):
        assert pickle.loads(pickle.dumps(record)) == record
