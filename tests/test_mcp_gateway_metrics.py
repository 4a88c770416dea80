"""The gateway's ``/metrics`` (issue 37 item 6), without HTTP: what each decision
counts, what a scrape says, and what it never says (an argument; a session name
unless asked). The HTTP scrape of a real gateway is in ``test_mcp_gateway.py``."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from redis_server import free_port

from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.mcp_gateway.decide import GatewayBrake
from loop_brake_cli.mcp_gateway.metrics import GatewayMetrics
from loop_brake_cli.mcp_shared.prometheus import Histogram, label_value, series
from loop_brake_cli.stores import open_store

CANARY = "CANARY-7f1e-metrics-argument"
SECRET_SESSION = "CANARY-session-name-0b3c"

# One sample line of the text format: a name, optional labels (each value quoted,
# with only \\, \" and \n escaped inside), one number.
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
_SAMPLE = re.compile(
    rf"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{{(?P<labels>{_LABEL}(?:,{_LABEL})*)\}})? "
    r"(?P<value>-?[0-9.e+-]+|\+Inf|NaN)"
)


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """A scrape read strictly: every line a HELP, a TYPE or a sample; each sample's
    family declared above it. Samples by name."""
    assert text.endswith("\n")
    types: dict[str, str] = {}
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            types[name] = kind
            continue
        match = _SAMPLE.fullmatch(line)
        assert match, f"not a sample line: {line!r}"
        name = match["name"]
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or base in types, f"{name} has no TYPE line"
        pairs = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match["labels"] or "")
        labels = dict(pairs)
        out.setdefault(name, []).append((labels, float(match["value"])))
    return out


def total(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **want: str) -> float:
    return sum(
        value
        for labels, value in samples.get(name, [])
        if all(labels.get(key) == wanted for key, wanted in want.items())
    )


def body(call_id: int, session: str = "s", tool: str = "echo", text: str = CANARY) -> bytes:
    params = {"name": tool, "arguments": {"text": text}, "_meta": {"loop-brake/session": session}}
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def gateway(**options: Any) -> tuple[GatewayBrake, list[dict[str, Any]]]:
    log: list[dict[str, Any]] = []
    sessions = options.pop("sessions", False)
    metrics = options.pop("metrics", None) or GatewayMetrics(sessions=sessions)
    return GatewayBrake(3, log.append, lambda _text: None, metrics=metrics, **options), log


def scripted_loop(brake: GatewayBrake, calls: int, session: str = "s") -> None:
    """``calls`` identical calls in one session, each answered before the next (on an
    event loop, as the application decides: with a store, in its worker pool)."""

    async def run() -> None:
        for call_id in range(calls):
            decision = await brake.decide_async(body(call_id, session), {}, None)
            if not isinstance(decision, tuple):
                brake.answered(decision)
                await decision.ended.wait()  # the store heard the end of the exchange

    asyncio.run(run())


def test_the_denied_count_equals_the_calls_the_brake_denied() -> None:
    brake, log = gateway()
    scripted_loop(brake, 7, "a")
    scripted_loop(brake, 2, "b")
    samples = parse(brake.metrics.render().decode())
    denied_lines = [line for line in log if line["verdict"] == "deny"]
    assert len(denied_lines) == 5  # a's 3rd to 7th
    assert total(samples, "loop_brake_calls_total", outcome="denied") == 5
    assert total(samples, "loop_brake_calls_total", outcome="passed") == 4
    assert total(samples, "loop_brake_calls_total") == len(log) == 9
    assert total(samples, "loop_brake_calls_total", tool="echo", rule="streak") == 9
    assert samples["loop_brake_sessions_held"] == [({}, 2.0)]
    assert total(samples, "loop_brake_sessions_evicted_total") == 0


def test_outcomes_under_a_policy_warned_denied_stopped(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("warn_at = 2\n[stop]\nafter_denials = 2\n")
    brake, log = gateway(policy=load_policy(str(path)))
    scripted_loop(brake, 5)
    samples = parse(brake.metrics.render().decode())
    verdicts = [(line["verdict"], line.get("warn", False)) for line in log]
    assert verdicts == [
        ("pass", False),
        ("pass", True),
        ("deny", False),
        ("stop", False),
        ("stop", False),
    ]
    assert total(samples, "loop_brake_calls_total", outcome="passed") == 1
    assert total(samples, "loop_brake_calls_total", outcome="warned") == 1
    assert total(samples, "loop_brake_calls_total", outcome="denied", rule="streak") == 1
    assert total(samples, "loop_brake_calls_total", outcome="stopped", rule="stop") == 2


def test_shadow_and_duplicate_outcomes() -> None:
    brake, _log = gateway(shadow=True)
    scripted_loop(brake, 4)
    samples = parse(brake.metrics.render().decode())
    assert total(samples, "loop_brake_calls_total", outcome="shadowed") == 2
    assert total(samples, "loop_brake_calls_total", outcome="denied") == 0
    brake, _log = gateway()
    first = brake.decide(body(1), {}, None)
    again = brake.decide(body(1), {}, None, wait=False)  # still open: a duplicate, 409
    assert not isinstance(first, tuple) and again[0] == 409
    samples = parse(brake.metrics.render().decode())
    assert total(samples, "loop_brake_calls_total", outcome="duplicate") == 1


def test_under_shadow_a_duplicate_id_is_forwarded_so_it_passed() -> None:
    """--shadow forwards a call sent again while its id is open (no 409): ``passed``."""
    brake, _log = gateway(shadow=True)
    first = brake.decide(body(1), {}, None)
    again = brake.decide(body(1), {}, None, wait=False)
    assert not isinstance(first, tuple) and not isinstance(again, tuple)
    samples = parse(brake.metrics.render().decode())
    assert total(samples, "loop_brake_calls_total", outcome="duplicate") == 0
    assert total(samples, "loop_brake_calls_total", outcome="passed") == 2


def test_refusals_by_reason() -> None:
    brake, _log = gateway()
    brake.decide(b"NaN", {}, None)
    brake.decide(b"[" + body(1) + b"]", {}, None)
    no_session = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}
    brake.decide(json.dumps(no_session).encode(), {}, None)
    unreadable = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}}
    brake.decide(json.dumps(unreadable).encode(), {"loop-brake-session": "s"}, None)
    samples = parse(brake.metrics.render().decode())
    reasons = {labels["reason"]: value for labels, value in samples["loop_brake_refused_total"]}
    assert reasons == {
        "not_json": 1,
        "batch": 1,
        "no_session": 1,
        "unreadable_call": 1,
        "session_name": 0,  # there from the start, so a rate() sees its first rise
    }


def test_no_argument_and_no_session_name_unless_asked() -> None:
    brake, _log = gateway()
    scripted_loop(brake, 4, SECRET_SESSION)
    text = brake.metrics.render().decode()
    assert CANARY not in text and SECRET_SESSION not in text
    assert "session" not in parse(text).get("loop_brake_calls_total", [({}, 0)])[0][0]
    brake, _log = gateway(sessions=True)
    scripted_loop(brake, 4, SECRET_SESSION)
    text = brake.metrics.render().decode()
    assert CANARY not in text
    samples = parse(text)
    by_session = {
        (labels["session"], labels["outcome"]): value
        for labels, value in samples["loop_brake_session_calls_total"]
    }
    assert by_session == {
        (f"name:{SECRET_SESSION}", "passed"): 2,
        (f"name:{SECRET_SESSION}", "denied"): 2,
    }


def test_label_values_are_escaped_and_client_chosen_ones_bounded() -> None:
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\\\x0ad'  # the line feed is made visible first
    assert label_value("\x1b[31mred\u202e\ud800") == "\\\\x1b[31mred\\\\u202e\\\\ud800"
    brake, _log = gateway(metrics=GatewayMetrics(max_labels=2))
    for number, tool in enumerate(['t"1', "t\n2", "t3", "t4"]):
        brake.decide(body(number, f"s{number}", tool=tool), {}, None)
    text = brake.metrics.render().decode()
    samples = parse(text)  # every line still one sample: nothing forged
    calls = samples["loop_brake_calls_total"]
    assert {labels.get("tool") for labels, _ in calls} == {'t\\"1', "t\\\\x0a2", None}
    assert total(samples, "loop_brake_calls_total", overflow="true") == 2
    assert total(samples, "loop_brake_calls_total") == 4


def test_histogram_lines_are_cumulative() -> None:
    histogram = Histogram((0.1, 1.0))
    for value in (0.05, 0.5, 0.5, 7.0):
        histogram.observe(value)
    assert histogram.lines("x", [("op", "a")]) == [
        'x_bucket{op="a",le="0.1"} 1',
        'x_bucket{op="a",le="1"} 3',
        'x_bucket{op="a",le="+Inf"} 4',
        'x_sum{op="a"} 8.05',
        'x_count{op="a"} 4',
    ]
    assert series("y", (), 2) == "y 2"


def test_store_latency_with_a_real_sqlite_store(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "state.sqlite"))
    brake, _log = gateway(store=store)
    scripted_loop(brake, 4)
    brake.close()
    samples = parse(brake.metrics.render().decode())
    # 4 counts, 2 ends of forwarded exchanges, 2 ends of denied calls: 8 round trips
    assert samples["loop_brake_store_seconds_count"] == [({}, 8.0)]
    assert total(samples, "loop_brake_store_seconds_bucket", le="+Inf") == 8
    assert samples["loop_brake_store_decisions_total"] == [({}, 4.0)]
    assert "loop_brake_sessions_held" not in samples  # the store keeps its own
    assert total(samples, "loop_brake_calls_total", outcome="denied") == 2


@pytest.mark.parametrize("fail_closed", [False, True])
def test_fail_opens_by_reason_when_the_store_cannot_be_reached(fail_closed: bool) -> None:
    pytest.importorskip("redis", reason="the redis extra: pip install -e '.[test]'")
    store = open_store(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    brake, log = gateway(store=store, fail_closed=fail_closed, store_deadline=120)
    scripted_loop(brake, 3)
    brake.close()
    samples = parse(brake.metrics.render().decode())
    assert [line["rule"] for line in log] == ["store"] * 3
    opened = total(samples, "loop_brake_fail_open_total", reason="store_failure")
    assert opened == (0 if fail_closed else 3)
    assert total(samples, "loop_brake_fail_open_total", reason="deadline") == 0
    what = "denied" if fail_closed else "passed"
    assert total(samples, "loop_brake_calls_total", rule="store", outcome=what) == 3


class _Frozen:
    """A real SQLite store whose count waits until the test lets it go: a store that
    answers after the decision's deadline, without a clock."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.go = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def count_call(self, *args: Any) -> Any:
        self.go.wait(120)
        return self.store.count_call(*args)


