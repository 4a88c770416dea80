"""``filter --policy`` on the fast path against the exact path: the same bytes, the same
tallies (issue 41 goal 1).

* every sample under ``samples/`` (events and every other format) with every policy
  under ``samples/policies/`` and bench/policy.py's realistic one, through the real
  command, with and without ``LOOP_BRAKE_EXACT=1``;
* in process, with the C reader and without it: drawn policies (per-tool limits,
  exemptions, ``args_ignore``, ``warn_at``, cycles, the window, stop) over the drawn
  event lines of ``test_fastpath.py`` (tricky arguments, aliases, duplicate call
  ids, bad lines) and the engine-equivalence sequences of
  ``test_engine_equivalence.py`` (numbers equal as doubles, key orders, lone
  surrogates, odd call ids), with ``--only`` kinds and a file label;
* the templates: a tool name, glob or file label that holds the marks' character,
  and a ``%``, written exactly.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_env, run_cli
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from test_engine_equivalence import calls as engine_calls
from test_engine_equivalence import event_line as engine_event_line
from test_fastpath import LINES, _repeat
from test_policy_step_before import GLOBAL, MATCH, toml_of

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.policy import PolicyError, parse_policy
from loop_brake_cli.formats import events as events_format
from loop_brake_cli.readers import fastpath
from loop_brake_cli.readers.compact_table import use_compact_table
from loop_brake_cli.readers.output import LineWriter
from loop_brake_cli.readers.pipeline import Tally, write_verdicts
from loop_brake_cli.readers.policy_table import CompactPolicyTable, c_rules
from loop_brake_cli.readers.reader import Source

sys.path.insert(0, str(ROOT / "bench"))
from policy import REALISTIC  # noqa: E402  # bench/policy.py, after its folder is on the path

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

SAMPLES = sorted(
    path
    for path in (ROOT / "samples").rglob("*")
    if path.is_file() and path.suffix in (".jsonl", ".json", ".yaml", ".traj")
    and "policies" not in path.parts
)  # fmt: skip
POLICIES = sorted((ROOT / "samples" / "policies").glob("*.toml"))


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "realistic.toml"
    path.write_text(REALISTIC, encoding="utf-8")
    return path


@pytest.mark.parametrize("policy", [*POLICIES, None], ids=lambda p: p.name if p else "realistic")
def test_every_sample_under_every_policy_is_the_exact_paths(
    policy: Path | None, realistic: Path
) -> None:
    """One run over every sample (each its own run, file labels on), fast and exact."""
    chosen = realistic if policy is None else policy
    args = ["filter", "--policy", str(chosen), "--summary", *map(str, SAMPLES)]
    fast = run_cli(*args, env=cli_env(LOOP_BRAKE_POLICY=""))
    exact = run_cli(*args, env=cli_env(LOOP_BRAKE_POLICY="", LOOP_BRAKE_EXACT="1"))
    assert fast.returncode == exact.returncode
    assert fast.stdout == exact.stdout
    assert fast.stderr == exact.stderr
    assert b'"verdict":"pass"' in fast.stdout


def _runs(data: bytes, policy: Any, max_repeats: int, wanted: set[str], file: str | None):
    """(fast bytes, fast tally), (exact bytes, exact tally) of one input."""
    runs = []
    for fast in (True, False):
        out = io.BytesIO()
        writer, tally = LineWriter(out), Tally()
        source = Source(io.BytesIO(data), "t", 1 << 20, writer.flush)
        brake = LoopBrake(max_repeats, policy=policy)
        assert fastpath.takes(brake)
        if fast:
            # as filter does: the C step (policy_table.py) with the C reader, for every
            # policy it covers; the dict and policy_step in pure Python
            c_reader = use_compact_table(brake) and brake.policy is not None
            covered = brake.policy is not None and c_rules(brake.policy, max_repeats) is not None
            assert c_reader == (covered and fastpath.scanner() is not None)
            assert isinstance(brake.table, CompactPolicyTable) == c_reader
            fastpath.filter_events(source, brake, tally, writer, wanted, file)
        else:
            write_verdicts(events_format.parse(source), brake, tally, writer, wanted, file)
        writer.flush()
        runs.append((out.getvalue(), tally))
    return runs


RULE = st.one_of(
    st.fixed_dictionaries({"match": MATCH, "exempt": st.just(True)}),
    st.fixed_dictionaries(
        {"match": MATCH, "max_repeats": st.integers(1, 5)},
        optional={"warn_at": st.integers(1, 4), "args_ignore": st.just('["$.t", "$.q"]')},
    ),
)
SECTIONS = st.fixed_dictionaries(
    {},
    optional={
        "cycles": st.tuples(st.integers(2, 4), st.integers(2, 3)).map(
            lambda c: f"max_period = {c[0]}\nmax_repeats = {c[1]}\n"
        ),
        "window": st.tuples(st.integers(2, 4), st.integers(0, 3)).map(
            lambda w: f"calls = {w[0] + w[1]}\nmax_repeats = {w[0]}\n"
        ),
        "stop": st.integers(1, 3).map(lambda n: f"after_denials = {n}\n"),
    },
)
POLICY = st.builds(
    toml_of, GLOBAL.map(lambda g: {k: v for k, v in g.items() if k == "warn_at"}),
    st.lists(RULE, max_size=3), SECTIONS,
)  # fmt: skip
WANTED = st.sampled_from(
    [{"pass", "deny", "stop", "warn", "error"}, {"deny"}, {"warn"}, {"stop", "error"}, {"pass"}]
)


def _policy(text: str) -> Any:
    try:
        return parse_policy(text, "policy.toml")[0]
    except PolicyError:
        reject()  # keys that exclude each other


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(
    POLICY,
    LINES,
    st.lists(st.integers(1, 4), max_size=40),
    st.sampled_from([1, 2, 3]),
    WANTED,
    st.sampled_from([None, "f.jsonl", '\ue000 "q" 100%.jsonl']),
)
def test_drawn_lines_under_drawn_policies(
    event_reader, text, lines, repeats, max_repeats, wanted, file
) -> None:
    policy = _policy(text)
    fast, exact = _runs(_repeat(lines, repeats), policy, max_repeats, wanted, file)
    assert fast == exact


@SETTINGS
@given(POLICY, engine_calls(), st.sampled_from([1, 2, 3]), WANTED)
def test_the_engine_equivalence_sequences_under_drawn_policies(
    event_reader, text, sequence, max_repeats, wanted
) -> None:
    policy = _policy(text)
    data = "".join(engine_event_line(c, c["session"]) + "\n" for c in sequence * 2)
    fast, exact = _runs(data.encode("utf-8", "surrogatepass"), policy, max_repeats, wanted, None)
    assert fast == exact


@pytest.mark.parametrize(
    ("tool", "file"),
    [("read\ue000s", None), ("a%db%", "x%s\ue000p.jsonl"), ("\ue000c", "\ue000s"), ("t", None)],
)
def test_marks_and_percent_signs_in_names_are_written_exactly(
    event_reader, tool: str, file: str | None
) -> None:
    """A name holding the templates' marks takes the exact writer; a ``%`` is literal."""
    policy = _policy(
        f'warn_at = 2\n[[tools]]\nmatch = ["{tool}*"]\nmax_repeats = 3\n'
        "[cycles]\nmax_period = 2\nmax_repeats = 5\n[stop]\nafter_denials = 2\n"
    )
    lines = [
        json.dumps({"tool": tool, "args": {"n": i % 2 if i < 8 else 0}, "callId": f"c{i}"})
        for i in range(14)
    ]
    data = ("\n".join(lines) + "\n").encode()
    fast, exact = _runs(data, policy, 3, {"pass", "deny", "stop", "warn", "error"}, file)
    assert fast == exact
    assert b'"verdict":"stop"' in fast[0] and b'"warn":true' in fast[0]


