"""Arbitrary bytes through replay: never a traceback, every file accounted for, and
its figures those of a reference.

Bounded to a few seconds. The inputs start with shapes that reach each adapter
(JSON lines, a JSON document, a log prefix, YAML) and then go wrong anywhere; a
canary may stand where the shape's arguments begin. Replay's report must count
exactly the calls, denials, duplicates and unreadable records that the detected
format's adapter gives on the same bytes, judged by the definition
(tests/adapter_helpers.py, ``assert_judged_as_counted``), and the canary appears
in no error and no file's entry.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from adapter_helpers import assert_judged_as_counted
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from loop_brake_cli.analysis import internal_error, replay_files
from loop_brake_cli.cli import cli
from loop_brake_cli.core.records import BadRecord
from loop_brake_cli.formats import get
from loop_brake_cli.readers.reader import open_source

CANARY = "canary-replay-fuzz-61c2"

PREFIXES = [
    b"",
    b'{"tool": "t", "args": {"a": 1}}\n',
    b'{"type": "assistant", "sessionId": "s", "message": {"content": [{"type": "tool_use", ',
    b'{"type": "response_item", "payload": {"type": "function_call", "arguments": "',
    b'STDIN: {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x"',
    b'{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", ',
    b'{"history": [{"action": "run", "args": ',
    b"interactions:\n- request:\n    body: ",
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [',
    b"\x1f\x8b\x08\x00",
    b"\xef\xbb\xbf[",
]

INPUTS = st.tuples(st.sampled_from(PREFIXES), st.booleans(), st.binary(max_size=300), st.booleans())


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(INPUTS)
def test_arbitrary_bytes_never_raise(tmp_path: Path, case) -> None:
    prefix, secret, tail, zipped = case
    data = prefix + (CANARY.encode() if secret else b"") + tail
    path = tmp_path / "x.jsonl"
    path.write_bytes(gzip.compress(data) if zipped else data)
    report = replay_files(
        [str(path)],
        max_repeats=2,
        max_repeats_source="test",
        cap=10,
        format_name=None,
        max_line_bytes=200,
    )
    (info,) = report.files
    assert info.error is None or "internal error" not in info.error, info.error
    said = json.dumps([e.to_json() for e in report.errors] + [info.to_json()])
    assert CANARY not in said
    if info.format is None or info.error is not None:
        assert report.calls == 0 or info.error is not None
        event("no format read through")
        return
    event(f"compared with the {info.format} adapter")
    source = open_source(str(path), 200)
    try:
        records = list(get(info.format).parse(source))
    finally:
        source.close()
    verdicts = [v for _, v in assert_judged_as_counted(records, 2) if v is not None]
    counted = [v for v in verdicts if not v.duplicate]
    assert (report.calls, report.denied, report.duplicates) == (
        len(counted),
        sum(v.denied for v in counted),
        len(verdicts) - len(counted),
    )
    assert report.unreadable == sum(r.__class__ is BadRecord for r in records)


def test_an_adapter_bug_is_a_located_error_not_a_traceback(tmp_path, monkeypatch) -> None:
    from loop_brake_cli.formats import events

    def broken(source):
        yield from ()
        raise KeyError("CANARY-SECRET-in-an-exception")

    good = tmp_path / "a.jsonl"
    good.write_text('{"tool": "t"}\n')
    monkeypatch.setattr(events, "parse", broken)
    result = CliRunner().invoke(
        cli, ["replay", str(good), str(good), "--json"], standalone_mode=False
    )
    assert result.return_value == 3
    assert "internal error in the events adapter (KeyError)" in result.stderr
    assert "CANARY" not in result.stdout + result.stderr
    assert len(json.loads(result.stdout)["files"]) == 2
    result = CliRunner().invoke(cli, ["replay", str(good), "--verdicts"], standalone_mode=False)
    assert result.return_value == 3 and "CANARY" not in result.stdout + result.stderr


def test_internal_error_message() -> None:
    assert internal_error(None, 0, ValueError("x")) == (
        "internal error in format detection (ValueError); please report it"
    )
