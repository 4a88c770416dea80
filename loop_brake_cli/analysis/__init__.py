"""What a replay found: per-session streaks, denials, histograms and a maxRepeats sweep.

Where each part is decided:

- ``analyzer``: counting judged records as they come (streaks, denials, the
  alternations and same-tool runs that the exact match cannot catch);
- ``report``: the findings as plain data that pickles, and ``merge`` of the
  reports of files replayed separately (``replay -j``);
- ``sweep``: what every other maxRepeats would have denied, with no second pass;
- ``waste``: what the calls after each streak's first denial cost (calls, model
  turns, tokens by kind), per session;
- ``timeline``: every call of a session, kept only when asked for (``replay --html``);
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
from .timeline import TimelineCall
from .waste import KINDS, Cost, ModelCost, Tokens, Waste

__all__ = [
    "KINDS",
    "Alternation",
    "Analyzer",
    "Cost",
    "Denial",
    "FileInfo",
    "Job",
    "ModelCost",
    "ReadError",
    "Report",
    "SameToolRun",
    "SessionStats",
    "Skipped",
    "Streak",
    "SweepRow",
    "TimelineCall",
    "Tokens",
    "Waste",
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
