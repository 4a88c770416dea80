"""A run without a progress mode asks for no results (``formats.parse_records(...,
results=False)`` sets ``Source.results``): claude-code and codex then leave the
``ToolResult`` records out and skip the lines that hold only results, and every other
record stays the same. A library caller (``adapter.parse(source)``) still gets them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES

from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage
from loop_brake_cli.formats import get, parse_records
from loop_brake_cli.readers.reader import Source, open_source

FILES = sorted((FIXTURES / "claude-code").iterdir()) + sorted((FIXTURES / "codex").iterdir())


def _records(fmt: str, path: Path, results: bool) -> list:
    source = open_source(str(path))
    try:
        return list(parse_records(get(fmt), source, results))
    finally:
        source.close()


def _fmt(path: Path) -> str:
    return path.parent.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_without_results_every_other_record_is_the_same(path: Path) -> None:
    fmt = _fmt(path)
    wanted = _records(fmt, path, True)
    unwanted = _records(fmt, path, False)
    assert not any(isinstance(r, ToolResult) for r in unwanted)
    assert unwanted == [r for r in wanted if not isinstance(r, ToolResult)]


def test_the_fixtures_hold_results_calls_and_usage() -> None:
    """The comparison above is not vacuous: results are there to leave out."""
    for fmt in ("claude-code", "codex"):
        records = _records(fmt, FIXTURES / fmt / "synthetic--results-usage.jsonl", True)
        kinds = {r.__class__ for r in records}
        assert {ToolCall, ToolResult, Usage} <= kinds


def _parse(fmt: str, data: bytes, results: bool | None) -> list:
    source = Source(io.BytesIO(data), "t.jsonl")
    if results is None:  # a library caller: the adapter's own parse, Source's default
        return list(get(fmt).parse(source))
    return list(parse_records(get(fmt), source, results))


_CLAUDE_RESULT = (
    b'{"type":"user","sessionId":%s,"uuid":"u1","message":{"role":"user","content":'
    b'[{"type":"tool_result","tool_use_id":"toolu_1","content":"out"}]}}'
)


def test_library_callers_still_get_results() -> None:
    for results in (None, True):
        records = _parse("claude-code", _CLAUDE_RESULT % b'"s"' + b"\n", results)
        assert [r.__class__ for r in records] == [ToolResult]
    assert _parse("claude-code", _CLAUDE_RESULT % b'"s"' + b"\n", False) == []


def test_claude_result_line_with_a_bad_session_is_reported_only_when_results_are_read() -> None:
    """Decided: without results such a line is not parsed (it holds no call), as before
    results were read; with them, its session is needed and the error is located."""
    data = _CLAUDE_RESULT % b"7" + b"\n"
    with_results = _parse("claude-code", data, True)
    assert [(r.__class__, r.line) for r in with_results] == [(BadRecord, 1)]
    assert _parse("claude-code", data, False) == []


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
@pytest.mark.parametrize("results", [True, False])
def test_a_truncated_result_line_is_reported_either_way(fmt: str, results: bool) -> None:
    line = _CLAUDE_RESULT % b'"s"' if fmt == "claude-code" else _CODEX_OUTPUT
    records = _parse(fmt, line[:-20] + b"\n", results)
    assert [(r.__class__, r.line) for r in records] == [(BadRecord, 1)]


_CODEX_OUTPUT = (
    b'{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output",'
    b'"call_id":"call_1","output":"done"}}'
)


def test_codex_output_line_not_json_is_reported_only_when_results_are_read() -> None:
    """Decided: without results an output line is skipped unparsed, as before results
    were read, so one that looks like a whole object but is not JSON goes unreported."""
    data = _CODEX_OUTPUT.replace(b'"done"', b"done") + b"\n"
    assert [r.__class__ for r in _parse("codex", data, True)] == [BadRecord]
    assert _parse("codex", data, False) == []
    good = _CODEX_OUTPUT + b"\n"
    assert [r.__class__ for r in _parse("codex", good, True)] == [ToolResult]
    assert _parse("codex", good, False) == []
