"""``replay``'s waste figures, end to end, checked against a count made by hand.

The hand count is independent code: it reads the raw transcript with ``json``,
finds each session's consecutive identical calls (same tool, same arguments) by
its own rule, and adds up the usage of the turns all of whose calls come after
a streak's first denial (the rule of docs/replay.md). The real transcripts of
shared/samples-real are used where present (skipped with one message naming
LOOP_BRAKE_SHARED otherwise); the fixtures in tests/fixtures/waste always run.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ROOT, SHARED_SKIP, run_cli, shared_dir

from loop_brake_cli.cli import cli

FIXTURES = ROOT / "tests" / "fixtures" / "waste"
LOOP = FIXTURES / "claude-code-loop.jsonl"
NO_USAGE = ROOT / "samples" / "stuck-agent.jsonl"
EXAMPLE_PRICES = ROOT / "samples" / "prices.example.toml"
SECRET = "SECRET-waste-canary-7f3a"
KINDS = ("input", "output", "cacheRead", "cacheWrite", "reasoning")


def replay_json(*args: str) -> dict[str, Any]:
    """``replay --json ARGS`` in this process (the subprocess tests are below)."""
    result = CliRunner().invoke(
        cli,
        ["replay", "--json", *args],
        env={"DSH_LOOP_BRAKE_MAX_REPEATS": None},
        standalone_mode=False,
    )
    if result.exception is not None:
        raise result.exception
    assert result.return_value == 0, result.stderr
    return json.loads(result.stdout)


# --- the hand count ------------------------------------------------------------------


def claude_code_by_hand(path: Path, limit: int) -> dict[str, dict[str, Any]]:
    """Per session: wasted calls, wholly wasted turns and their tokens, all turns' tokens."""
    turns: dict[str, list[str]] = defaultdict(list)  # session -> message ids in order
    usage: dict[str, dict[str, int]] = {}  # message id -> largest figures seen
    calls: dict[str, list[tuple[str, str, str]]] = defaultdict(list)  # (turn, tool, args)
    seen_ids: set[str] = set()
    names = {
        "input_tokens": "input",
        "output_tokens": "output",
        "cache_read_input_tokens": "cacheRead",
        "cache_creation_input_tokens": "cacheWrite",
    }
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        if line.get("type") != "assistant":
            continue
        session = line["sessionId"]
        if line.get("isSidechain"):
            session += "/" + line.get("agentId", "sidechain")
        message = line["message"]
        mid = message["id"]
        if mid not in usage:
            usage[mid] = {}
            turns[session].append(mid)
        for raw, name in names.items():
            value = message.get("usage", {}).get(raw)
            if isinstance(value, int):
                usage[mid][name] = max(usage[mid].get(name, 0), value)
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use" and block["id"] not in seen_ids:
                seen_ids.add(block["id"])
                args = json.dumps(block["input"], sort_keys=True)
                calls[session].append((mid, block["name"], args))
    out = {}
    for session, mids in turns.items():
        wasted_by_turn: dict[str, list[bool]] = defaultdict(list)
        run, previous = 0, None
        for mid, tool, args in calls[session]:
            run = run + 1 if (tool, args) == previous else 1
            previous = (tool, args)
            wasted_by_turn[mid].append(run > limit)
        wasted_turns = [m for m in mids if wasted_by_turn[m] and all(wasted_by_turn[m])]
        out[session] = {
            "calls": sum(sum(flags) for flags in wasted_by_turn.values()),
            "turns": len(wasted_turns),
            "partialTurns": sum(
                1 for m in mids if any(wasted_by_turn[m]) and m not in wasted_turns
            ),
            "tokens": total_tokens(usage[m] for m in wasted_turns),
            "spent": total_tokens(usage[m] for m in mids),
            "spentTurns": len(mids),
        }
    return out


