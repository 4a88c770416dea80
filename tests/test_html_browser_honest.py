"""Issue 27, item 5, in the headless browser: the page never shows a cleaner run than the
one that happened (unreadable input and skipped files are on it, a duplicated call id is
one call everywhere, cache reads are apart from fresh tokens), stays whole at 700 px,
and gives no two of its 24 tool colours alike.

Without chromium (or the playwright package) these skip with how to install it,
except in CI, where they fail (tests/browser.py).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, missing, required, visit
from conftest import ROOT, run_cli
from test_report_never_misleads import CANARY, duplicated

from loop_brake_cli.analysis.prices import load_prices

PRICES = str(ROOT / "samples" / "prices.example.toml")
WASTE = str(ROOT / "tests" / "fixtures" / "waste" / "claude-code-loop.jsonl")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = missing()
    if why is not None:
        if required():
            pytest.fail(why)
        pytest.skip(why)
    with chromium() as context:
        yield context


def report(tmp_path: Path, *args: str, status: int = 0) -> Path:
    out = tmp_path / "report.html"
    result = run_cli("replay", *args, "--html", str(out))
    assert result.returncode == status, result.stderr
    assert CANARY.encode() not in out.read_bytes()
    return out


def cards(seen: Any) -> dict[str, str]:
    """Each totals card's label and value."""
    pairs = seen.page.eval_on_selector_all(
        ".lb-card",
        "cs => cs.map(c => [c.querySelector('.lb-card-label').innerText, "
        "c.querySelector('.lb-card-value').innerText])",
    )
    return dict(pairs)


def test_unreadable_records_and_skipped_files_are_on_the_page(browser: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "good.jsonl").write_text('{"tool": "a", "args": {}}\n' * 4, encoding="utf-8")
    bad = '{"tool": "a", "args": {}}\n{"tool": \n{"args": "' + CANARY + '"\n'
    (runs / "bad.jsonl").write_text(bad, encoding="utf-8")
    for name in ("x.json", "y.json", "z.json", "w.json"):
        (runs / name).write_text('{"a": 1}\n', encoding="utf-8")
    page = report(tmp_path, str(runs), status=3)
    seen = visit(browser, page)
    box = seen.page.locator("#lb-problems")
    assert box.is_visible()
    text = box.inner_text()
    assert "2 unreadable records or files: the totals above leave them out" in text
    assert "bad.jsonl:2: " in text and "bad.jsonl:3: " in text
    assert "4 files found in the directories skipped: not transcripts" in text
    seen.page.click("#lb-problems summary")
    listed = box.inner_text()
    assert all(f"{name}: not a transcript" in listed for name in ("x.json", "w.json"))
    shown = cards(seen)
    assert shown["unreadable (left out of these totals)"] == "2"
    assert shown["files skipped: not transcripts"] == "4"
    assert CANARY not in seen.page.content()
    assert seen.errors == []


def test_a_clean_run_shows_no_problems(browser: Any, tmp_path: Path) -> None:
    seen = visit(browser, report(tmp_path, str(ROOT / "samples" / "stuck-agent.jsonl")))
    assert not seen.page.locator("#lb-problems").is_visible()
    assert "unreadable (left out of these totals)" not in cards(seen)


def test_warned_calls_are_said_only_under_warn_at(browser: Any, tmp_path: Path) -> None:
    stuck = str(ROOT / "samples" / "stuck-agent.jsonl")
    policy = tmp_path / "warn.toml"
    policy.write_text("warn_at = 2\n")
    seen = visit(browser, report(tmp_path, stuck, "--policy", str(policy), "-m", "4"))
    assert "\u00b7 2 calls ran with a warning (warn_at)" in seen.page.inner_text("#lb-meta")
    plain = visit(browser, report(tmp_path, stuck))
    assert "warning" not in plain.page.inner_text("#lb-meta")


def test_a_duplicated_call_id_counts_once_on_the_page(browser: Any, tmp_path: Path) -> None:
    page = report(tmp_path, str(duplicated(tmp_path / "dup.jsonl")))
    seen = visit(browser, page)
    seen.page.wait_for_selector(".lb-session[data-drawn='1']")
    assert cards(seen)["tool calls"] == "10"
    assert seen.page.inner_text("#lb-rows tr:first-child td:nth-child(3)") == "10"
    assert seen.count("rect.lb-mark") == 10
    assert seen.data("rect.lb-band", "len") == ["4"]
    assert seen.page.text_content(".lb-band-label") == "\u00d74"
    facts = seen.page.inner_text(".lb-session-facts")
    assert facts.startswith("10 calls") and "longest streak \u00d74" in facts
    assert "1 logged twice under one call id (counted once)" in facts
    assert "1 call logged twice under one call id, counted once" in seen.page.inner_text("#lb-meta")


