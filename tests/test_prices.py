"""prices.py and ``replay --prices``: dollars only from the user's prices, every mistake located.

A model no entry matches, or whose entry leaves out a kind of token its turns
recorded, gets no dollar figure and is named as unpriced; nothing is guessed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from loop_brake_cli.analysis.prices import PricesError, load_prices, parse_prices
from loop_brake_cli.analysis.waste import Cost, dollars
from loop_brake_cli.core.records import Usage

EXAMPLE = ROOT / "samples" / "prices.example.toml"
NO_USAGE = ROOT / "samples" / "stuck-agent.jsonl"


def problems(text: str) -> list[str]:
    with pytest.raises(PricesError) as caught:
        parse_prices(text, "p.toml")
    return caught.value.problems


def test_the_shipped_example_loads_and_states_its_date_and_source() -> None:
    prices = load_prices(str(EXAMPLE))
    assert prices.currency == "USD" and len(prices.entries) >= 5
    text = EXAMPLE.read_text()
    assert "Source and date" in text and "2026-12-01" in text and "CHANGE" in text
    # the first match wins: the mini model is not priced as gpt-4o
    assert prices.for_model("gpt-4o-mini-2024-07-18").of("input") == 0.15
    assert prices.for_model("gpt-4o-2024-08-06").of("input") == 2.50
    assert prices.for_model("some-unknown-model") is None
    assert prices.for_model(None) is None  # no "*" entry: an unnamed model is not priced


def test_every_mistake_is_located_by_line() -> None:
    text = """currency = "USD"
colour = 1

[[models]]
match = "a*"
input = -1
outptu = 2

[[models]]
input = "3"
reasoning = 1
"""
    assert problems(text) == [
        'p.toml:2: unknown key "colour" (known: currency, models)',
        "p.toml:6: [[models]] entry 1: input must be a price per million tokens, "
        "a number from 0 to 1,000,000, not -1",
        'p.toml:7: unknown key "outptu" in [[models]] entry 1 (did you mean output?)',
        "p.toml:9: [[models]] entry 2: match must be a model-name glob or a list of globs",
        "p.toml:10: [[models]] entry 2: input must be a price per million tokens, "
        "a number from 0 to 1,000,000, not a string",
        "p.toml:11: [[models]] entry 2: reasoning tokens are part of the output and "
        "billed at its price: drop reasoning",
    ]


def test_not_toml_and_no_models_are_located_too() -> None:
    assert problems('[[models]]\nmatch = "a\n') == [
        "p.toml:2:11: not valid TOML: Illegal character '\\n'"
    ]
    assert problems('currency = "EUR"\n') == [
        "p.toml: no prices: add [[models]] entries (match = a glob, input = ...)"
    ]
    assert problems('[[models]]\nmatch = ""\ninput = 1\n') == [
        "p.toml:2: [[models]] entry 1: match holds an empty glob"
    ]


def cost(*turns: tuple[str | None, dict[str, int]]) -> Cost:
    out = Cost()
    for model, kinds in turns:
        out.add_usage(Usage("s", None, model, **kinds))
    return out


def test_dollars_come_only_from_a_matching_price_for_every_recorded_kind() -> None:
    prices = parse_prices(
        """
[[models]]
match = "big-*"
input = 3
output = 15
cache_read = 0.3

[[models]]
match = "small"
input = 1
output = 5
""",
        "p.toml",
    )
    spent = cost(
        ("big-1", {"input_tokens": 1_000_000, "output_tokens": 100_000, "cache_read_tokens": 0}),
        ("big-2", {"input_tokens": 10, "cache_write_tokens": 5}),  # no cache_write price
        ("small", {"input_tokens": 2_000_000, "cache_write_tokens": 0}),  # 0 needs no price
        ("other", {"input_tokens": 1}),
        (None, {"input_tokens": 1}),
    )
    priced = dollars(spent, prices)
    assert priced.amount == pytest.approx(3 + 1.5 + 2)
    assert priced.priced_turns == 2 and priced.unpriced_turns == 3
    assert [(u.model, u.reason) for u in priced.unpriced] == [
        ("big-2", "the matching price (line 2) has none for cache_write tokens"),
        ("other", "no price matches this model"),
        (None, "model not recorded"),
    ]
    star = parse_prices('[[models]]\nmatch = "*"\ninput = 1\n', "p.toml")
    assert dollars(cost((None, {"input_tokens": 10**6})), star).amount == 1.0


def test_a_bad_prices_file_exits_2_before_reading_any_input(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text('[[models]]\nmatch = "x"\ninput = "cheap"\n')
    done = run_cli("replay", str(NO_USAGE), "--prices", str(bad))
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == (
        f"loop-brake replay: {bad}:3: [[models]] entry 1: input must be a price per million "
        "tokens, a number from 0 to 1,000,000, not a string\n"
    )
    done = run_cli("replay", str(NO_USAGE), "--prices", str(bad), "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["status"] == 2
    missing = run_cli("replay", str(NO_USAGE), "--prices", str(tmp_path / "none.toml"))
    assert missing.returncode == 3 and b"none.toml: cannot open" in missing.stderr
    both = run_cli("replay", str(NO_USAGE), "--prices", str(EXAMPLE), "--verdicts")
    assert both.returncode == 2 and b"--prices is part of the summary" in both.stderr


def test_with_no_turn_priced_there_is_no_amount_never_0() -> None:
    from loop_brake_cli.analysis.waste import Waste
    from loop_brake_cli.render.waste import waste_line

    prices = load_prices(str(EXAMPLE))
    spent = cost((None, {"input_tokens": 41_695, "output_tokens": 4_096}))
    assert dollars(spent, prices).to_json()["amount"] is None
    waste = Waste(calls=27, unknown_calls=26, cost=spent)
    assert waste_line(waste, spent, 0, prices) == (
        "Waste: 27 calls after a denial; 1 model turn spent only on them: 41,695 input, "
        f"4,096 output tokens, not priced at the prices in {EXAMPLE} (model not recorded); "
        "26 calls of unknown cost (no usage before them)"
    )
