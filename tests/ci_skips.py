"""In CI a test never skips for want of a tool: a pytest plugin (tests/conftest.py
loads it; tests/test_ci_skips.py runs it on a suite of its own).

``.ci/run`` installs every tool and package the tests use, and sets ``CI``: there a
skip means that something which should be there is missing. Such a skip fails the
run, and the skipped tests are listed at the end with their reasons. Only the skips
in ``ALLOWED`` are meant, in CI as anywhere (each pattern is searched in a skip's
reason). Under pytest-xdist the controller sees every worker's reports, and decides.
"""

from __future__ import annotations

import os
import re

import pytest

ALLOWED = {
    r"LOOP_BRAKE_DOCS_SLOW=1 runs it": "a docs command that takes minutes or the index",
    r"\.md:\d+: ": "a docs command marked `# not run: REASON` (another program's)",
    r"only in CI": "a check that runs only in CI",
    r"needs the workplace's real samples": "shared/samples-real: data, not a tool",
}
# Frameworks whose pins exclude the test extra: .ci/run runs their tests in a venv of
# their own, and names it (LOOP_BRAKE_CI_VENV) so that there they must not skip.
for _extra in ("strands", "crewai"):
    if os.environ.get("LOOP_BRAKE_CI_VENV") != _extra:
        ALLOWED[rf"needs the {_extra} extra|{_extra} is not installed"] = (
            f"{_extra} runs in a venv of its own (.ci/run)"
        )

_unmeant: list[tuple[str, str]] = []


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _note(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not (os.environ.get("CI") and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = _reason(report)
    if not any(re.search(pattern, reason) for pattern in ALLOWED):
        _unmeant.append((report.nodeid, reason))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note(report)  # a whole module skipped (importorskip, a module-level skip)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unmeant and not hasattr(session.config, "workerinput") and exitstatus in (0, 5):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _unmeant:
        return
    write = terminalreporter.write_line
    terminalreporter.section("skipped in CI (CI is set): a tool or package is missing", red=True)
    for nodeid, reason in _unmeant:
        write(f"{nodeid}: {reason}", red=True)
    write(f"{len(_unmeant)} skip(s) fail this CI run: install what they name (.ci/run)")
