"""mcp_shared.denials.DenialNotes: the MCP front-ends' stderr notes of denials, summed up.

Written from docs/mcp-proxy.md and the module's docstring: the first denial of a
call in a session is said in full; the same call denied again in a row is counted
and said again at 10, 100, 1,000...; the run is summed up ("N more denials") when
the session moves on (one of its calls passes, or another call is denied) or the
front-end stops, and never when nothing is left unsaid.
"""

from __future__ import annotations

from loop_brake_cli.core.verdicts import Verdict
from loop_brake_cli.mcp_shared.denials import DenialNotes


def _denied(prefix: str = "aaaaaaaaaaaa", tool: str = "echo") -> Verdict:
    return Verdict(True, tool, "s", 3, 3, prefix)


def _notes() -> tuple[DenialNotes, list[str]]:
    said: list[str] = []
    return DenialNotes(said.append), said


def test_the_10th_and_100th_denial_in_a_row_are_said_again() -> None:
    notes, said = _notes()
    for _ in range(100):
        notes.denied("s", _denied(), "FULL")
    assert said == [
        "FULL",
        'denied 10 times in a row in s: tool "echo", call aaaaaaaaaaaa',
        'denied 100 times in a row in s: tool "echo", call aaaaaaaaaaaa',
    ]
    notes.close()
    assert said[3:] == []  # the 100th was said: nothing left to sum up


def test_another_call_of_the_same_tool_is_said_in_full() -> None:
    notes, said = _notes()
    notes.denied("s", _denied("aaaaaaaaaaaa"), "FULL A")
    notes.denied("s", _denied("bbbbbbbbbbbb"), "FULL B")
    notes.denied("s", _denied("bbbbbbbbbbbb"), "FULL B")
    notes.close()
    assert said == [
        "FULL A",
        "FULL B",
        '1 more denials of the same call in s (2 in a row in all): tool "echo", call bbbbbbbbbbbb',
    ]


def test_a_single_denial_leaves_nothing_to_sum_up() -> None:
    notes, said = _notes()
    notes.denied("s", _denied(), "FULL")
    notes.passed("s")
    notes.denied("t", _denied(), "FULL T")
    notes.close()
    assert said == ["FULL", "FULL T"]


def test_a_call_that_passes_ends_the_run_and_sums_it_up_then() -> None:
    notes, said = _notes()
    for _ in range(3):
        notes.denied("s", _denied(), "FULL")
    notes.passed("s")
    assert said == [
        "FULL",
        '2 more denials of the same call in s (3 in a row in all): tool "echo", call aaaaaaaaaaaa',
    ]
    notes.close()
    assert len(said) == 2
