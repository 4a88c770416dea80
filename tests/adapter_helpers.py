"""What the adapter tests (tests/test_formats_*.py) share.

Read a file or bytes through an adapter, count what the real brake would,
check that a secret never reaches the CLI's output, and fuzz an adapter.
Each test module keeps its own fixtures, expected values and strategies.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import ROOT, run_cli, spawn_cli
from hypothesis import strategies as st

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.core.records import BadRecord, ToolCall, ToolResult, Usage
from loop_brake_cli.formats import detect, get
from loop_brake_cli.readers.pipeline import judge
from loop_brake_cli.readers.reader import Source, open_source

FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "samples" / "formats"
CANARY = "CANARY-5e1d-never-print-me"


def read(path: Path, fmt: str | None = None) -> tuple[str, list]:
    """(format name, records) of one file, detected unless ``fmt`` is given."""
    source = open_source(str(path))
    try:
        adapter = get(fmt) if fmt else detect(source.head(), str(path))
        return adapter.INFO.name, list(adapter.parse(source))
    finally:
        source.close()


def parse_bytes(fmt: str, data: bytes) -> list:
    """The records of ``data`` read by the ``fmt`` adapter (the source is named fuzz.json)."""
    return list(get(fmt).parse(Source(io.BytesIO(data), "fuzz.json")))


def calls_and_errors(records: list) -> list:
    """``records`` without results and usage (tests/test_formats_results_usage.py checks those)."""
    return [r for r in records if not isinstance(r, (ToolResult, Usage))]


def calls(records: list) -> list[ToolCall]:
    return [r for r in records if isinstance(r, ToolCall)]


def longest_streak(records: list, max_repeats: int = 3) -> tuple[int, int]:
    """(longest identical streak, denials) as the real brake counts them."""
    verdicts = [v for _, v in judge(records, LoopBrake(max_repeats)) if v is not None]
    return max((v.count for v in verdicts), default=0), sum(v.denied for v in verdicts)


def summary(records: list) -> list[tuple]:
    """Each call or error as a tuple: a call's fields, or ("BAD", line, path); results and
    usage are left out (tests/test_formats_results_usage.py checks those)."""
    return [
        (r.tool, r.args, r.call_id, r.line, r.path, r.args_unparsed)
        if isinstance(r, ToolCall)
        else ("BAD", r.line, r.path)
        for r in calls_and_errors(records)
    ]


def assert_canary_hidden(fmt: str, path: Path) -> None:
    """``filter --summary`` on a file of secret calls judges them and never prints CANARY."""
    result = run_cli("filter", "--format", fmt, "--summary", str(path))
    out = result.stdout.decode() + result.stderr.decode()
    assert '"verdict":"deny"' in out  # the secret calls were judged
    assert CANARY not in out


def check_errors_hide(fmt: str, data: bytes, canary: str) -> tuple[int, bytes]:
    """No located error of ``data`` holds ``canary``, nor anything ``filter --format FMT -``
    prints for it. Returns (how many located errors, filter's stdout)."""
    bad = [r for r in parse_bytes(fmt, data) if isinstance(r, BadRecord)]
    assert all(canary not in r.message for r in bad)
    result = run_cli("filter", "--format", fmt, "-", input=data)
    assert canary.encode() not in result.stdout + result.stderr
    return len(bad), result.stdout


TOKEN_FIGURES = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def assert_records_sound(records: list) -> None:
    """What every adapter promises of what it yields, whatever its input: calls with a
    string tool and session, an id that is None, a string or a safe integer, arguments
    that hash (a JSON value; a string where flagged unparsed); located errors with a
    message of one line that is not a read failure; results and usage of a session,
    with token counts that are None or non-negative integers; nothing else."""
    for record in records:
        cls = record.__class__
        if cls in (ToolCall, ToolResult, BadRecord, Usage):
            assert record.line is None or (record.line.__class__ is int and record.line >= 1)
            assert record.path is None or record.path.startswith("$"), record.path
        if cls is ToolCall:
            assert record.tool.__class__ is str and record.session.__class__ is str
            _assert_call_id(record.call_id)
            call_digest(record.tool, record.args)  # raises for anything but a JSON value
            assert record.args_unparsed in (True, False)
            assert not record.args_unparsed or record.args.__class__ is str
        elif cls is BadRecord:
            assert record.message.__class__ is str and record.message
            assert "\n" not in record.message
            assert not record.message.startswith("could not read")
        elif cls is ToolResult:
            assert record.session.__class__ is str
            _assert_call_id(record.call_id)
            assert record.digest is None or len(record.digest) == 32
        elif cls is Usage:
            assert record.session.__class__ is str
            for name in TOKEN_FIGURES:
                value = getattr(record, name)
                assert value is None or (value.__class__ is int and value >= 0), name
        else:
            raise AssertionError(f"an adapter yielded a {cls.__name__}")


def _assert_call_id(call_id: Any) -> None:
    assert (
        call_id is None
        or call_id.__class__ is str
        or (call_id.__class__ is int and -(2**53) <= call_id <= 2**53)
    ), call_id


def assert_never_raises(fmt: str, data: bytes) -> None:
    """sniff answers a bool; parse yields only sound records (``assert_records_sound``),
    never a read failure."""
    assert isinstance(get(fmt).sniff(data), bool)
    assert_records_sound(parse_bytes(fmt, data))


def judge_all(fmt: str, data: bytes) -> None:
    """Parse ``data`` and judge every record with maxRepeats 3 (for fuzz: nothing may
    raise): the records are sound, and each call's verdict is the one counted here
    independently (the streak per session, a repeated id a duplicate of the counted
    call, denied from the third), with its own tool, session, id and hash prefix;
    errors, results and usage get no verdict."""
    records = parse_bytes(fmt, data)
    assert_records_sound(records)
    assert_judged_as_counted(records)


def assert_judged_as_counted(records: list, max_repeats: int = 3) -> list:
    """Each call's verdict (the real brake, ``max_repeats``, no policy) is the one counted
    here from the definition: the streak per session, a repeated id a duplicate of the
    counted call, denied from the ``max_repeats``-th; with its own tool, session, id and
    hash prefix; errors, results and usage get none. The (record, verdict) pairs."""
    last: dict[str, tuple[str, bytes, int, Any]] = {}  # session -> tool, digest, count, id
    judged = list(judge(records, LoopBrake(max_repeats, policy=None)))
    assert [record for record, _ in judged] == records
    for record, verdict in judged:
        if record.__class__ is not ToolCall:
            assert verdict is None
            continue
        digest = call_digest(record.tool, record.args)
        prev = last.get(record.session)
        if prev is not None and record.call_id is not None and record.call_id == prev[3]:
            tool, digest, count, _ = prev
            assert verdict.duplicate
        else:
            count = prev[2] + 1 if prev is not None and prev[1] == digest else 1
            tool = record.tool
            last[record.session] = (tool, digest, count, record.call_id)
            assert not verdict.duplicate
        assert (verdict.tool_name, verdict.session_id, verdict.call_id) == (
            tool,
            record.session,
            record.call_id,
        )
        assert (verdict.count, verdict.denied) == (count, count >= max_repeats)
        assert verdict.hash_prefix == digest.hex()[:12]
    return judged


def first_live_verdict(fmt: str, data: bytes) -> dict:
    """The first verdict of ``filter --format FMT``, read while its stdin is still open."""
    proc = spawn_cli("filter", "--format", fmt)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(data)
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.communicate()


def json_shapes(
    keys: st.SearchStrategy[str],
    leaves: st.SearchStrategy[Any],
    *,
    list_size: int = 4,
    dict_size: int = 5,
    max_leaves: int = 30,
) -> st.SearchStrategy[Any]:
    """Nested JSON values: ``leaves`` in lists and in objects keyed by ``keys`` (the keys a
    format uses, so that fuzzing reaches the branches of its parser)."""
    return st.recursive(
        leaves,
        lambda kids: (
            st.lists(kids, max_size=list_size) | st.dictionaries(keys, kids, max_size=dict_size)
        ),
        max_leaves=max_leaves,
    )


def bytes_or_json(values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes (up to 600), or one of ``values`` as a JSON document."""
    return st.binary(max_size=600) | values.map(lambda v: json.dumps(v).encode())


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _mutate(value: Any, draw: Callable, values: st.SearchStrategy[Any]) -> Any:
    """Replace one node of ``value``, chosen at random, with a value drawn from ``values``."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _mutate(value[key], draw, values)}
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], _mutate(value[index], draw, values), *value[index + 1 :]]
    return draw(values)


@st.composite
def mutated(draw: Callable, seeds: list) -> Any:
    """One of ``seeds`` (real JSON values) with one node replaced by arbitrary JSON."""
    return _mutate(draw(st.sampled_from(seeds)), draw, ANY_JSON)
