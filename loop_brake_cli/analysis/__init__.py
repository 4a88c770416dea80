"""What a replay found: per-session streaks, denials, histograms and a maxRepeats sweep.

Where each part is decided:

- ``analyzer``: counting judged records as they come (streaks, denials, the
  alternations and same-tool runs that the exact match cannot catch);
- ``report``: the findings as plain data that pickles, and ``merge`` of the
  reports of files replayed separately (``replay -j``);
- ``sweep``: what every other maxRepeats would have denied, with no second pass;
- ``summary``: the streak-length histogram and the ``--json`` document;
- ``replay``: reading files into an analyzer, every failure located in the report.

Nothing here holds or prints tool arguments: only tool names, session ids,
12-hex hash prefixes and locations. Imports neither click nor rich.
"""

from __future__ import annotations

from .analyzer import Analyzer
from .replay import Job, internal_error, replay_file, replay_files, replay_job
from .report import (
    Alternation,
    Denial,
    FileInfo,
    ReadError,
    Report,
    SameToolRun,
    SessionStats,
    Skipped,
    Streak,
    Where,
    merge,
)
from .summary import histogram, report_to_json
from .sweep import SweepRow, parse_sweep, sweep

__all__ = [
    "Alternation",
    "Analyzer",
    "Denial",
    "FileInfo",
    "Job",
    "ReadError",
    "Report",
    "SameToolRun",
    "SessionStats",
    "Skipped",
    "Streak",
    "SweepRow",
    "Where",
    "histogram",
    "internal_error",
    "merge",
    "parse_sweep",
    "replay_file",
    "replay_files",
    "replay_job",
    "report_to_json",
    "sweep",
]
