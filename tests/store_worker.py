"""One process of a fleet, for tests/test_store_redis.py: counts calls into a shared store
and prints one JSON line per call (never arguments: indexes into the test's tables).

    python tests/store_worker.py URL MODE SYNC N WORKER [POLICY]

``SYNC`` is a folder: the worker, its store open, creates ``SYNC/ready-WORKER`` and
waits for ``SYNC/go``, which the test creates once every worker is ready, so the
processes of a test overlap however slowly each one starts (no guessed delay).
Modes: ``same`` (N identical calls of session s), ``mixed`` (N calls drawn from two
tools x two argument sets, unique call ids, seeded by WORKER), ``sessions:K`` (N
identical calls spread over sessions s0..sK-1), ``storm`` (identical calls until the
file N exists; a store failure prints an error line, creates ``SYNC/failed-WORKER``
and goes on; a call made once the file N.restarted exists says so).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest
from loop_brake_cli.stores import StoreError, open_store

TOOLS = ("read", "grep")
ARGS = ({"p": 1}, {"p": 2})


def main() -> None:
    url, mode, sync, n, worker = sys.argv[1:6]
    policy = None
    if len(sys.argv) > 6:
        from loop_brake_cli.core.policy import load_policy

        policy = load_policy(sys.argv[6])
    store = open_store(url)
    wording = LoopBrake(3, policy=policy)  # words a store's state as a verdict
    rng = random.Random(int(worker))
    same = call_digest(TOOLS[0], ARGS[0])
    open(os.path.join(sync, f"ready-{worker}"), "w").close()
    while not os.path.exists(os.path.join(sync, "go")):
        time.sleep(0.005)
    out = sys.stdout
    if mode == "storm":
        while not os.path.exists(n):
            restarted = os.path.exists(n + ".restarted")
            try:
                state, duplicate = store.count_call("s", "read", same, None, 3, policy=policy)
                verdict = wording.slot_verdict(state, "s", None, duplicate)
            except StoreError as exc:
                out.write(json.dumps({"error": str(exc)}) + "\n")
                open(os.path.join(sync, f"failed-{worker}"), "w").close()
                time.sleep(0.01)
                continue
            out.write(json.dumps({"count": verdict.count, "restarted": restarted}) + "\n")
        return
    for i in range(int(n)):
        session, tool, arg = "s", 0, 0
        if mode == "mixed":
            tool, arg = rng.randrange(2), rng.randrange(2)
        elif mode.startswith("sessions:"):
            session = f"s{i % int(mode.split(':')[1])}"
        call_id = f"w{worker}-{i}"
        digest = call_digest(TOOLS[tool], ARGS[arg])
        state, duplicate = store.count_call(session, TOOLS[tool], digest, call_id, 3, policy=policy)
        verdict = wording.slot_verdict(state, session, call_id, duplicate)
        record = {
            "version": store.last_version,
            "session": session,
            "tool": tool,
            "arg": arg,
            "callId": call_id,
            "count": verdict.count,
            "denied": verdict.denied,
            "rule": verdict.rule,
        }
        out.write(json.dumps(record) + "\n")
    store.close()


if __name__ == "__main__":
    main()