def test_cache_reads_are_apart_from_fresh_tokens_and_priced_apart(
    browser: Any, tmp_path: Path
) -> None:
    doc = json.loads(run_cli("replay", WASTE, "--json", "--prices", PRICES).stdout)
    tokens = doc["waste"]["tokens"]
    seen = visit(browser, report(tmp_path, WASTE, "--prices", PRICES))
    shown = cards(seen)
    fresh = tokens["input"] + tokens["output"] + tokens["cacheWrite"]
    assert shown["wasted tokens (input, output, cache writes)"] == f"{fresh:,}"
    assert shown["wasted cache reads (re-read context, priced apart)"] == f"{tokens['cacheRead']:,}"
    (label,) = [name for name in shown if name.startswith("wasted cost")]
    parts = re.fullmatch(
        r"wasted cost: ([0-9.]+) USD fresh tokens, ([0-9.]+) USD cache reads", label
    )
    assert parts is not None, label
    total = float(shown[label].split()[0])
    assert total == pytest.approx(doc["waste"]["cost"]["amount"], abs=1e-4)
    # Each model's cache reads at its own cache_read price, apart from its input price.
    prices = load_prices(PRICES)
    cache_part = sum(
        (model["tokens"]["cacheRead"] or 0)
        * prices.for_model(model["model"]).of("cache_read")  # type: ignore[union-attr]
        / 1e6
        for model in doc["waste"]["byModel"]
    )
    assert cache_part > 0
    assert float(parts.group(2)) == pytest.approx(cache_part, abs=1e-4)
    assert float(parts.group(1)) + float(parts.group(2)) == pytest.approx(total, abs=2e-4)
    unpriced = visit(browser, report(tmp_path, WASTE))
    assert cards(unpriced)["wasted cost"] == "no prices given"


def test_nothing_is_clipped_at_700_px(browser: Any, tmp_path: Path) -> None:
    seen = visit(browser, report(tmp_path, str(ROOT / "samples"), "--prices", PRICES))
    seen.page.set_viewport_size({"width": 700, "height": 800})
    seen.page.reload()
    seen.page.wait_for_selector("body[data-ready='1']")
    clipped = seen.page.eval_on_selector_all(
        "#lb-head th, .lb-card-value, .lb-card-label",
        "ns => ns.filter(n => n.scrollWidth > n.clientWidth + 1 || "
        "n.scrollHeight > n.clientHeight + 1).map(n => n.innerText)",
    )
    assert clipped == []
    buttons = seen.page.eval_on_selector_all(
        "#lb-head th button",
        "ns => ns.filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.innerText)",
    )
    assert buttons == []
    assert seen.page.evaluate("document.documentElement.scrollWidth") <= 700


def test_the_subtitle_counts_its_files(browser: Any, tmp_path: Path) -> None:
    one = visit(browser, report(tmp_path, str(ROOT / "samples" / "stuck-agent.jsonl")))
    assert "\u00b7 file in " in one.page.inner_text("#lb-meta")
    many = visit(browser, report(tmp_path, str(ROOT / "samples" / "ci" / "stuck")))
    assert "\u00b7 files in " in many.page.inner_text("#lb-meta")


def _lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """sRGB to CIELAB (D65)."""
    linear = [
        ((c / 255 + 0.055) / 1.055) ** 2.4 if c / 255 > 0.04045 else c / 255 / 12.92 for c in rgb
    ]
    r, g, b = linear
    x = (r * 0.4124 + g * 0.3576 + b * 0.1805) / 0.95047
    y = r * 0.2126 + g * 0.7152 + b * 0.0722
    z = (r * 0.0193 + g * 0.1192 + b * 0.9505) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_tool_colours_never_repeat(browser: Any, tmp_path: Path) -> None:
    """30 tools, used 30, 29, ... 1 times: the 24 most used get 24 colours no two alike
    (CIE76 distance 20 or more); the other 6 share one grey, and the legend says so."""
    rows = [
        {"tool": f"tool{n:02d}", "args": {"k": k}, "sessionId": "s"}
        for n in range(30)
        for k in range(30 - n)
    ]
    source = tmp_path / "tools.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    seen = visit(browser, report(tmp_path, str(source)))
    swatches = seen.page.eval_on_selector_all(
        "#lb-legend .lb-key",
        "ks => ks.map(k => [k.querySelector('.lb-key-name').innerText, "
        "getComputedStyle(k.querySelector('.lb-swatch')).backgroundColor])",
    )
    named = [(name, colour) for name, colour in swatches if name.startswith("tool")]
    assert [name for name, _ in named] == [f"tool{n:02d}" for n in range(24)]
    labs = [_lab(tuple(int(v) for v in re.findall(r"\d+", colour)[:3])) for _, colour in named]
    closest = min(
        sum((p - q) ** 2 for p, q in zip(a, b, strict=True)) ** 0.5
        for a, b in itertools.combinations(labs, 2)
    )
    assert closest >= 20
    assert swatches[-1][0] == "+6 more tools, all in grey"
