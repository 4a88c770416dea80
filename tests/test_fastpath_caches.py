"""The fast path's caches against the exact path: a hit, a near miss, eviction, switch-off.

The line cache keys an event line by its text up to its last member
``,"callId":"..."}``; the digest cache lets a hit skip the float/exponent/astral
checks. Every stream here goes through ``fastpath.filter_events`` and through the
exact chain, and the bytes out and the tallies must be equal.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fastpath import _exact, _fast

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.readers import fast_lines, fastpath, prove
from loop_brake_cli.readers.output import LineWriter
from loop_brake_cli.readers.pipeline import Tally
from loop_brake_cli.readers.reader import Source

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

ALL = {"pass", "deny", "error"}

# Compact event text up to (not including) the call id member.
PREFIXES = [
    b'{"tool":"search","args":{"q":"x","n":1},"sessionId":"s1"',
    b'{"tool":"search","args":{"q":"x","n":1},"sessionId":"s2"',
    b'{"tool":"read","args":[1,2.5,"\\u00e9"],"sessionId":"s1"',
    b'{"tool":"read","args":{"f":1.0},"sessionId":"s1"',  # declined by the checks
    b'{"tool":"read","args":{"\xf0\x9f\x98\x80":1,"\xef\xbc\x81":2},"sessionId":"s1"',
    b'{"tool":"x","args":{},"sessionId":"s1","callId":"first"',  # a duplicate key
    b'{"tool":"x","args":{},"agentId":"a1"',  # not the common shape
    b'{"tool":"x","args":{},"sessionId":"s1","agent_id":"a"',
    b'{"tool":"x","args":null,"sessionId":"s1"',
    b'{"tool":"x","args":{},"sessionId":5',
    b'{"tool":"x","args":{"big":12345678901234567890},"sessionId":"s1"',
    b' {"tool":"x","args":{},"sessionId":"s3"',
    b'{"tool":"x","args":{},"sessionId":"s1","tool":"y"',
]
# What follows the prefix: a call id member and the end of the object, or a near miss.
SUFFIXES = [
    b',"callId":"c1"}',
    b',"callId":"c2"}',
    b',"callId":""}',
    b',"callId":"a\\"b"}',
    b',"callId":"a\\\\"}',
    b',"callId":"\\u0041"}',
    b',"callId":"\xc3\xa9"}',
    b',"callId":"\\ud800"}',  # a lone surrogate: orjson declines the line
    b',"callId":"\xff"}',  # not UTF-8
    b',"callId":"c1","tool":"other"}',  # a member after the call id
    b',"callId":"c1","callId":"c9"}',
    b',"callId":"c1","args":{"q":"y"}}',
    b',"callId":"c1","agentId":"z"}',
    b',"callId":"c1"} ',
    b',"callId":"c1" }',
    b',"callId":"c1"}}',
    b',"callId":"c1"]',
    b',"callId":"c1",}',
    b',"callId":"c1"',
    b',"callId":"}',
    b',"callId":"c1\\"}',
    b',"callId":"c\x01"}',
    b',"callId":5}',
    b',"callId":null}',
    b"}",
]

LINES = st.lists(
    st.tuples(st.sampled_from(PREFIXES), st.sampled_from(SUFFIXES), st.integers(1, 3)),
    min_size=1,
    max_size=30,
)


def _stream(parts: list[tuple[bytes, bytes, int]]) -> bytes:
    out = []
    for prefix, suffix, times in parts:
        out.extend([prefix + suffix] * times)
    return b"\n".join(out) + b"\n"


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    LINES,
    st.sampled_from([1, 2, 3]),
    st.sampled_from([ALL, {"deny"}, {"pass", "error"}]),
    st.sampled_from([None, (0, 2), (1, 2)]),
)
def test_cached_lines_give_the_exact_bytes(event_reader, parts, max_repeats, wanted, shard):
    data = _stream(parts)
    assert _fast(data, max_repeats, wanted, shard) == _exact(data, max_repeats, wanted, shard)


def _judged(data: bytes, max_repeats: int = 3) -> tuple[fastpath._Judge, bytes]:
    out = io.BytesIO()
    writer = LineWriter(out)
    judge = fastpath._Judge(LoopBrake(max_repeats), Tally(), writer, ALL, None, None)
    fastpath._judge_lines(Source(io.BytesIO(data), "t", 1 << 20, writer.flush), judge)
    writer.flush()
    return judge, out.getvalue()


def _counting_loads(monkeypatch) -> list[int]:
    calls = [0]
    loads = prove._loads

    def counted(data):
        if data[:1] == b"{":
            calls[0] += 1
        return loads(data)

    monkeypatch.setattr(prove, "_loads", counted)
    return calls


def test_a_line_differing_only_in_the_call_id_is_not_parsed_again(monkeypatch):
    monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")  # the C reader would take every line
    prefix = PREFIXES[0]
    data = b"".join(prefix + b',"callId":"c%d"}\n' % i for i in range(10))
    parsed = _counting_loads(monkeypatch)
    judge, fast = _judged(data)
    assert parsed[0] == 1  # the first line only
    assert fast == _exact(data, 3, ALL)[0]
    assert len(judge.prover.lines) == 1


def test_a_cached_line_then_one_differing_after_the_call_id(event_reader):
    prefix = PREFIXES[0]
    lines = [prefix + b',"callId":"c1"}', prefix + b',"callId":"c2"}']
    lines += [prefix + suffix for suffix in SUFFIXES]
    lines += [prefix + b',"callId":"c3"}']
    data = b"\n".join(lines) + b"\n"
    assert _fast(data, 2, ALL) == _exact(data, 2, ALL)


def test_eviction_keeps_the_cache_bounded_and_exact(monkeypatch, event_reader):
    monkeypatch.setattr(fastpath, "CACHE_LIMIT", 4)
    monkeypatch.setattr(prove, "CACHE_LIMIT", 4)
    monkeypatch.setattr(fast_lines, "CACHE_LIMIT", 4)
    prefixes = [b'{"tool":"t","args":{"n":%d},"sessionId":"s"' % (i % 7) for i in range(60)]
    data = b"".join(p + b',"callId":"c%d"}\n' % i for i, p in enumerate(prefixes))
    data += data.replace(b'"s"', b'"s2"')
    judge, fast = _judged(data, 2)
    assert len(judge.prover.lines) <= 4 and len(judge.prover.digests) <= 4
    assert fast == _exact(data, 2, ALL)[0]


def test_a_cache_that_does_not_hit_switches_off_and_comes_back(monkeypatch):
    monkeypatch.setattr(prove, "WINDOW", 8)  # inlined in the prover
    monkeypatch.setattr(fast_lines, "WINDOW", 8)
    monkeypatch.setattr(fast_lines, "OFF_LINES", 40)
    monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")  # the C reader would take every line
    # 100 lines that never repeat: both caches switch off (twice: at lines 8 and 55,
    # back at 48 and 95) ...
    lines = [
        b'{"tool":"t","args":{"n":%d},"sessionId":"s%d","callId":"c"}' % (i, i) for i in range(100)
    ]
    # ... then a loop that the cache, on again, serves after its first line
    loop = b'{"tool":"t","args":{"n":1},"sessionId":"s"'
    lines += [loop + b',"callId":"c%d"}' % i for i in range(100)]
    data = b"\n".join(lines) + b"\n"
    parsed = _counting_loads(monkeypatch)
    judge, fast = _judged(data)
    assert fast == _exact(data, 3, ALL)[0]
    assert judge.prover.line_switch.start == judge.prover.digest_switch.start == 95  # were off
    assert loop in judge.prover.lines
    assert parsed[0] == 101  # every line up to the loop's first, none after


def test_the_digest_cache_skips_the_checks_only_for_checked_bytes(event_reader):
    # The same tool and arguments as a declined float and as an exact integer: the
    # declined bytes are never cached, so each line is checked on its own merits.
    lines = []
    for i in range(6):
        lines.append(b'{"tool":"t","args":{"f":1.0},"sessionId":"s","callId":"a%d"}' % i)
        lines.append(b'{"tool":"t","args":{"f":1},"sessionId":"s","callId":"b%d"}' % i)
        lines.append(b'{"tool":"t","args":{"f":1e-7},"sessionId":"s2","callId":"c%d"}' % i)
    data = b"\n".join(lines) + b"\n"
    judge, fast = _judged(data)
    assert fast == _exact(data, 3, ALL)[0]
    assert all(b".0" not in key and b"e-" not in key for key in judge.prover.digests)


@pytest.mark.parametrize("depth", [300, 600, 990, 1000, 1010, 1023])
def test_a_line_nested_deeper_than_parse_json_reads_gets_its_error(depth, event_reader):
    # orjson reads 1024 levels, parse_json gives up near 1000: such a line is an
    # error on the exact path even when the deep part is not the arguments.
    deep = b"[" * depth + b"]" * depth
    line = b'{"tool":"t","args":{},"sessionId":"s","meta":%b,"callId":"c"}' % deep
    data = line + b"\n" + line.replace(b'"c"', b'"d"') + b"\n"
    assert _fast(data, 3, ALL) == _exact(data, 3, ALL)


def test_long_lines_are_not_cached_so_the_caches_stay_bounded_in_bytes(monkeypatch):
    monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")  # the C reader would take every line
    # a loop of long lines, and long lines the checks decline (1.0): exact verdicts, and
    # no key longer than MAX_KEY_BYTES is kept (each cache holds at most
    # CACHE_LIMIT * MAX_KEY_BYTES bytes of keys, whatever the line limit)
    big = b"x" * (fast_lines.MAX_KEY_BYTES + 1)
    loop = b'{"tool":"t","args":{"s":"%b"},"sessionId":"s1"' % big
    declined = b'{"tool":"t","args":{"s":"%b","f":1.0},"sessionId":"s2"' % big
    short = b'{"tool":"t","args":{"s":"x"},"sessionId":"s3"'
    lines = [p + b',"callId":"c%d"}' % i for i, p in enumerate([loop, declined, short] * 4)]
    data = b"\n".join(lines) + b"\n"
    judge, fast = _judged(data)
    assert fast == _exact(data, 3, ALL)[0]
    assert fast.count(b'"verdict":"deny"') == 6
    assert list(judge.prover.lines) == [short]
    assert [len(key) for key in judge.prover.digests] == [len(b't\n{"s":"x"}')]