def codex_by_hand(path: Path, limit: int) -> dict[str, Any]:
    """One Codex rollout: each ``token_count`` event with a new total closes a turn of the
    calls since the previous one (the response that made them); its ``last_token_usage``
    holds the figures, input counting the cached part, which is cache read here."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        lines = [json.loads(text) for text in handle]
    session = None
    turns: list[tuple[list[bool], dict[str, int]]] = []
    group: list[tuple[str, str]] = []
    calls: list[tuple[str, str]] = []
    waste_flags: list[bool] = []
    unknown = 0
    counting, total, seen_ids = False, None, set()
    for line in lines:
        payload = line.get("payload") or {}
        if line["type"] == "session_meta":
            session = payload["id"]
        elif line["type"] == "response_item" and payload.get("type") in (
            "function_call",
            "custom_tool_call",
        ):
            if payload["call_id"] in seen_ids:
                continue
            seen_ids.add(payload["call_id"])
            raw = payload.get("arguments", payload.get("input"))
            try:
                args = json.dumps(json.loads(raw), sort_keys=True)
            except ValueError:
                args = raw
            calls.append((payload["name"], args))
            run = 1
            while run < len(calls) and calls[-1 - run] == calls[-1]:
                run += 1
            waste_flags.append(run > limit)
            if counting:
                group.append(calls[-1])
            elif run > limit:
                unknown += 1
        elif line["type"] == "event_msg" and payload.get("type") == "token_count":
            counting = True
            info = payload.get("info")
            if not isinstance(info, dict) or info["total_token_usage"] == total:
                continue
            total = info["total_token_usage"]
            last = info["last_token_usage"]
            figures = {
                "input": last["input_tokens"] - last["cached_input_tokens"],
                "output": last["output_tokens"],
                "cacheRead": last["cached_input_tokens"],
                "reasoning": last["reasoning_output_tokens"],
            }
            turns.append((waste_flags[len(waste_flags) - len(group) :], figures))
            group = []
    wasted = [figures for flags, figures in turns if flags and all(flags)]
    return {
        "session": session,
        "calls": sum(waste_flags),
        "turns": len(wasted),
        "partialTurns": sum(1 for flags, _ in turns if any(flags) and not all(flags)),
        "unknownCostCalls": unknown,
        "tokens": total_tokens(wasted),
        "spent": total_tokens(figures for _, figures in turns),
        "spentTurns": len(turns) + (1 if group else 0),  # calls after the last count: a turn
    }


def chat_figures(usage: dict[str, Any]) -> dict[str, int]:
    """A Chat Completions usage as the kinds (the prompt counts no cache here: none recorded)."""
    assert not usage.get("prompt_tokens_details") and "cache_read_input_tokens" not in usage
    return {"input": usage["prompt_tokens"], "output": usage["completion_tokens"]}


def flags_of(calls: list[tuple[str, str]], limit: int) -> list[bool]:
    """Whether each call comes after the first denial of its streak: its run passed ``limit``."""
    flags, run = [], 0
    for index, current in enumerate(calls):
        run = run + 1 if index and calls[index - 1] == current else 1
        flags.append(run > limit)
    return flags


def by_turns(turn_of: list[str | None], flags: list[bool], figures: dict[str, Any]) -> dict:
    """The waste object from each call's turn (None: no usage before it) and its flag."""
    turns: dict[str, list[bool]] = defaultdict(list)
    for turn, flag in zip(turn_of, flags, strict=True):
        if turn is not None:
            turns[turn].append(flag)
    wasted = [t for t, f in turns.items() if all(f)]
    return {
        "calls": sum(flags),
        "turns": len(wasted),
        "partialTurns": sum(1 for f in turns.values() if any(f) and not all(f)),
        "unknownCostCalls": sum(1 for t, f in zip(turn_of, flags, strict=True) if f and t is None),
        "tokens": total_tokens(figures[t] for t in wasted),
        "spent": total_tokens(figures.values()),
    }


def openhands_history_by_hand(path: Path, limit: int) -> dict[str, Any]:
    """An OpenHands evaluation record: each action's ``tool_call_metadata.model_response``
    is the response that made it (one turn per response id, its own ``usage``)."""
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    calls, turn_of, figures = [], [], {}
    for event in record["history"]:
        metadata = event.get("tool_call_metadata")
        if "action" not in event or not metadata:
            continue
        response = metadata["model_response"]
        (call,) = [
            c
            for c in response["choices"][0]["message"]["tool_calls"]
            if c["id"] == metadata["tool_call_id"]
        ]
        args = json.dumps(json.loads(call["function"]["arguments"]), sort_keys=True)
        calls.append((call["function"]["name"], args))
        turn_of.append(response["id"])
        figures[response["id"]] = chat_figures(response["usage"])
    return by_turns(turn_of, flags_of(calls, limit), figures)


