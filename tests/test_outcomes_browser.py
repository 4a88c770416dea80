"""``replay --html --sweep --outcomes`` in a real browser (Debian's chromium, headless): the
outcome section's table and its plot of cost against savings, drawn from the labelled
sample corpus (``samples/outcomes/``, whose figures tests/test_outcomes.py works out by
hand); hostile names stay text; a page without outcomes has no section and one script.

Without chromium (or playwright) these tests skip with how to install it, except in CI.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, missing, required, visit
from conftest import ROOT, run_cli

SAMPLE = ROOT / "samples" / "outcomes"
HOSTILE = '</script><img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = missing()
    if why is not None:
        if required():
            pytest.fail(why)
        pytest.skip(why)
    with chromium() as context:
        yield context


def page_of(tmp_path: Path, runs: Path, outcomes: Path, *extra: str) -> Path:
    out = tmp_path / "report.html"
    result = run_cli(
        "replay", str(runs), "--sweep", "2..5", "--outcomes", str(outcomes),
        "--html", str(out), *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_table_plot_and_recommendation(browser: Any, tmp_path: Path) -> None:
    page = page_of(
        tmp_path, SAMPLE / "runs", SAMPLE / "results.csv", "--prices", str(SAMPLE / "prices.toml")
    )
    seen = visit(browser, page)
    seen.page.wait_for_selector("#lb-o-plot svg")
    cells = seen.page.eval_on_selector_all(
        "#lb-o-rows tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert cells == [
        ["2", "2", "1", "2", "5", "3", "2,121", "0.0023 USD"],
        ["3", "1", "0", "2", "3", "2", "1,515", "0.0017 USD"],
        ["4", "0", "0", "1", "2", "1", "808", "0.0009 USD"],
        ["5", "0", "0", "0", "0", "0", "0", "\u2014"],  # no turn saved: no dollar figure
    ]
    assert seen.data("#lb-o-rows tr.lb-o-best-row", "m") == ["3"]
    assert seen.data("circle.lb-o-point", "cost") == ["1", "0", "0", "0"]
    assert seen.data("circle.lb-o-point", "saved") == ["5", "3", "2", "0"]
    assert seen.data("circle.lb-o-point.lb-o-rec", "m") == ["3"]
    assert seen.count("circle.lb-o-ring") == 1
    # More calls saved is higher on the plot; more resolved runs stopped, further right.
    spots = seen.page.eval_on_selector_all(
        "circle.lb-o-point", "cs => cs.map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])"
    )
    assert spots[0][0] > spots[1][0] == spots[2][0] and spots[1][1] < spots[2][1] < spots[3][1]
    best = seen.page.inner_text("#lb-o-best")
    assert best.startswith("Recommended: maxRepeats 3, the smallest that stops no resolved run")
    meta = seen.page.inner_text("#lb-o-meta")
    assert meta.startswith("2 resolved runs and 3 failed runs matched in ")
    notes = seen.page.inner_text("#lb-o-notes")
    assert "1 run with no outcome, left out: " in notes and "demo__app-6.jsonl" in notes
    assert seen.errors == [] and seen.requests == [page.resolve().as_uri()]
    seen.page.screenshot(path=str(tmp_path / "outcomes.png"), full_page=True)


def test_hostile_names_are_text(browser: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE / "runs", runs)
    odd = runs / "demo__app-6" / "demo__app-6.jsonl"
    odd.rename(runs / "demo__app-6" / "x.jsonl")
    outcomes = tmp_path / "o.csv"
    outcomes.write_text((SAMPLE / "results.csv").read_text())
    hostile = tmp_path / f"{HOSTILE.replace('/', '_')}.csv"
    shutil.copy(outcomes, hostile)
    page = page_of(tmp_path, runs, hostile)
    seen = visit(browser, page)
    seen.page.wait_for_selector("#lb-o-plot svg")
    assert seen.page.evaluate("window.__pwned") is None
    assert seen.count("img") == 0
    assert HOSTILE.replace("/", "_") in seen.page.inner_text("#lb-o-meta")
    assert seen.errors == []


def test_a_page_without_outcomes_has_no_section(tmp_path: Path) -> None:
    plain = tmp_path / "plain.html"
    with_outcomes = page_of(tmp_path, SAMPLE / "runs", SAMPLE / "results.csv")
    result = run_cli("replay", str(SAMPLE / "runs"), "--sweep", "2..5", "--html", str(plain))
    assert result.returncode == 0
    text = plain.read_text()
    assert "lb-o-" not in text and text.count("<script>") == 1
    (policy,) = re.findall(r'Content-Security-Policy" content="([^"]*)"', text)
    assert policy.count("'sha256-") == 1
    rich = with_outcomes.read_text()
    (policy,) = re.findall(r'Content-Security-Policy" content="([^"]*)"', rich)
    assert policy.count("'sha256-") == 2 and rich.count("<script>") == 2
    data = json.loads(
        re.search(r'id="lb-data">(.*?)</script>', rich, re.S).group(1)  # type: ignore[union-attr]
    )
    assert data["outcomes"]["recommended"] == 3
