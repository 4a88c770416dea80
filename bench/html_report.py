"""``replay --html``: how long the page takes to open in headless Chromium, for a directory's
worth of sessions and for one very long session.

    python bench/html_report.py [--sessions 10000] [--calls 10000] [--rounds 5]

Generates two event files (the filter/replay input format) in a temporary
directory: ``--sessions`` sessions of 2 to 40 calls each (a fifth of them stuck in
a loop the brake denies), and one session of ``--calls`` calls (loops, A/B
alternations and same-tool runs among them). For each it runs the real CLI,
``loop-brake replay FILE --html -`` into a file, and prints the time that took
and the page's size; then loads the page from disk in Debian's chromium (headless,
fresh profile, via tests/browser.py) ``--rounds`` times and prints the median and
worst of:

- *ready*: from the start of navigation to the page's script having drawn the
  totals, the table and the legend (``performance.mark("lb-ready")``);
- *drawn*: wall time from ``goto`` until the first session's timeline is drawn
  (for the long session: all of its calls' marks);
- *sort*: a click on the Calls header until the table is redrawn (every session
  sorted).

It also checks that no page made a request other than its own file, or logged a
console error. The issue's target is ready in under 2 s for 10,000 sessions.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import chromium, missing, visit  # noqa: E402

TOOLS = ["Read", "Edit", "Bash", "Grep", "Glob", "Write", "WebFetch", "TodoWrite", "Task"]


def many_sessions(path: Path, sessions: int, seed: int = 16) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for s in range(sessions):
            calls = rng.randint(2, 40)
            stuck = rng.random() < 0.2
            for n in range(calls):
                if stuck and n >= calls // 2:
                    tool, args = "Bash", {"command": "pytest -x"}
                else:
                    tool, args = rng.choice(TOOLS), {"n": n, "s": s}
                row = {"tool": tool, "args": args, "sessionId": f"session-{s:05d}"}
                out.write(json.dumps(row) + "\n")


def long_session(path: Path, calls: int, seed: int = 17) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        n = 0
        while n < calls:
            kind = rng.random()
            if kind < 0.1:  # a loop
                block = [("Bash", {"command": f"make test {n}"})] * rng.randint(3, 30)
            elif kind < 0.2:  # an A/B alternation
                block = [("Read", {"f": n}), ("Edit", {"f": n})] * rng.randint(2, 6)
            else:
                block = [(rng.choice(TOOLS), {"n": n, "k": k}) for k in range(rng.randint(1, 8))]
            for tool, args in block[: calls - n]:
                out.write(json.dumps({"tool": tool, "args": args, "sessionId": "long"}) + "\n")
                n += 1


def build(source: Path, page: Path) -> float:
    """``replay FILE --html -``: the page alone (drawing the text summary of 10,000 sessions
    is not what this measures)."""
    start = time.perf_counter()
    with page.open("wb") as out:
        subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "replay", str(source), "--html", "-"],
            check=True,
            stdout=out,
            cwd=ROOT,
        )
    return time.perf_counter() - start


def measure(context: object, page: Path) -> dict[str, float]:
    start = time.perf_counter()
    seen = visit(context, page, timeout_ms=120_000)
    seen.page.evaluate("document.getElementById('lb-timelines').scrollIntoView()")
    seen.page.wait_for_selector(".lb-session[data-drawn='1']", timeout=120_000)
    drawn = time.perf_counter() - start
    ready = seen.page.evaluate("performance.getEntriesByName('lb-ready')[0].startTime") / 1000
    seen.page.evaluate("window.scrollTo(0, 0)")
    first = seen.page.inner_text("#lb-rows tr:first-child td:nth-child(2)")
    start = time.perf_counter()
    seen.page.click("#lb-head th:nth-child(3) button")
    seen.page.wait_for_function(
        "first => document.querySelector('#lb-rows tr:first-child td:nth-child(2)')"
        ".textContent !== first || document.querySelectorAll('#lb-rows tr').length === 1",
        arg=first,
    )
    sort = time.perf_counter() - start
    if seen.errors or seen.requests != [page.resolve().as_uri()]:
        raise SystemExit(f"{page.name}: errors {seen.errors}, requests {seen.requests}")
    seen.page.close()
    return {"ready": ready, "drawn": drawn, "sort": sort}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    why = missing()
    if why:
        raise SystemExit(why)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        cases = []
        many = work / "many.jsonl"
        many_sessions(many, options.sessions)
        cases.append((f"{options.sessions:,} sessions", many, work / "many.html"))
        long = work / "long.jsonl"
        long_session(long, options.calls)
        cases.append((f"1 session of {options.calls:,} calls", long, work / "long.html"))
        with chromium() as context:
            for label, source, page in cases:
                seconds = build(source, page)
                size = page.stat().st_size / 1e6
                print(f"{label}: replay --html - {seconds:.2f} s, page {size:.1f} MB")
                rounds = [measure(context, page) for _ in range(options.rounds)]
                for key in ("ready", "drawn", "sort"):
                    values = [r[key] for r in rounds]
                    print(
                        f"  {key:<5} median {statistics.median(values):.3f} s, "
                        f"worst {max(values):.3f} s ({options.rounds} loads)"
                    )
        print("no request but the page itself, no console error")


if __name__ == "__main__":
    main()