def openhands_completion_by_hand(path: Path, limit: int) -> dict[str, Any]:
    """An OpenHands completion log: the calls of ``fncall_messages``, then those of
    ``fncall_response``, whose usage is the only one recorded (the earlier calls have none)."""
    log = json.loads(path.read_text(encoding="utf-8"))
    calls, turn_of = [], []
    messages = [m for m in log["fncall_messages"] if m.get("role") == "assistant"]
    final = log["fncall_response"]["choices"][0]["message"]
    for message in [*messages, final]:
        for call in message.get("tool_calls") or []:
            args = json.dumps(json.loads(call["function"]["arguments"]), sort_keys=True)
            calls.append((call["function"]["name"], args))
            turn_of.append("final" if message is final else None)
    figures = {"final": chat_figures(log["fncall_response"]["usage"])}
    return by_turns(turn_of, flags_of(calls, limit), figures)


def assert_waste_equals(doc: dict[str, Any], hand: dict[str, Any]) -> None:
    (session,) = doc["sessions"]
    waste = session["waste"]
    for key in ("calls", "turns", "partialTurns", "unknownCostCalls", "tokens"):
        assert waste[key] == hand[key], key
    assert session["usage"]["tokens"] == hand["spent"]


def total_tokens(figures: Any) -> dict[str, int | None]:
    total: dict[str, int | None] = dict.fromkeys(KINDS)
    for one in figures:
        for kind, value in one.items():
            total[kind] = (total[kind] or 0) + value
    return total


def assert_equal_to_hand_count(path: Path, limit: int) -> dict[str, Any]:
    doc = replay_json(str(path), "-m", str(limit))
    hand = claude_code_by_hand(path, limit)
    ours = {s["session"]: s for s in doc["sessions"]}
    assert set(ours) <= set(hand)
    for session, stats in ours.items():
        waste, expected = stats["waste"], hand[session]
        assert waste["calls"] == expected["calls"], session
        assert (waste["turns"], waste["partialTurns"]) == (
            expected["turns"],
            expected["partialTurns"],
        )
        assert waste["tokens"] == expected["tokens"], session
        assert waste["unknownCostCalls"] == 0 and waste["usageRecorded"] is True
        assert stats["usage"]["tokens"] == expected["spent"], session
        assert stats["usage"]["turns"] == expected["spentTurns"], session
    return doc


# --- fixtures that always run --------------------------------------------------------


def test_the_fixture_loop_equals_its_hand_count_at_several_limits() -> None:
    for limit in (1, 2, 3, 5):
        assert_equal_to_hand_count(LOOP, limit)


def test_the_fixture_loop_figures() -> None:
    doc = replay_json(str(LOOP))
    (session,) = doc["sessions"]
    waste = session["waste"]
    # Bash x7 (turns B..H), denied at the 3rd: E, F, G wholly wasted; H partly (its Read)
    assert (waste["calls"], waste["turns"], waste["partialTurns"]) == (4, 3, 1)
    assert waste["tokens"] == {
        "input": 15 + 16 + 17,
        "output": 23 + 24 + 25,
        "cacheRead": 6300 + 6400 + 6500,
        "cacheWrite": 300,
        "reasoning": None,  # Claude Code records no separate count: never 0
    }
    assert [(m["model"], m["turns"]) for m in waste["byModel"]] == [
        ("claude-sonnet-4-5-20250929", 2),
        ("claude-haiku-4-5-20251001", 1),
    ]
    assert waste["cost"] is None and doc["prices"] is None
    assert doc["waste"]["calls"] == 4 and doc["waste"]["sessions"] == 1
    assert doc["usage"]["turns"] == 9  # A..I, the text-only turn included


def test_prices_turn_the_wasted_tokens_into_dollars() -> None:
    doc = replay_json(str(LOOP), "--prices", str(EXAMPLE_PRICES))
    cost = doc["sessions"][0]["waste"]["cost"]
    sonnet = (31 * 3.00 + 47 * 15.00 + 12_700 * 0.30 + 200 * 3.75) / 1e6
    haiku = (17 * 1.00 + 25 * 5.00 + 6_500 * 0.10 + 100 * 1.25) / 1e6
    assert cost["amount"] == pytest.approx(sonnet + haiku, abs=1e-6)
    assert (cost["currency"], cost["pricedTurns"], cost["unpricedTurns"]) == ("USD", 3, 0)
    assert doc["waste"]["cost"]["amount"] == cost["amount"]
    assert doc["prices"] == str(EXAMPLE_PRICES)


