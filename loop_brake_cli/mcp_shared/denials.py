"""The denial as people read it on stderr: the call's id as sent, its tool, the hash
prefix and the rule; never an argument; repeats summed up rather than said one by one.

A looping agent sends the same denied call again and again, and a gateway serves many
agents: one stderr line per denial floods the log that operators read. So
``DenialNotes`` says the first denial of a call in a session in full, then counts the
denials of that same call in a row and says how many at 10, 100, 1,000... and when the
session moves on (one of its calls passes, or another call is denied) or the
front-end stops. Identifiers a client chose (ids, tool names, session names) are shown
through ``render.visible``, so none can forge a line or drive a terminal.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable

from ..core.verdicts import Verdict
from ..render.visible import visible

__all__ = ["MAX_TRACKED", "DenialNotes", "describe_denial", "tool_and_call"]

MAX_TRACKED = 4096  # sessions whose run of denials is being counted (oldest summed up first)


def tool_and_call(verdict: Verdict) -> str:
    """``tool "echo", call 1c0db5fdab6a``: which call, without its arguments."""
    name = visible(json.dumps(verdict.tool_name, ensure_ascii=False))
    kind = "policy hash" if verdict.policy_hash else "call"
    return f"tool {name}, {kind} {verdict.hash_prefix}"


def describe_denial(id_bytes: bytes, verdict: Verdict) -> str:
    """The call for a stderr note: the id as sent, the tool, the prefix; no arguments."""
    if verdict.rule is None:
        rule = f"count {verdict.count}, limit {verdict.max_repeats}"
    else:  # under a policy: the rule that decided and its limit
        rule = f"count {verdict.count}, rule {verdict.rule}, limit {verdict.limit}"
    shown = visible(id_bytes.decode("utf-8", "replace"))
    return f"tools/call id {shown} ({tool_and_call(verdict)}, {rule})"


class _Run:
    __slots__ = ("key", "call", "count", "said")

    def __init__(self, key: tuple[str, str, bool], call: str) -> None:
        self.key = key
        self.call = call  # tool_and_call of the denied call
        self.count = 1  # denials in a row
        self.said = 1  # of which the last one said


class DenialNotes:
    """Denial notes for one front-end, summed up per session (module docstring).

    ``note`` writes one line for people; a session is shown escaped (``visible``), and
    so must be whatever a caller's own ``text`` quotes."""

    def __init__(self, note: Callable[[str], None], max_tracked: int = MAX_TRACKED) -> None:
        self._note = note
        self._max = max_tracked
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def denied(self, session: str, verdict: Verdict, text: str, shadow: bool = False) -> None:
        """A denial (``shadow``: one that was forwarded all the same); ``text`` is the
        full line for the first of a run."""
        call = tool_and_call(verdict)
        key = (verdict.tool_name, verdict.hash_prefix, shadow)
        run = self._runs.get(session)
        if run is not None and run.key == key:
            run.count += 1
            self._runs.move_to_end(session)
            if _is_milestone(run.count):
                run.said = run.count
                what = "would have been denied (shadow)" if shadow else "denied"
                self._note(f"{what} {run.count} times in a row in {visible(session)}: {call}")
            return
        if run is not None:
            self._sum_up(session, run)
        self._runs[session] = _Run(key, call)
        self._runs.move_to_end(session)
        self._note(text)
        if len(self._runs) > self._max:
            old, oldest = self._runs.popitem(last=False)
            self._sum_up(old, oldest)

    def passed(self, session: str) -> None:
        """A call of ``session`` passed: its run of denials, if any, is over."""
        if self._runs:
            run = self._runs.pop(session, None)
            if run is not None:
                self._sum_up(session, run)

    def close(self) -> None:
        """The front-end stops: every run still counted is summed up."""
        while self._runs:
            session, run = self._runs.popitem(last=False)
            self._sum_up(session, run)

    def _sum_up(self, session: str, run: _Run) -> None:
        unsaid = run.count - run.said
        if unsaid > 0:
            what = "would-be denials (shadow)" if run.key[2] else "denials"
            where = visible(session)
            self._note(
                f"{unsaid} more {what} of the same call in {where} ({run.count} in a row "
                f"in all): {run.call}"
            )


def _is_milestone(count: int) -> bool:
    """10, 100, 1,000...: the counts at which a run of denials is said again."""
    while count >= 10 and count % 10 == 0:
        count //= 10
    return count == 1
