"""``replay --html`` in a real browser: Debian's chromium, headless, loading the page from a
file with JavaScript on; the tests read the DOM the page's script drew.

Without chromium (or the playwright package) these tests skip with how to
install it, except in CI (``CI`` set, as .ci/run does), where they fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, missing, required, visit
from conftest import ROOT, run_cli

CANARY = "CANARY-html-browser-5d1c0a7e"
HOSTILE_SESSION = "</script><script>window.__pwned=1</script>"
HOSTILE_TOOL = '<img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = missing()
    if why is not None:
        if required():
            pytest.fail(why)
        pytest.skip(why)
    with chromium() as context:
        yield context


def html_report(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    result = run_cli("replay", *args, "--html", str(out))
    assert result.returncode in (0, 1), result.stderr
    return out


def only_itself(requests: list[str], page: Path) -> bool:
    return requests == [page.resolve().as_uri()]


def test_real_openhands_loop(browser: Any, shared_samples: Path, tmp_path: Path) -> None:
    """Acceptance: the 30-call OpenHands loop, a canary written into its arguments."""
    (real,) = (shared_samples / "trajectories" / "openhands").glob("*16667*STUCK-LOOP.json")
    text = real.read_text(encoding="utf-8")
    assert text.count("test_selectdatewidget.py.new") >= 30  # in the looping call's arguments
    copy = tmp_path / "django__django-16667.json"
    copy.write_text(text.replace("test_selectdatewidget.py.new", CANARY), encoding="utf-8")
    page = html_report(tmp_path, str(copy))
    assert CANARY.encode() not in page.read_bytes()

    seen = visit(browser, page)
    seen.page.wait_for_selector(".lb-session[data-drawn='1']")
    assert seen.count("#lb-rows tr") == 1 and seen.count(".lb-session") == 1
    assert seen.count("rect.lb-mark") == 50
    assert seen.data("rect.lb-band", "len") == ["30"]
    assert seen.data("g.lb-denial", "call") == ["23"]  # call 23 of the file
    assert seen.data("rect.lb-waste", "calls") == ["27"]
    assert seen.count("rect.lb-mark.lb-d") == 28
    notes = seen.page.inner_text(".lb-notes")
    assert "first denial at call 23 of the file" in notes and "3rd identical call" in notes
    assert "27 tries after it wasted" in notes

    # Hover the first denied mark: its tool, hash prefix, count and location.
    box = seen.page.eval_on_selector_all(
        "rect.lb-mark",
        "nodes => { const r = nodes[22].getBoundingClientRect(); "
        "return [r.x + r.width / 2, r.y + r.height / 2]; }",
    )
    seen.page.mouse.move(*box)
    tip = seen.page.inner_text("#lb-tip")
    assert "str_replace_editor" in tip and "count 3" in tip and "first denial" in tip
    assert "django__django-16667.json:$.fncall_messages[46].tool_calls[0]" in tip
    assert CANARY not in seen.page.content()

    seen.page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert seen.errors == [] and only_itself(seen.requests, page)


def test_hostile_names_are_text(browser: Any, tmp_path: Path) -> None:
    source = tmp_path / "hostile.jsonl"
    rows = [{"tool": HOSTILE_TOOL, "args": {"n": 1}, "sessionId": HOSTILE_SESSION}] * 4
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = html_report(tmp_path, str(source))
    seen = visit(browser, page)
    seen.page.wait_for_selector(".lb-session[data-drawn='1']")
    assert seen.page.evaluate("window.__pwned") is None
    assert seen.page.inner_text("#lb-rows td:nth-child(2)") == HOSTILE_SESSION
    assert HOSTILE_TOOL in seen.page.inner_text("#lb-legend")
    assert seen.count("img") == 0 and seen.count("script") == 2
    assert seen.data("g.lb-denial", "call") == ["3"]
    assert seen.errors == [] and only_itself(seen.requests, page)


def test_table_sorts_pages_and_draws_lazily(browser: Any, tmp_path: Path) -> None:
    """120 sessions: 50 rows a page; a header click sorts all of them; cards draw in view."""
    rows = []
    for n in range(120):
        for _ in range(1 + n % 7):  # session n: 1 + n % 7 identical calls
            rows.append({"tool": f"tool{n % 5}", "args": {"n": n}, "sessionId": f"s{n:03d}"})
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = html_report(tmp_path, str(source))
    seen = visit(browser, page)
    p = seen.page
    assert seen.count("#lb-rows tr") == 50 and seen.count(".lb-session") == 50
    assert "of 120 sessions" in p.inner_text("#lb-page")
    p.evaluate("document.getElementById('lb-timelines').scrollIntoView()")
    p.wait_for_selector("#lb-timelines .lb-session:first-child[data-drawn='1']")
    assert seen.count(".lb-session[data-drawn='1']") < 50  # only those near the view

    def first_session() -> str:
        return p.inner_text("#lb-rows tr:first-child td:nth-child(2)")

    p.click("#lb-head th:nth-child(2) button")  # Session, ascending
    assert first_session() == "s000"
    p.click("#lb-head th:nth-child(2) button")  # again: descending
    assert first_session() == "s119"
    p.click("#lb-head th:nth-child(3) button")  # Calls, most first
    assert p.inner_text("#lb-rows tr:first-child td:nth-child(3)") == "7"
    assert p.get_attribute("#lb-head th:nth-child(3)", "aria-sort") == "descending"
    p.click("#lb-next")
    p.click("#lb-next")
    assert seen.count("#lb-rows tr") == 20 and p.is_disabled("#lb-next")
    p.fill("#lb-query", "s11")
    assert seen.count("#lb-rows tr") == 10  # s110..s119
    p.fill("#lb-query", "")
    p.check("#lb-denied-only")
    denied = sum(1 for n in range(120) if 1 + n % 7 >= 3)
    assert f"of {denied} sessions" in p.inner_text("#lb-page")
    p.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    p.wait_for_selector("#lb-timelines .lb-session:last-child[data-drawn='1']")
    assert seen.errors == [] and only_itself(seen.requests, page)


def test_a_long_session_draws_every_call(browser: Any, tmp_path: Path) -> None:
    rows = [
        {"tool": ("read", "edit", "run")[n % 3], "args": {"n": n // 40}, "sessionId": "long"}
        for n in range(3000)
    ]
    source = tmp_path / "long.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = html_report(tmp_path, str(source))
    seen = visit(browser, page)
    seen.page.wait_for_selector(".lb-session[data-drawn='1']")
    assert seen.count("rect.lb-mark") == 3000
    assert seen.errors == [] and only_itself(seen.requests, page)


def test_bundled_sample_report(browser: Any, tmp_path: Path) -> None:
    """The docs' example: samples/ as one report (every bundled format)."""
    page = html_report(tmp_path, str(ROOT / "samples"))
    seen = visit(browser, page)
    data = seen.page.evaluate("JSON.parse(document.getElementById('lb-data').textContent)")
    assert seen.count("#lb-rows tr") == min(50, len(data["sessions"]))
    cards = seen.page.query_selector_all(".lb-session")
    for card in cards:  # draw each, as scrolling would
        card.scroll_into_view_if_needed()
    seen.page.wait_for_function(
        f"document.querySelectorAll('.lb-session[data-drawn=\"1\"]').length === {len(cards)}"
    )
    assert seen.count("rect.lb-mark") == data["totals"]["calls"]
    assert seen.count("g.lb-denial") >= 1
    assert seen.errors == [] and only_itself(seen.requests, page)