def test_a_model_without_a_price_is_named_never_priced(tmp_path: Path) -> None:
    prices = tmp_path / "p.toml"
    prices.write_text(
        '[[models]]\nmatch = "claude-sonnet-*"\ninput = 3\noutput = 15\n'
        "cache_read = 0.3\ncache_write = 3.75\n"
    )
    doc = replay_json(str(LOOP), "--prices", str(prices))
    cost = doc["waste"]["cost"]
    assert (cost["pricedTurns"], cost["unpricedTurns"]) == (2, 1)
    assert cost["unpriced"] == [
        {"model": "claude-haiku-4-5-20251001", "turns": 1, "reason": "no price matches this model"}
    ]
    text = run_cli("replay", str(LOOP), "--prices", str(prices)).stdout.decode()
    assert "(1 turn not priced: claude-haiku-4-5-20251001)" in text


def test_the_summary_says_what_the_loop_cost() -> None:
    text = run_cli("replay", str(LOOP)).stdout.decode()
    assert (
        "Waste: 4 calls after a denial; 3 model turns spent only on them: 48 input, "
        "72 output, 19,200 cache read, 300 cache write tokens; 1 turn also made other "
        "calls (tokens not counted)"
    ) in text
    assert "Waste: the calls after each denial, and the model turns they took" in text


def test_a_format_that_records_no_usage_says_so_never_0() -> None:
    doc = replay_json(str(NO_USAGE))
    (session,) = doc["sessions"]
    waste = session["waste"]
    assert waste["calls"] == 1 and waste["usageRecorded"] is False
    assert waste["turns"] == 0 and waste["unknownCostCalls"] == 1
    assert set(waste["tokens"].values()) == {None}
    assert session["usage"]["turns"] == 0 and set(session["usage"]["tokens"].values()) == {None}
    assert doc["waste"]["sessionsWithoutUsage"] == 1
    text = run_cli("replay", str(NO_USAGE)).stdout.decode()
    assert "Waste: 1 call after a denial; no usage recorded" in text
    with_prices = run_cli("replay", str(NO_USAGE), "--prices", str(EXAMPLE_PRICES))
    assert "no usage recorded" in with_prices.stdout.decode()
    assert "USD" not in with_prices.stdout.decode()


