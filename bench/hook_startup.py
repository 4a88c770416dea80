"""Hook start-up: one `loop-brake hook` call vs `python -c "import sqlite3"` (issue 12: <= 1.8x).

The hook runs before every tool call an agent makes, so its whole-process cost
is what a user feels. The two commands alternate in one loop, so machine noise
hits both alike; each hook call gets a realistic Claude Code PreToolUse input
(distinct tool_use_id, same arguments, so the streak grows and some calls are
denied) against a fresh state directory. The measuring is bench/startup.py's,
which also times `filter`; this script is its hook part alone.

    python bench/hook_startup.py [--rounds 30] [--max-ratio 1.8]

Exit status 1 if the wall-time ratio exceeds --max-ratio.
"""

from __future__ import annotations

import argparse
import sys

import startup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-ratio", type=float, default=1.8)
    args = parser.parse_args()
    result = startup.measure(args.rounds, (startup.HOOK,))
    met = startup.report(result, args.rounds, {startup.HOOK: args.max_ratio})
    hook, bare = result[startup.HOOK]["wall"], result[startup.SQLITE3]["wall"]
    ratio = hook / bare
    print(f"ratio {ratio:.2f}x (target <= {args.max_ratio:g}x: {'ok' if met else 'MISSED'})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
