"""A fourth backend, written here and nowhere else: a dict in this process, registered
by its URL scheme, passes the whole shared store suite (tests/test_stores.py).

Issue 40 item 1: a new backend is one module and one ``stores.register`` line. This
module is that module: it applies the rule's functions (``core/streak.py``) to a
dict keyed by session and holding each session's state and stamp, registers the
``dict://`` scheme, imports the suite's tests and gives them this backend as their
``table`` and ``store``. Nothing outside this file knows it exists: ``open_store``
and ``LoopBrake(store="dict://...")`` find it by its scheme.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from test_stores import *  # noqa: F403  # the whole shared suite, run against this backend

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest, hash_prefix
from loop_brake_cli.core.streak import (
    Decision,
    PolicySlot,
    call_ended,
    policy_step,
    result_step,
    step,
)
from loop_brake_cli.stores import open_store, register, schemes
from loop_brake_cli.stores.rows import SessionRow

_SHARED: dict[str, dict[str, tuple[Any, float]]] = {}  # one dict per URL: handles share it
_names = itertools.count()


class DictStore:
    """Each session's state (a ``Slot``, or a ``PolicySlot`` under a policy) and the time
    it was last counted, in a dict shared by every handle on one URL."""

    def __init__(self, target: str, *, idle_ttl: float, warn: Any = None, **_options: Any):
        self.label = target
        self.ttl = idle_ttl
        self.rows = _SHARED.setdefault(target, {})

    def _live(self, session: str, at: float, policy: Any) -> Any:
        row = self.rows.get(session)
        if row is None or row[1] < at - self.ttl:
            return None
        state = row[0]
        if policy is None:
            return state.slot if isinstance(state, PolicySlot) else state
        if isinstance(state, PolicySlot):
            return state
        return PolicySlot(state, Decision(False, "streak", None, 0))  # no policy part yet

    def count_call(self, session, tool, digest, call_id=None, max_repeats=0, policy=None, now=None):
        at = time.time() if now is None else now
        prev = self._live(session, at, policy)
        if policy is None:
            state, duplicate = step(prev, tool, digest, call_id)
        else:
            state, duplicate = policy_step(prev, tool, digest, call_id, max_repeats, policy)
        if not duplicate:
            self.rows[session] = (state, at)
        return state, duplicate

    def observe_result(self, session, call_id, digest, policy, error=False, now=None):
        at = time.time() if now is None else now
        prev = self._live(session, at, policy)
        if prev is None:
            return False
        state, paired = result_step(prev, call_id, digest, error)
        if state is not prev:
            self.rows[session] = (state, self.rows[session][1])  # a result is not a call
        return paired

    def end_call(self, session, call_id, now=None):
        at = time.time() if now is None else now
        row = self.rows.get(session)
        if row is None or row[1] < at - self.ttl:
            return False
        state = call_ended(row[0], call_id)
        if state is row[0]:
            return False
        self.rows[session] = (state, row[1])
        return True

    def reset(self, session=None):
        if session is None:
            removed = len(self.rows)
            self.rows.clear()
            return removed
        return 0 if self.rows.pop(session, None) is None else 1

    def sessions(self, session=None):
        at = time.time()
        shown = []
        for key, (state, stamp) in self.rows.items():
            if (session is None or key == session) and stamp >= at - self.ttl:
                slot = state.slot if isinstance(state, PolicySlot) else state
                prefix = hash_prefix(slot.digest)
                shown.append(SessionRow(key, slot.tool, slot.count, prefix, slot.call_id, stamp))
        shown.sort(key=lambda row: row.updated, reverse=True)
        return shown, 0

    def close(self):
        pass


register("dict", DictStore)  # the one registration


@pytest.fixture
def store_url() -> str:
    return f"dict://suite-{next(_names)}"


@pytest.fixture
def store(store_url: str):
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def table(store):
    return store


def test_the_scheme_is_registered_and_reached_from_the_library() -> None:
    """``open_store`` and ``LoopBrake(store=URL)`` find the backend by its scheme, as
    ``--store`` would: the third identical call is denied, in the dict."""
    assert "dict" in schemes() and {"redis", "rediss", "sqlite", "unix"} <= set(schemes())
    brake = LoopBrake(3, store="dict://library")
    assert isinstance(brake.store, DictStore)
    counts = [brake.check("read", {"p": 1}, session_id="s").count for _ in range(3)]
    assert counts == [1, 2, 3] and brake.check("read", {"p": 1}, session_id="s").denied
    assert _SHARED["dict://library"]["s"][0].count == 4
    digest = call_digest("read", {"p": 1})
    assert open_store("dict://library").count_call("s", "read", digest)[0].count == 5