def test_a_directory_adds_up_and_parallel_replay_gives_the_same_document(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_bytes(LOOP.read_bytes())
    (tmp_path / "c.jsonl").write_bytes(NO_USAGE.read_bytes())
    serial = replay_json(str(tmp_path), "--prices", str(EXAMPLE_PRICES))
    parallel = replay_json(str(tmp_path), "--prices", str(EXAMPLE_PRICES), "-j", "2")
    assert serial == parallel
    assert serial["waste"]["calls"] == 4 + 4 + 1 and serial["waste"]["turns"] == 6
    assert serial["waste"]["sessions"] == 3 and serial["waste"]["sessionsWithoutUsage"] == 1
    assert serial["waste"]["unknownCostCalls"] == 1
    assert serial["waste"]["tokens"]["cacheRead"] == 2 * 19_200
    assert serial["usage"]["turns"] == 18


def test_no_secret_in_any_output_with_prices(tmp_path: Path) -> None:
    assert SECRET in LOOP.read_text()
    for extra in ((), ("--json",), ("--prices", str(EXAMPLE_PRICES)), ("--json", "-j", "2")):
        done = run_cli("replay", str(LOOP), str(NO_USAGE), *extra)
        assert SECRET.encode() not in done.stdout + done.stderr, extra


# --- real transcripts ----------------------------------------------------------------


def real(*parts: str) -> Path:
    samples = shared_dir() / "samples-real"
    if not samples.is_dir():
        pytest.skip(SHARED_SKIP)
    path = samples / Path(*parts)
    assert path.is_file(), f"{path}: not in shared/samples-real (renamed? update the test)"
    return path


@pytest.mark.parametrize(
    "name",
    [
        "codemie-ai-codemie-code__tests-integration-metrics-fixtures-claude__"
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        "codemie-ai-codemie-code__tests-integration-session-fixtures-claude-incremental-"
        "subagents__turn-1.jsonl",
        "oneryalcin-fasthooks__specs-data__sample_main_transcript.jsonl",
    ],
)
def test_real_claude_code_transcripts_equal_their_hand_count(name: str) -> None:
    path = real("claude-code", name)
    for limit in (1, 3):
        doc = assert_equal_to_hand_count(path, limit)
        assert doc["usage"]["turns"] > 0  # these record usage on every assistant line


def test_at_40_columns_no_identifier_is_split(tmp_path: Path) -> None:
    from test_replay_narrow_terminal import on_terminal

    long_name = "a-rather-long-prices-file-name-for-this-team.toml"
    prices = tmp_path / long_name
    prices.write_text('[[models]]\nmatch = "claude-sonnet-*"\ninput = 3\noutput = 15\n')
    text = on_terminal("replay", str(LOOP), "--prices", str(prices), columns=40)
    assert all(len(line.rstrip()) <= 40 for line in text.splitlines()), text
    assert "Waste: 4 calls after a denial;" in text
    words = set(text.split())
    for identifier in ("claude-code-loop.jsonl", "waste-demo-0001"):
        assert identifier in words, identifier
    assert "claude-haiku-4-5-20251001)" in words  # named as unpriced, whole
    (short,) = [word for word in words if "\u2026" in word and word.endswith(".toml")]
    front, back = short.split("\u2026")
    assert str(prices).startswith(front) and long_name.endswith(back)


CODEX_FILES = [
    ROOT / "tests" / "fixtures" / "codex" / name
    for name in (
        "real--codemie-rollout-019e1625-EXCERPT-write-stdin-polls.jsonl.gz",
        "real--codemie-rollout-019b7f94-shell.jsonl",
    )
]


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name)
def test_real_codex_rollouts_equal_their_hand_count(path: Path) -> None:
    for limit in (1, 2, 3):
        doc = replay_json(str(path), "-m", str(limit))
        hand = codex_by_hand(path, limit)
        (session,) = doc["sessions"]
        assert session["session"] == hand["session"]
        waste = session["waste"]
        for key in ("calls", "turns", "partialTurns", "unknownCostCalls", "tokens"):
            assert waste[key] == hand[key], (limit, key)
        assert session["usage"]["tokens"] == hand["spent"]
        assert session["usage"]["turns"] == hand["spentTurns"]


def test_the_codex_polls_waste_three_turns_of_their_own() -> None:
    """The 6 identical write_stdin polls: denied at the 3rd; the 3 after it each had a
    turn of their own (129,321 - 128,896 uncached input tokens for the first...)."""
    doc = replay_json(str(CODEX_FILES[0]))
    waste = doc["sessions"][0]["waste"]
    assert (waste["calls"], waste["turns"], waste["partialTurns"]) == (3, 3, 0)
    assert waste["tokens"] == {
        "input": 425 + 509 + 596,
        "output": 37 * 3,
        "cacheRead": 128_896 * 3,
        "cacheWrite": None,
        "reasoning": 0,
    }


@pytest.mark.parametrize(
    "name",
    [
        "codemie-ai-codemie-code__rollout-2026-05-11T11-26-55-019e1625__EXCERPT-lines1+250-386.jsonl",
        "codemie-ai-codemie-code__tests-integration-metrics-fixtures-codex__"
        "rollout-2026-01-02T18-39-45-019b7f94.jsonl",
    ],
)
def test_shared_codex_rollouts_equal_their_hand_count(name: str) -> None:
    path = real("codex-cli", name)
    for limit in (1, 3):
        doc = replay_json(str(path), "-m", str(limit))
        hand = codex_by_hand(path, limit)
        waste = doc["sessions"][0]["waste"]
        for key in ("calls", "turns", "partialTurns", "unknownCostCalls", "tokens"):
            assert waste[key] == hand[key], (limit, key)
        assert doc["sessions"][0]["usage"]["tokens"] == hand["spent"]


OPENHANDS_HISTORY = (
    ROOT
    / "tests"
    / "fixtures"
    / "openhands"
    / "OpenHands__evaluation-benchmarks-multi_swe_bench-examples-output__LINE2-ponyc-4593.jsonl"
)


def test_a_real_openhands_history_equals_its_hand_count() -> None:
    for limit in (1, 2, 3):
        doc = replay_json(str(OPENHANDS_HISTORY), "-m", str(limit))
        assert_waste_equals(doc, openhands_history_by_hand(OPENHANDS_HISTORY, limit))
    # at -m 1 (deny the first of any repeat) its three repeated calls each had a turn
    assert replay_json(str(OPENHANDS_HISTORY), "-m", "1")["waste"]["turns"] == 3


