"""What each trick of ``readers/fast_observe.py`` saves per call, in process (issue 40
item 6: the specification in the core, each speed-up in the readers with the
measurement that pays for it).

    python bench/fast_observe.py [--calls 100000] [--rounds 5]

The calls of the generated event stream (``gen.events``) are parsed once; then, per
round and in turn (interleaved, so a drifting machine moves both sides alike):

* a verdict per call through ``LoopBrake.observe`` (``verdicts.verdict_of``, the
  specification) against ``fast_observe.observe_for``'s (``tuple.__new__``, one
  Python call fewer), each on a fresh memory brake;
* each call hashed by ``canonical.call_digest`` (the contract) against
  ``fast_canonical.fast_digest`` (what ``digest_for`` gives a stream an adapter
  marked with ``plain_records``).

Prints the median CPU time (``time.process_time``: user and system) of each side
and the difference per call. The end-to-end effect is ``replay`` on a transcript
(``bench/paired.py``); this isolates each trick.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import gen  # noqa: E402
import run  # noqa: E402

from loop_brake_cli import LoopBrake  # noqa: E402
from loop_brake_cli.core.canonical import call_digest, parse_json  # noqa: E402
from loop_brake_cli.readers.fast_canonical import fast_digest  # noqa: E402
from loop_brake_cli.readers.fast_observe import observe_for  # noqa: E402


def _verdicts(observe, calls: list) -> float:
    start = time.process_time()
    for session, tool, digest, call_id in calls:
        observe(session, tool, digest, call_id)
    return time.process_time() - start


def _digests(digest, calls: list) -> float:
    start = time.process_time()
    for tool, value in calls:
        digest(tool, value)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    path = run.data_file("events", args.calls, gen.events)
    objects = [parse_json(line) for line in path.read_bytes().splitlines()]
    hashed = [
        (o["sessionId"], o["tool"], call_digest(o["tool"], o["args"]), o.get("callId"))
        for o in objects
    ]
    plain = [(o["tool"], o["args"]) for o in objects]
    pairs = {
        "verdict": (
            ("LoopBrake.observe", lambda: _verdicts(LoopBrake(3).observe, hashed)),
            ("observe_for", lambda: _verdicts(observe_for(LoopBrake(3)), hashed)),
        ),
        "digest": (
            ("call_digest", lambda: _digests(call_digest, plain)),
            ("fast_digest", lambda: _digests(fast_digest, plain)),
        ),
    }
    times: dict[str, list[float]] = {name: [] for pair in pairs.values() for name, _ in pair}
    for _ in range(args.rounds):
        for pair in pairs.values():
            for name, measure in pair:
                times[name].append(measure())
    print(f"{len(objects)} calls, median CPU (user+sys) of {args.rounds} interleaved rounds:")
    for pair in pairs.values():
        (spec, _), (fast, _) = pair
        slow_s, fast_s = statistics.median(times[spec]), statistics.median(times[fast])
        saved = (slow_s - fast_s) / len(objects) * 1e6
        print(
            f"  {spec:<18} {slow_s:6.3f} s   {fast:<12} {fast_s:6.3f} s"
            f"   {saved:+.2f} us/call saved ({slow_s / fast_s:.2f}x)"
        )


if __name__ == "__main__":
    main()