@pytest.mark.parametrize("shape", ["events", "distinct_sessions"])
def test_the_benchmarks_inputs_under_the_realistic_policy(
    event_reader, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/gen.py's inputs (``search`` calls whose ``limit`` the policy ignores, streaks,
    alternations the window denies before a cycle completes), warnings and denials; the
    exact writer writes only each template's first line (a template that failed its
    check would still write exact bytes, slowly)."""
    import gen

    written = []
    exactly = fastpath._Judge.policy_exactly

    def counted(self: Any, *args: Any) -> None:
        written.append(args)
        exactly(self, *args)

    monkeypatch.setattr(fastpath._Judge, "policy_exactly", counted)
    data = b"".join(getattr(gen, shape)(3000))
    policy = _policy(REALISTIC)
    fast, exact = _runs(data, policy, 3, {"pass", "deny", "stop", "warn", "error"}, None)
    keys = [
        (tool, state.decision, state.slot.count)
        for state, _, _, tool, _, duplicate in written
        if not duplicate and not state.decision.period  # a cycle's denial: always exact
    ]
    assert keys and len(keys) == len(set(keys))
    assert fast == exact
    out = fast[0]
    assert out.count(b"\n") == 3000
    assert b'"policyHash":true' in out
    if shape == "events":
        assert b'"warn":true' in out and b'"verdict":"deny"' in out
        assert b'"rule":"streak"' in out and b'"rule":"window"' in out


@pytest.mark.parametrize(
    ("policy", "user"),
    [
        ('progress = true\n[[tools]]\nmatch = "poll"\nmax_repeats = 3\n', False),
        ("[same_error]\nafter = 2\n", False),
        ("[same_result]\nafter = 2\n", False),
        ("reset_on_user_turn = true\n", True),
    ],
)
def test_a_policy_that_reads_results_or_user_turns_reads_them(
    tmp_path: Path, policy: str, user: bool
) -> None:
    """Result and user lines are records only the exact path's reader reads: under such a
    policy ``filter`` takes it (``fastpath.takes``), so a changing result restarts the
    streak and a user turn ends it, as with ``LOOP_BRAKE_EXACT=1``."""
    path = tmp_path / "policy.toml"
    path.write_text(policy, encoding="utf-8")
    lines = []
    for i in range(6):
        lines.append({"tool": "poll", "args": {"job": 1}, "sessionId": "s", "callId": f"c{i}"})
        if user:
            lines.append({"type": "user", "sessionId": "s"})
        else:
            result = {"content": [{"type": "text", "text": f"step {i}"}], "isError": True}
            lines.append({"type": "result", "sessionId": "s", "callId": f"c{i}", "result": result})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    args = ("filter", "--policy", str(path), "--summary")
    fast = run_cli(*args, input=data, env=cli_env(LOOP_BRAKE_POLICY=""))
    exact = run_cli(*args, input=data, env=cli_env(LOOP_BRAKE_POLICY="", LOOP_BRAKE_EXACT="1"))
    assert (fast.stdout, fast.stderr) == (exact.stdout, exact.stderr)
    assert fast.stdout.count(b"\n") == 6  # one verdict a call, none for the other lines


def test_cycle_denials_name_their_own_calls(event_reader) -> None:
    """Two sessions complete cycles of different calls with the same decision and count:
    each denial names its own cycle (a cycle's line is never a template)."""
    policy = _policy("[cycles]\nmax_period = 2\nmax_repeats = 3\n")
    lines = [
        json.dumps({"tool": tool, "args": {"v": value}, "sessionId": session, "callId": f"{n}"})
        for session, value in (("s1", 1), ("s2", 2))
        for n, tool in enumerate("ababab")
    ]
    data = ("\n".join(lines) + "\n").encode()
    fast, exact = _runs(data, policy, 5, {"pass", "deny", "stop", "warn", "error"}, None)
    assert fast == exact
    denials = [json.loads(line) for line in fast[0].splitlines() if b'"deny"' in line]
    assert len(denials) == 2 and denials[0]["cycle"] != denials[1]["cycle"]


@pytest.mark.parametrize(
    "paths", ['["$.q.x"]', '["$.q", "$.t[0]"]', '["$.*"]', '["$.q", "$.limit"]', "[\"$['q']\"]"]
)
def test_args_ignore_paths_top_level_or_not(event_reader, paths: str) -> None:
    """A rule's ``args_ignore``: where every path is ``$.name`` the C reader leaves those
    members out itself (``policy_digest``), any other path (a member below, an element,
    a wildcard) takes ``Policy.args_digest``; the same policy hashes either way."""
    policy = _policy(f'[[tools]]\nmatch = "s*"\nmax_repeats = 3\nargs_ignore = {paths}\n')
    lines = [
        json.dumps(
            {
                "tool": "search",
                "args": {"q": {"x": i, "y": 1}, "t": [i, 2], "limit": i % 2, "z": 0},
                "sessionId": "s",
                "callId": f"c{i}",
            }
        )
        for i in range(8)
    ]
    data = ("\n".join(lines) + "\n").encode()
    fast, exact = _runs(data, policy, 5, {"pass", "deny", "stop", "warn", "error"}, None)
    assert fast == exact
    assert b'"policyHash":true' in fast[0]