STUCK = "gsmoon97-swe-agent-eval__MopenHands-Claude-3.5-Sonnet__django__django-{}__STUCK-LOOP.json"


@pytest.mark.parametrize("instance", ["16667", "12713"])
def test_the_real_openhands_stuck_loops_equal_their_hand_count(instance: str) -> None:
    path = real("trajectories", "openhands", STUCK.format(instance))
    for limit in (1, 3, 5):
        doc = replay_json(str(path), "-m", str(limit))
        assert_waste_equals(doc, openhands_completion_by_hand(path, limit))


def test_the_30_call_openhands_loop_wastes_27_tries_one_with_known_usage() -> None:
    path = real("trajectories", "openhands", STUCK.format("16667"))
    doc = replay_json(str(path))
    (denial,) = doc["denials"]
    assert (denial["at"]["call"], denial["streakLength"], denial["moreAfterDenial"]) == (23, 30, 27)
    waste = doc["sessions"][0]["waste"]
    # only the last response records usage: its one call is the 30th try
    assert (waste["calls"], waste["turns"], waste["unknownCostCalls"]) == (27, 1, 26)
    assert waste["tokens"] == {
        "input": 41_695,
        "output": 4_096,
        "cacheRead": None,
        "cacheWrite": None,
        "reasoning": None,
    }


SWE_AGENT = (
    ROOT
    / "tests"
    / "fixtures"
    / "swe-agent"
    / "SWE-agent__tests-test_data-trajectories-gpt4-swe-bench-dev-easy__pydicom__pydicom-1458.traj"
)


def test_a_real_swe_agent_run_records_only_totals_so_no_turn_is_wasted_whole() -> None:
    """SWE-agent keeps the run's totals (``info.model_stats``), one figure for every call:
    a repeated action is wasted, and the one turn that made all the calls is partly so."""
    run = json.loads(SWE_AGENT.read_text(encoding="utf-8"))
    actions = [step["action"] for step in run["trajectory"]]
    stats = run["info"]["model_stats"]
    for limit in (1, 2):
        flags = flags_of([(a, "") for a in actions], limit)
        doc = replay_json(str(SWE_AGENT), "-m", str(limit))
        waste = doc["sessions"][0]["waste"]
        assert waste["calls"] == sum(flags)
        assert (waste["turns"], waste["partialTurns"]) == (0, 1 if any(flags) else 0)
        assert set(waste["tokens"].values()) == {None}
        usage = doc["sessions"][0]["usage"]
        assert usage["turns"] == 1
        assert (usage["tokens"]["input"], usage["tokens"]["output"]) == (
            stats["tokens_sent"],
            stats["tokens_received"],
        )
    assert sum(flags_of([(a, "") for a in actions], 1)) == 1  # the edit sent twice


GEMINI_DIR = ROOT / "tests" / "fixtures" / "gemini-cli"


def gemini_by_hand(path: Path, limit: int) -> dict[str, Any]:
    """A Gemini CLI chat: each ``gemini`` message is a turn with its own ``tokens``
    (input counting the cached part and tool tokens apart, output without thoughts)."""
    chat = json.loads(path.read_text(encoding="utf-8"))
    calls, turn_of, figures = [], [], {}
    for message in chat["messages"]:
        if message["type"] != "gemini":
            continue
        counts = message.get("tokens")
        if counts:
            figures[message["id"]] = {
                "input": counts["input"] - counts["cached"] + counts.get("tool", 0),
                "output": counts["output"] + counts["thoughts"],
                "cacheRead": counts["cached"],
                "reasoning": counts["thoughts"],
            }
        for call in message.get("toolCalls", []):
            calls.append((call["name"], json.dumps(call["args"], sort_keys=True)))
            turn_of.append(message["id"] if counts else None)
    return by_turns(turn_of, flags_of(calls, limit), figures)


@pytest.mark.parametrize(
    "path", sorted(GEMINI_DIR.glob("codemie-*.json")), ids=lambda p: p.name[-30:]
)
def test_real_gemini_chats_equal_their_hand_count(path: Path) -> None:
    for limit in (1, 3):
        doc = replay_json(str(path), "-m", str(limit))
        assert_waste_equals(doc, gemini_by_hand(path, limit))
        assert doc["sessions"][0]["usage"]["turns"] > 0