def test_a_fail_open_past_the_deadline_is_counted_as_such(tmp_path: Path) -> None:
    frozen = _Frozen(open_store(str(tmp_path / "state.sqlite")))
    brake, log = gateway(store=frozen, store_deadline=0.01)
    try:
        scripted_loop(brake, 1)
    finally:
        frozen.go.set()
        brake.close()
    samples = parse(brake.metrics.render().decode())
    assert [line["rule"] for line in log] == ["store"]
    assert total(samples, "loop_brake_fail_open_total", reason="deadline") == 1
    assert total(samples, "loop_brake_calls_total", rule="store", outcome="passed") == 1


def test_bounds_and_evictions_are_read_from_the_gateway_counters() -> None:
    brake, _log = gateway(max_sessions=2, session_idle=3600.0)
    for number in range(5):
        scripted_loop(brake, 1, f"s{number}")
    brake.counters.connections_refused += 2  # as limits.py counts them
    samples = parse(brake.metrics.render().decode())
    assert samples["loop_brake_sessions_held"] == [({}, 2.0)]
    assert total(samples, "loop_brake_sessions_evicted_total", reason="cap") == 3
    assert total(samples, "loop_brake_clients_refused_total", reason="max_connections") == 2


def test_the_grafana_dashboard_queries_only_metrics_the_gateway_writes(tmp_path: Path) -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana" / "loop-brake-gateway.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = {name for expr in exprs for name in re.findall(r"loop_brake_[a-z_]+", expr)}
    memory, _log = gateway()
    scripted_loop(memory, 4)
    stored, _log = gateway(store=open_store(str(tmp_path / "state.sqlite")))
    scripted_loop(stored, 4)
    written = set(parse(memory.metrics.render().decode())) | set(
        parse(stored.metrics.render().decode())
    )
    assert named and named <= written, named - written
    docs = (ROOT / "docs" / "metrics.md").read_text()
    assert named <= set(re.findall(r"loop_brake_[a-z_]+", docs))
