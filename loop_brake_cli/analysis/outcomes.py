"""Which runs succeeded: outcome files read, and runs matched to them (``replay --outcomes``).

An outcome is one bit per run, *resolved* or not, as an evaluation harness
decided it. The files read are the ones harnesses write, as they write them:

* the SWE-bench harness's run report, ``<model>.<run_id>.json``
  (``swebench/harness/reporting.py``, ``schema_version`` 2): ``resolved_ids``
  are resolved; ``unresolved_ids``, ``error_ids``, ``empty_patch_ids`` and
  ``incomplete_ids`` are not;
* a per-instance ``report.json`` of the harness,
  ``{"<instance_id>": {"resolved": true, "tests_status": ...}}``, or the flat
  copy SWE-bench's experiments keep beside each submission's logs
  (``logs/<instance_id>/report.json`` holding ``{"resolved": true, ...}``: the
  instance is its directory's name); a directory names every ``report.json``
  below it (the harness's ``logs/run_evaluation/<run_id>/<model>/`` tree);
* a leaderboard ``results.json`` of SWE-bench's experiments,
  ``{"resolved": [ids], "no_generation": [ids], "no_logs": [ids]}``: only the
  resolved instances are listed, so **every run it does not list as resolved is
  unresolved** (the file covers the whole benchmark), and no run is unmatched;
* JSON lines, one run a line: an id member and an outcome member (below), or
  OpenHands' evaluation output, ``{"instance_id": ..., "test_result": {"report":
  {"resolved": ...}}}``;
* CSV (a header line, then one run a line; a tab-separated file is read too).

In a row, the run is the first member (or column) named ``instance_id``,
``run_id``, ``run``, ``session_id``, ``session``, ``file`` or ``id``; its outcome
the first named ``resolved``, ``outcome``, ``success``, ``passed``, ``status``,
``target`` or ``result``: a JSON boolean, or ``true``/``false``, ``1``/``0``,
``yes``/``no``, ``resolved``/``unresolved``, ``pass``/``fail``,
``passed``/``failed``, ``success``/``failure`` (any case).

Every problem is located (``outcomes.csv:7: ...``, ``results.json:$.resolved[3]:
...``) and the rest of the file is still read; a value of the file is never
quoted (only member names, which are the file's own schema).

**Matching.** A run of the replay is a session (``SessionStats``). Its outcome is
the first of these keys the outcomes hold: the session id; the session id
without a dataset row's ``#<row>`` (``corpus/``: ``<instance_id>#<row>``); the
file's path as given; its name; its name without the extensions transcripts
carry (``astropy__astropy-12907.traj.json`` is ``astropy__astropy-12907``); the
name of its directory (SWE-agent and mini-SWE-agent keep
``<instance_id>/<instance_id>.traj``). Runs none of whose keys match are
*unmatched* and listed; so are outcomes that no run matched.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.small_file import SmallFileError, file_kind, read_small_file

__all__ = [
    "ID_NAMES",
    "OUTCOME_NAMES",
    "Matched",
    "OutcomeError",
    "Outcomes",
    "load_outcomes",
    "match_runs",
    "run_keys",
]

ID_NAMES = ("instance_id", "run_id", "run", "session_id", "session", "file", "id")
"""The member or column that names a run, in order of preference."""
OUTCOME_NAMES = ("resolved", "outcome", "success", "passed", "status", "target", "result")
"""The member or column that holds its outcome, in order of preference."""
TRUE_WORDS = frozenset({"true", "1", "yes", "y", "resolved", "pass", "passed", "success"})
FALSE_WORDS = frozenset(
    {"false", "0", "no", "n", "unresolved", "fail", "failed", "failure", "error"}
)
MAX_DOCUMENT_BYTES = 64 << 20
"""The largest JSON document read whole (a harness report of 2,294 instances is 100 kB)."""
PROBLEMS_KEPT = 100
"""Located problems kept; more are counted."""
REPORT_NAME = "report.json"
"""The harness's per-instance report, found in a directory named by ``--outcomes``."""
RUN_REPORT_LISTS = (
    ("resolved_ids", True),
    ("unresolved_ids", False),
    ("error_ids", False),
    ("empty_patch_ids", False),
    ("incomplete_ids", False),
)
"""The lists of the harness's run report, and the outcome each stands for."""
TRANSCRIPT_SUFFIXES = (
    ".gz",
    ".json",
    ".jsonl",
    ".ndjson",
    ".traj",
    ".log",
    ".txt",
    ".yaml",
    ".yml",
    ".parquet",
)
"""Extensions removed from a file name to find its run's id (repeatedly: ``.traj.json``)."""
_ROW = re.compile(r"#\d+\Z")


