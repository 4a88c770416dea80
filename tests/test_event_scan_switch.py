"""The C event reader switches itself off where it declines most lines, and back on.

A declined line costs the C read up to where it gave up and then the orjson read,
so an input the C reader cannot take (here every call id spelled with a ``\\u``
escape) would be slower than without it; it is asked again after a while, since
input changes. Every stream must still give the exact path's bytes."""

from __future__ import annotations

import pytest
from test_fastpath import _exact
from test_fastpath_caches import ALL, _judged

from loop_brake_cli.readers import fast_lines, fastpath

pytestmark = pytest.mark.skipif(
    fastpath.scanner() is None,
    reason="the C reader loop_brake_cli.readers._event_scan is not built",
)


def test_a_reader_that_declines_switches_off_and_comes_back(monkeypatch):
    monkeypatch.delenv("LOOP_BRAKE_PURE_PYTHON", raising=False)
    monkeypatch.setattr(fast_lines, "WINDOW", 8)
    monkeypatch.setattr(fast_lines, "OFF_LINES", 40)
    asked = _counting_scan(monkeypatch)
    # 100 lines it declines (an escaped call id), then 100 it takes
    declined = [
        b'{"tool":"t","args":{"n":%d},"sessionId":"s%d","callId":"c\\u005f%d"}' % (i, i, i)
        for i in range(100)
    ]
    taken = [b'{"tool":"t","args":{"n":1},"sessionId":"s","callId":"c%d"}' % i for i in range(100)]
    data = b"\n".join(declined + taken) + b"\n"
    judge, fast = _judged(data)
    assert fast == _exact(data, 3, ALL)[0]
    # off after its 8th decline (line 8) until line 48, off again at 55 until 95: asked
    # for lines 1-8, 48-55 and 95-200
    assert asked[0] == 8 + 8 + 106
    assert judge.scan_switch.start == 95


def test_a_reader_that_answers_stays_on(monkeypatch):
    monkeypatch.delenv("LOOP_BRAKE_PURE_PYTHON", raising=False)
    monkeypatch.setattr(fast_lines, "WINDOW", 8)
    asked = _counting_scan(monkeypatch)
    # one line in three declined (a float the C reader leaves to orjson): it still pays
    lines = [
        b'{"tool":"t","args":{"n":%s},"sessionId":"s%d","callId":"c"}'
        % (b"1.0" if i % 3 == 0 else b"%d" % i, i)
        for i in range(300)
    ]
    data = b"\n".join(lines) + b"\n"
    judge, fast = _judged(data)
    assert fast == _exact(data, 3, ALL)[0]
    assert asked[0] == 300  # never off
    assert 200 < judge.scan_switch.start <= 300  # a window judged late in the run kept it on


def _counting_scan(monkeypatch) -> list[int]:
    asked = [0]
    scan = fastpath._scan_event

    def counted(line: bytes):
        asked[0] += 1
        return scan(line)

    monkeypatch.setattr(fastpath, "_scan_event", counted)
    return asked
