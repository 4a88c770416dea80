"""The cost of a policy (issue 13): throughput and memory per session, with and without.

    python bench/run.py --only policy [--quick]

* throughput: ``loop-brake filter`` on the throughput input with no policy (the
  fast path), with an empty policy file (must be the same: no policy), and
  with a policy using every feature (a per-tool limit, an exemption, cycles of
  2..4, stop after 5), on the fast path since issue 41; median of the rounds, and
  the slowdown against no policy;
* against Node (issue 41 goal 1): ``filter`` under a realistic policy (``REALISTIC``:
  warn_at, per-tool limits, a window, args_ignore, cycles) against ``node
  bench/reference.mjs`` without one, on the throughput input and on 1,000,000
  sessions, in paired interleaved rounds (CPU seconds, user + system); the target is
  2x Node per CPU second; the policy's output is checked byte for byte against the
  exact path's (``LOOP_BRAKE_EXACT=1``, same policy) once per input;
* memory per session, in process with ``tracemalloc`` (exact, not RSS noise):
  100,000 sessions each fed 6 distinct calls (so a cycle window is full; each
  call its own 32-byte digest object, as in a real run), held by
  a ``LoopBrake`` without a policy, with a policy without ``[cycles]``, and with
  cycles at max_period 4 and 8; bytes per session of each. And the progress
  mode (issue 14) without cycles, each call followed by its result and the last
  two calls identical, so each session keeps two result digests (its most).
"""

from __future__ import annotations

import statistics
import tracemalloc
from pathlib import Path

FULL = """\
[[tools]]
match = "read_file"
max_repeats = 5
[[tools]]
match = ["list_*", "BashOutput"]
exempt = true
[cycles]
max_period = 4
max_repeats = 3
[stop]
after_denials = 5
"""
NO_CYCLES = """\
[[tools]]
match = "read_file"
max_repeats = 5
[stop]
after_denials = 5
"""


REALISTIC = """\
warn_at = 2
[[tools]]
match = "read_file"
max_repeats = 5
[[tools]]
match = "search"
max_repeats = 4
args_ignore = ["$.limit"]
[[tools]]
match = ["list_*", "BashOutput"]
exempt = true
[window]
calls = 8
max_repeats = 3
[cycles]
max_period = 4
max_repeats = 3
"""
"""What issue 41 calls a realistic policy: a warning before the limit, per-tool limits,
an exemption, a window, a path ignored in one tool's arguments, cycles."""


def bench_policy_vs_node(run, loop_brake, inputs, data: Path, rounds: int, row, reference):
    """Paired rounds: filter under REALISTIC, Node without a policy; CPU per input."""
    import os
    import shutil

    node = shutil.which("node")
    policy = _policy_file(data, "policy-realistic.toml", REALISTIC)
    env = dict(os.environ, LOOP_BRAKE_POLICY="")
    for label, events, n in inputs:
        ours, theirs = [], []
        out = data / "policy-realistic.out"
        for _ in range(rounds):
            cmd = [*loop_brake(), "filter", "--policy", str(policy), str(events)]
            ours.append(run(cmd, out, env=env))
            if node:
                theirs.append(run([node, str(reference), str(events)]))
        exact_out = data / "policy-realistic-exact.out"
        exact = dict(env, LOOP_BRAKE_EXACT="1")
        run([*loop_brake(), "filter", "--policy", str(policy), str(events)], exact_out, env=exact)
        same = "identical to" if out.read_bytes() == exact_out.read_bytes() else "DIFFERS FROM"
        cpu = statistics.median(r["user"] + r["sys"] for r in ours)
        row(
            f"filter --policy realistic, {label}: events per CPU s",
            f"{n / cpu:,.0f}",
            f"median of {rounds}; output {same} the exact path",
        )
        if theirs:
            node_cpu = statistics.median(r["user"] + r["sys"] for r in theirs)
            ratio = node_cpu / cpu
            ok = "met" if ratio >= 2 else "MISSED"
            row(
                f"  ratio to Node without a policy, {label}",
                f"{ratio:.2f}x",
                f"per CPU second, paired; target >= 2x: {ok}",
            )


def _policy_file(data: Path, name: str, text: str) -> Path:
    path = data / name
    path.write_text(text, encoding="utf-8")
    return path