class OutcomeError(ValueError):
    """An outcome file that gave nothing usable; the message names it and why."""

    def __init__(self, message: str, unopened: bool = False) -> None:
        super().__init__(message)
        self.unopened = unopened


@dataclass
class Outcomes:
    """Each run id's outcome (True: resolved), where it came from, and what was wrong.

    ``complement``: the source lists the resolved runs of a whole benchmark only
    (a leaderboard ``results.json``), so a run it does not name is unresolved."""

    source: str
    kind: str
    resolved: dict[str, bool] = field(default_factory=dict)
    complement: bool = False
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    def problem(self, where: str, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(f"{where}: {message}")

    def put(self, run: str, resolved: bool, where: str) -> None:
        """One run's outcome; a run given twice with two outcomes keeps the first."""
        known = self.resolved.get(run)
        if known is None:
            self.resolved[run] = resolved
        elif known != resolved:
            self.problem(where, "this run was given the other outcome earlier; the first is kept")

    def lookup(self, key: str) -> bool | None:
        return self.resolved.get(key)


def load_outcomes(path: str) -> Outcomes:
    """The outcomes in ``path`` (a file, or a directory of ``report.json`` files).

    Raises ``OutcomeError`` when nothing usable is in it; located problems of a file
    that still gave outcomes are in ``Outcomes.problems``."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise OutcomeError(f"{path}: cannot open: {reason}", unopened=True) from None
    if stat.S_ISDIR(mode):
        outcomes = _directory(path)
    elif not stat.S_ISREG(mode):
        raise OutcomeError(f"{path}: is {file_kind(mode)}, not a file of outcomes")
    else:
        outcomes = _file(path)
    if not outcomes.resolved:
        detail = f" ({outcomes.problems[0]})" if outcomes.problems else ""
        raise OutcomeError(f"{path}: no run's outcome found in it{detail}")
    return outcomes


def _directory(path: str) -> Outcomes:
    """Every ``report.json`` below ``path``, in name order (the harness's log tree)."""
    outcomes = Outcomes(path, "swebench-report.json")
    found = 0
    for root, dirs, files in os.walk(path):
        dirs.sort()
        if REPORT_NAME in files:
            found += 1
            name = os.path.join(root, REPORT_NAME)
            try:
                doc = _document(name)
            except OutcomeError as exc:
                outcomes.problem(name, str(exc))
                continue
            _instance_report(doc, name, outcomes)
    if not found:
        raise OutcomeError(f"{path}: a directory with no {REPORT_NAME} below it")
    return outcomes


def _document(path: str) -> Any:
    try:
        data = read_small_file(path, "outcome file", MAX_DOCUMENT_BYTES)
    except SmallFileError as exc:
        raise OutcomeError(str(exc), unopened=exc.unreadable) from None
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise OutcomeError("not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise OutcomeError(f"not valid JSON (line {exc.lineno}, column {exc.colno})") from None


def _file(path: str) -> Outcomes:
    head = _head(path)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        first = stripped.split(b"\n", 1)[0].strip()
        if _is_object_line(first) and _has_second_line(stripped):
            return _json_lines(path)
        try:
            doc = _document(path)
        except OutcomeError as exc:
            raise OutcomeError(f"{path}: {exc}", exc.unopened) from None
        return _from_document(doc, path)
    return _csv(path)


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read(1 << 16)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise OutcomeError(f"{path}: cannot open: {reason}", unopened=True) from None


def _is_object_line(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def _has_second_line(head: bytes) -> bool:
    lines = [line for line in head.split(b"\n") if line.strip()]
    return len(lines) > 1


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line, decoded; an undecodable line is skipped
    by the caller through its error."""
    try:
        stream = open(path, encoding="utf-8-sig", errors="strict", newline="")
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise OutcomeError(f"{path}: cannot open: {reason}", unopened=True) from None
    with stream:
        number = 0
        while True:
            number += 1
            try:
                line = stream.readline()
            except UnicodeDecodeError:
                raise OutcomeError(f"{path}:{number}: not UTF-8 text") from None
            if not line:
                return
            yield number, line


def _json_lines(path: str) -> Outcomes:
    outcomes = Outcomes(path, "jsonl")
    for number, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            outcomes.problem(where, f"not valid JSON (column {exc.colno})")
            continue
        if not isinstance(row, dict):
            outcomes.problem(where, "not a JSON object")
            continue
        _row(row, where, outcomes)
    return outcomes


def _row(row: dict[str, Any], where: str, outcomes: Outcomes) -> None:
    """One JSON row: its run id and outcome members (OpenHands' nested report too)."""
    run_name = next((name for name in ID_NAMES if name in row), None)
    if run_name is None:
        outcomes.problem(where, f"no member naming the run (one of {', '.join(ID_NAMES)})")
        return
    run = row[run_name]
    if not isinstance(run, str) or not run:
        outcomes.problem(where, f'"{run_name}" is not a non-empty string')
        return
    name = next((name for name in OUTCOME_NAMES if name in row), None)
    if name is not None:
        value, label = row[name], f'"{name}"'
    else:
        value = _nested(row, ("test_result", "report", "resolved"))
        label = '"test_result.report.resolved"'
        if value is None:
            outcomes.problem(
                where, f"no member holding the outcome (one of {', '.join(OUTCOME_NAMES)})"
            )
            return
    resolved = outcome_value(value)
    if resolved is None:
        outcomes.problem(where, f"{label} is not an outcome ({_ALLOWED})")
        return
    outcomes.put(run, resolved, where)


def _nested(row: dict[str, Any], keys: Sequence[str]) -> Any:
    value: Any = row
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


_ALLOWED = "true/false, 1/0, yes/no, resolved/unresolved, pass/fail, success/failure"


def outcome_value(value: Any) -> bool | None:
    """A JSON boolean, 0/1, or one of the words the module docstring lists; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return None


def _csv(path: str) -> Outcomes:
    outcomes = Outcomes(path, "csv")
    lines = _lines(path)
    header: list[str] | None = None
    header_line = 0
    run_column = outcome_column = -1
    for number, line in lines:
        if not line.strip():
            continue
        delimiter = "\t" if "\t" in line and "," not in line else ","
        header = [cell.strip().lower() for cell in next(csv.reader([line], delimiter=delimiter))]
        header_line = number
        run_column = _column(header, ID_NAMES)
        outcome_column = _column(header, OUTCOME_NAMES)
        break
    if header is None:
        raise OutcomeError(f"{path}: empty: no header line")
    if run_column < 0 or outcome_column < 0:
        missing = "naming the run" if run_column < 0 else "holding the outcome"
        names = ID_NAMES if run_column < 0 else OUTCOME_NAMES
        raise OutcomeError(
            f"{path}:{header_line}: not a file of outcomes: no column {missing} "
            f"(one of {', '.join(names)}) in its header"
        )
    for number, line in lines:
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            cells = next(csv.reader(io.StringIO(line), delimiter=delimiter))
        except (csv.Error, StopIteration):
            outcomes.problem(where, "not a CSV line")
            continue
        if len(cells) <= max(run_column, outcome_column):
            outcomes.problem(where, f"fewer than {max(run_column, outcome_column) + 1} columns")
            continue
        run = cells[run_column].strip()
        if not run:
            outcomes.problem(where, f'the "{header[run_column]}" column is empty')
            continue
        resolved = outcome_value(cells[outcome_column])
        if resolved is None:
            column = header[outcome_column]
            outcomes.problem(where, f'the "{column}" column is not an outcome ({_ALLOWED})')
            continue
        outcomes.put(run, resolved, where)
    return outcomes


def _column(header: list[str], names: Sequence[str]) -> int:
    for name in names:
        if name in header:
            return header.index(name)
    return -1


def _from_document(doc: Any, path: str) -> Outcomes:
    """A JSON document: which harness wrote it is told by its members."""
    if isinstance(doc, list):
        outcomes = Outcomes(path, "json-rows")
        for index, row in enumerate(doc):
            where = f"{path}:$[{index}]"
            if isinstance(row, dict):
                _row(row, where, outcomes)
            else:
                outcomes.problem(where, "not a JSON object")
        return outcomes
    if not isinstance(doc, dict):
        raise OutcomeError(f"{path}: a JSON document that is neither an object nor an array")
    if "resolved_ids" in doc:
        return _run_report(doc, path)
    if isinstance(doc.get("resolved"), list):
        return _results(doc, path)
    if any(name in doc for name in ID_NAMES) and any(name in doc for name in OUTCOME_NAMES):
        outcomes = Outcomes(path, "json-rows")
        _row(doc, f"{path}:$", outcomes)
        return outcomes
    outcomes = Outcomes(path, "swebench-report.json")
    _instance_report(doc, path, outcomes)
    return outcomes


def _id_list(doc: dict[str, Any], name: str, path: str, outcomes: Outcomes) -> Iterator[str]:
    items = doc.get(name)
    if items is None:
        return
    if not isinstance(items, list):
        outcomes.problem(f"{path}:$.{name}", "not an array of instance ids")
        return
    for index, item in enumerate(items):
        if isinstance(item, str) and item:
            yield item
        else:
            outcomes.problem(f"{path}:$.{name}[{index}]", "not an instance id (a string)")


def _run_report(doc: dict[str, Any], path: str) -> Outcomes:
    """The harness's run report: resolved ids, and the lists of the others."""
    outcomes = Outcomes(path, "swebench-run-report")
    for name, resolved in RUN_REPORT_LISTS:
        for run in _id_list(doc, name, path, outcomes):
            outcomes.put(run, resolved, f"{path}:$.{name}")
    return outcomes


def _results(doc: dict[str, Any], path: str) -> Outcomes:
    """A leaderboard results.json: resolved ids listed, every other run unresolved."""
    outcomes = Outcomes(path, "swebench-results.json", complement=True)
    for run in _id_list(doc, "resolved", path, outcomes):
        outcomes.put(run, True, f"{path}:$.resolved")
    for name, items in doc.items():
        if name != "resolved" and isinstance(items, list):
            for run in _id_list(doc, name, path, outcomes):
                outcomes.put(run, False, f"{path}:$.{name}")
    return outcomes


def _instance_report(doc: Any, path: str, outcomes: Outcomes) -> None:
    """A per-instance report: ``{id: {"resolved": bool}}``, ``{id: bool}``, or the flat
    ``{"resolved": bool}`` whose instance is the name of the file's directory."""
    if not isinstance(doc, dict):
        outcomes.problem(path, "not a JSON object")
        return
    if "resolved" in doc and not isinstance(doc["resolved"], dict):
        run = os.path.basename(os.path.dirname(os.path.abspath(path)))
        resolved = outcome_value(doc["resolved"])
        if resolved is None:
            outcomes.problem(f"{path}:$.resolved", f"not an outcome ({_ALLOWED})")
        else:
            outcomes.put(run, resolved, path)
        return
    for run, value in doc.items():
        where = f"{path}:$[{json.dumps(run)}]"
        if isinstance(value, dict):
            if "resolved" not in value:
                outcomes.problem(where, 'no "resolved" member')
                continue
            value = value["resolved"]
            where += ".resolved"
        resolved = outcome_value(value)
        if resolved is None:
            outcomes.problem(where, f"not an outcome ({_ALLOWED})")
            continue
        outcomes.put(run, resolved, where)


def run_keys(file: str, session: str) -> list[tuple[str, str]]:
    """The keys a run is looked up by, in order, each with its kind (see the module
    docstring): ``session``, ``instance``, ``path``, ``name``, ``stem``, ``directory``."""
    keys = [("session", session)]
    row = _ROW.search(session)
    if row is not None:
        keys.append(("instance", session[: row.start()]))
    keys.append(("path", file))
    name = os.path.basename(file)
    keys.append(("name", name))
    stem = name
    changed = True
    while changed:
        changed = False
        for suffix in TRANSCRIPT_SUFFIXES:
            if stem.lower().endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)]
                changed = True
    keys.append(("stem", stem))
    parent = os.path.basename(os.path.dirname(file))
    if parent:
        keys.append(("directory", parent))
    seen: set[str] = set()
    unique = []
    for kind, key in keys:
        if key not in seen:
            seen.add(key)
            unique.append((kind, key))
    return unique


@dataclass
class Matched:
    """The runs of a replay with their outcomes: ``runs`` pairs each matched run's index
    (in ``Report.sessions``) with True (resolved) or False; the others are unmatched."""

    runs: list[tuple[int, bool]] = field(default_factory=list)
    unmatched: list[int] = field(default_factory=list)
    """Indexes of the runs no outcome matched."""
    unused: list[str] = field(default_factory=list)
    """Outcome ids that matched no run (in the file's order)."""
    by_key: dict[str, int] = field(default_factory=dict)
    """How many runs matched by each kind of key."""

    @property
    def resolved(self) -> int:
        return sum(1 for _, resolved in self.runs if resolved)

    @property
    def failed(self) -> int:
        return sum(1 for _, resolved in self.runs if not resolved)


def match_runs(runs: Iterable[tuple[str, str]], outcomes: Outcomes) -> Matched:
    """Each run, ``(file, session)``, matched to its outcome by its keys in order; under a
    ``complement`` source, a run named nowhere is unresolved (never unmatched)."""
    matched = Matched()
    used: set[str] = set()
    for index, (file, session) in enumerate(runs):
        found = None
        for kind, key in run_keys(file, session):
            resolved = outcomes.lookup(key)
            if resolved is not None:
                found = resolved
                used.add(key)
                matched.by_key[kind] = matched.by_key.get(kind, 0) + 1
                break
        if found is None and outcomes.complement:
            found = False
            matched.by_key["unlisted"] = matched.by_key.get("unlisted", 0) + 1
        if found is None:
            matched.unmatched.append(index)
        else:
            matched.runs.append((index, found))
    matched.unused = [key for key in outcomes.resolved if key not in used]
    return matched
