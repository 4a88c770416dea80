"""``replay``'s options as one object, and the options that exclude each other, declared once.

``ReplayOptions`` is what the command line gave (one field per option, named as
click names it); ``EXCLUSIONS`` every pair of options that cannot be given
together, checked in order before any value is read. A new option is one field
here, one entry in ``ReplayOptions.given`` if it excludes another, and its
exclusions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._command import Exclusion


class ReplayOptions(NamedTuple):
    """``replay``'s options, as parsed (one field per option, named as click names it)."""

    paths: tuple[str, ...]
    max_repeats: int | None
    config_paths: tuple[str, ...]
    format_name: str | None
    continue_sessions: bool
    as_json: bool
    verdicts: bool
    sweep_text: str | None
    html_path: str | None
    max_rows: int | None
    fail_on_deny: bool
    expect_deny: bool
    strict: bool
    jobs: int
    max_line_bytes: int
    policy_path: str | None
    compare_path: str | None
    prices_path: str | None
    partial_path: str | None
    outcomes_path: str | None
    tolerance_text: str | None
    stop_after: int | None
    suggest_policy: bool
    rows_given: bool = False  # --rows given on the command line (not its default)

    def given(self) -> dict[str, bool]:
        """Which options of ``EXCLUSIONS`` the command line gave."""
        return {
            "--json": self.as_json,
            "--verdicts": self.verdicts,
            "--fail-on-deny": self.fail_on_deny,
            "--expect-deny": self.expect_deny,
            "--sweep": self.sweep_text is not None,
            "-j": self.jobs > 1,
            "--continue-sessions": self.continue_sessions,
            "--compare-policy": self.compare_path is not None,
            "--policy": self.policy_path is not None,
            "--html": self.html_path is not None,
            "--html -": self.html_path == "-",
            "--partial": self.partial_path is not None,
            "--prices": self.prices_path is not None,
            "--rows": self.rows_given,
            "--suggest-policy": self.suggest_policy,
        }


EXCLUSIONS = (
    Exclusion("--json", ("--verdicts",), "--json and --verdicts are different outputs: choose one"),
    Exclusion(
        "--fail-on-deny",
        ("--expect-deny",),
        "--fail-on-deny and --expect-deny ask for opposite outcomes: choose one "
        "(run replay twice for two sets of transcripts)",
    ),
    Exclusion(
        "--verdicts", ("--sweep",), "--sweep is part of the summary (and --json), not of --verdicts"
    ),
    Exclusion(
        "-j",
        ("--continue-sessions",),
        "-j cannot be combined with --continue-sessions (streaks would cross workers)",
    ),
    Exclusion(
        "--suggest-policy",
        (
            "--json",
            "--verdicts",
            "--sweep",
            "--compare-policy",
            "--html",
            "--partial",
            "--prices",
        ),
        "--suggest-policy is its own output (a policy file): not with {other}",
    ),
    Exclusion(
        "--compare-policy",
        ("--verdicts", "--sweep"),
        "--compare-policy is its own output: not with --verdicts or --sweep",
    ),
    Exclusion(
        "--html",
        ("--verdicts", "--compare-policy"),
        "--html draws the summary's report, not {other}",
    ),
    Exclusion(
        "--partial",
        ("--verdicts", "--compare-policy"),
        "--partial writes the summary's report, not {other}",
    ),
    Exclusion(
        "--html -",
        ("--json",),
        "--html - and --json would both write to stdout: give --html a file",
    ),
    Exclusion(
        "--compare-policy",
        ("--policy",),
        "--compare-policy FILE already names the policy: drop --policy",
    ),
    Exclusion(
        "--prices",
        ("--verdicts", "--compare-policy"),
        "--prices is part of the summary (and --json), not of {other}",
    ),
    Exclusion(
        "--rows",
        ("--json", "--verdicts", "--compare-policy", "--html -"),
        "--rows bounds the text summary's tables, not {other}",
        {
            "--json": "--json (it lists every session)",
            "--html -": "--html - (the page lists every session)",
        },
    ),
)
"""Every pair of ``replay`` options that cannot be given together, checked in this order
before any value is read: the first that applies is the usage error (exit 2)."""


class Found(NamedTuple):
    """The files PATHS name: each file to read, those found in a directory, and whether
    any PATH could not be read (said on stderr, and exit 3 at the end)."""

    files: list[str]
    in_directory: set[str]
    missing: bool


class Settings(NamedTuple):
    """maxRepeats, where it came from, and the policy (or None)."""

    value: int
    source: str
    policy: Any