def bench_policy_throughput(run, loop_brake, events: Path, data: Path, n: int, rounds: int, row):
    import os

    env = dict(os.environ, LOOP_BRAKE_POLICY="")
    full = _policy_file(data, "policy-full.toml", FULL)
    empty = _policy_file(data, "policy-empty.toml", "")
    results: dict[str, list[float]] = {"none": [], "empty": [], "full": []}
    for _ in range(rounds):
        results["none"].append(run([*loop_brake(), "filter", str(events)], env=env)["wall"])
        results["empty"].append(
            run([*loop_brake(), "filter", "--policy", str(empty), str(events)], env=env)["wall"]
        )
        results["full"].append(
            run([*loop_brake(), "filter", "--policy", str(full), str(events)], env=env)["wall"]
        )
    rate = {key: n / statistics.median(walls) for key, walls in results.items()}
    row("filter, no policy: events/s (wall)", f"{rate['none']:,.0f}", f"median of {rounds}")
    row("filter, empty policy file: events/s (wall)", f"{rate['empty']:,.0f}", "= no policy")
    row("filter, every policy feature: events/s (wall)", f"{rate['full']:,.0f}", "fast path")
    row(
        "slowdown with every policy feature",
        f"{rate['none'] / rate['full']:.2f}x",
        "no policy events/s / policy events/s",
    )


def _bytes_per_session(policy, sessions: int, results: bool = False) -> float:
    from loop_brake_cli.core.brake import LoopBrake
    from loop_brake_cli.core.canonical import call_digest

    digests = [call_digest("search", {"q": i}) for i in range(6)]
    tools = ["search", "read_file", "grep", "search", "edit", "grep"]
    if results:  # the last call repeats the one before: its streak keeps both results
        digests[5], tools[5] = digests[4], tools[4]
    outputs = [call_digest("output", i) for i in range(6)]
    names = [f"session-{i:07d}" for i in range(sessions)]  # made before measuring
    tracemalloc.start()
    brake = LoopBrake(3, policy=policy)
    before = tracemalloc.get_traced_memory()[0]
    for name in names:
        for tool, digest, output in zip(tools, digests, outputs, strict=True):
            brake.observe(name, tool, bytes(bytearray(digest)))  # a digest object per call
            if results:
                brake.observe_result(name, None, digest=bytes(bytearray(output)))
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(brake) == sessions
    return (after - before) / sessions


def bench_policy_memory(data: Path, quick: bool, row) -> None:
    from loop_brake_cli.core.policy import load_policy

    sessions = 20_000 if quick else 100_000
    cases = [
        ("no policy", None),
        ("policy without [cycles]", load_policy(str(_policy_file(data, "p1.toml", NO_CYCLES)))),
        ("policy, cycles max_period 4", load_policy(str(_policy_file(data, "p2.toml", FULL)))),
        (
            "policy, cycles max_period 8",
            load_policy(
                str(_policy_file(data, "p3.toml", FULL.replace("max_period = 4", "max_period = 8")))
            ),
        ),
    ]
    for label, policy in cases:
        per = _bytes_per_session(policy, sessions)
        row(f"memory per session, {label} (bytes)", f"{per:,.0f}", f"tracemalloc, {sessions:,}")
    for label, text in (  # issue 29: 6 calls per session, so a window of 4 is full
        ("[window] calls 4", "[window]\ncalls = 4\nmax_repeats = 3\n"),
        ("[window] calls 64 (6 calls held)", "[window]\ncalls = 64\nmax_repeats = 3\n"),
    ):
        window = load_policy(str(_policy_file(data, "p5.toml", NO_CYCLES + text)))
        per = _bytes_per_session(window, sessions)
        row(f"memory per session, {label} (bytes)", f"{per:,.0f}", f"tracemalloc, {sessions:,}")
    errors = load_policy(
        str(_policy_file(data, "p6.toml", NO_CYCLES + "[same_error]\nafter = 3\n"))
    )
    per = _bytes_per_session(errors, sessions, results=True)
    row(
        "memory per session, [same_error], results fed (bytes)",
        f"{per:,.0f}",
        f"tracemalloc, {sessions:,}",
    )
    progress = load_policy(str(_policy_file(data, "p4.toml", "progress = true\n" + NO_CYCLES)))
    per = _bytes_per_session(progress, sessions, results=True)
    row(
        "memory per session, progress without [cycles], results fed (bytes)",
        f"{per:,.0f}",
        f"tracemalloc, {sessions:,}",
    )
