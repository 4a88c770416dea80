"""The opt-in OpenTelemetry metrics exporter (issue 37 item 6), with the real SDK.

The library exports to an ``InMemoryMetricReader``; the gateway and the proxy
(stdio and ``--url``) run in their own processes with ``--otel`` and export over
OTLP/HTTP to a receiver this test starts on a loopback port (protobuf bodies
decoded with the OTLP's own messages). Each scripted loop's exported denied
count is the number of ``deny`` lines in the front-end's ``--log``; a canary
secret in the arguments (and a session name, unless asked) appears in no byte
the exporter sent. Without ``--otel`` nothing of OpenTelemetry is imported; with
it and without the extra, exit 2 and one clear line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, cli_env
from test_startup_imports import imported

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is in the test extra")
pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from remote_helpers import gateway, upstream  # noqa: E402

from loop_brake_cli import LoopBrake, LoopBrakeError, wrap_execute  # noqa: E402
from loop_brake_cli.telemetry import TelemetryError, export_metrics  # noqa: E402

CANARY = "CANARY-4b0e7d-otel-argument"
SECRET_SESSION = "CANARY-session-91ac-otel"
ECHO = [sys.executable, str(ROOT / "tests" / "echo_server.py")]

Points = dict[str, list[tuple[dict[str, str], float]]]


@pytest.fixture(autouse=True)
def sdk_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever this worker's environment says (another test file or the user's shell may
    set ``OTEL_SDK_DISABLED``), the SDK is on here, in process and in the subprocesses
    that inherit it; the one test of it being off sets it itself."""
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)


# -- a tiny OTLP/HTTP receiver ----------------------------------------------------


class Receiver:
    """``POST /v1/metrics`` bodies, kept as sent; each answered 200 (an empty response)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.paths.append(self.path)
                received.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self, **more: str) -> dict[str, str]:
        """What points a process's exporter here; its periodic export never comes in a
        test (ten minutes): the one it makes when it ends is what is read."""
        return {
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint,
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",
            **more,
        }

    def kinds(self) -> dict[str, str]:
        """Each instrument's OTLP data kind: ``sum`` (monotonic), ``gauge``, ``histogram``."""
        out = {}
        for body in self.bodies:
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        monotonic = kind == "sum" and metric.sum.is_monotonic
                        out[metric.name] = "counter" if monotonic else kind
        return out

    def points(self) -> Points:
        """Every exported data point by instrument name, from the last export that
        holds it (the values are cumulative)."""
        out: Points = {}
        for body in self.bodies:
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        out[metric.name] = _points(metric)
        return out


def _points(metric: Any) -> list[tuple[dict[str, str], float]]:
    kind = metric.WhichOneof("data")
    found = []
    for point in getattr(metric, kind).data_points:
        labels = {a.key: a.value.string_value for a in point.attributes}
        if kind == "histogram":
            found.append((labels, float(point.count)))
        else:
            found.append((labels, float(point.as_int or point.as_double)))
    return found


@contextmanager
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()
        thread.join()


def total(points: Points, name: str, **want: str) -> float:
    return sum(
        value
        for labels, value in points.get(name, [])
        if all(labels.get(key) == wanted for key, wanted in want.items())
    )


def denied_lines(log: Path) -> int:
    return sum(json.loads(line)["verdict"] == "deny" for line in log.read_text().splitlines())


# -- the library ------------------------------------------------------------------


def in_memory(brake: LoopBrake, **options: Any) -> InMemoryMetricReader:
    reader = InMemoryMetricReader()
    export_metrics(brake, meter_provider=MeterProvider(metric_readers=[reader]), **options)
    return reader


def collected(reader: InMemoryMetricReader) -> tuple[Points, str]:
    """The points a collection holds, and all of it as JSON (every attribute)."""
    data = reader.get_metrics_data()
    out: Points = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out[metric.name] = [
                    (dict(p.attributes), float(getattr(p, "value", 0)))
                    for p in metric.data.data_points
                ]
    return out, data.to_json()


def test_the_library_exports_what_its_brake_decided_and_no_argument() -> None:
    brake = LoopBrake(3)
    reader = in_memory(brake)
    denied = 0
    for _ in range(7):
        try:
            brake.enforce("search", {"q": CANARY}, session_id=SECRET_SESSION)
        except LoopBrakeError:
            denied += 1
    braked = wrap_execute(lambda args: args, brake, tool="lookup", session_id="other")
    braked({"q": CANARY})
    brake.check("search", {"q": CANARY}, session_id="other", call_id=1)
    brake.check("search", {"q": CANARY}, session_id="other", call_id=1)  # its id still open
    points, everything = collected(reader)
    assert denied == 5
    assert total(points, "loop_brake.calls", outcome="denied") == denied
    assert total(points, "loop_brake.calls", tool="search", rule="streak", outcome="passed") == 3
    assert total(points, "loop_brake.calls", tool="lookup", outcome="passed") == 1
    assert total(points, "loop_brake.calls", outcome="duplicate") == 1
    assert points["loop_brake.sessions_held"] == [({}, 2.0)]
    assert total(points, "loop_brake.sessions_evicted") == 0
    assert points["loop_brake.fail_open"] == [({"reason": "store_failure"}, 0.0)]
    assert CANARY not in everything and SECRET_SESSION not in everything


def test_a_tool_name_a_client_chose_is_shown_visible_as_on_metrics() -> None:
    brake = LoopBrake(3)
    reader = in_memory(brake)
    brake.check("\x1b[31mred\u202e", {"a": 1}, session_id="s")
    points, _ = collected(reader)
    assert points["loop_brake.calls"] == [
        ({"tool": "\\x1b[31mred\\u202e", "rule": "streak", "outcome": "passed"}, 1.0)
    ]


def test_the_library_names_sessions_only_when_asked_and_counts_evictions() -> None:
    brake = LoopBrake(2, max_sessions=1)
    reader = in_memory(brake, sessions=True)
    for session in (SECRET_SESSION, "b", SECRET_SESSION):
        brake.check("t", {"a": 1}, session_id=session)
    points, _ = collected(reader)
    by_session = {labels["session"]: value for labels, value in points["loop_brake.session_calls"]}
    assert by_session == {SECRET_SESSION: 2.0, "b": 1.0}
    assert total(points, "loop_brake.sessions_evicted", reason="cap") == 2
    assert points["loop_brake.sessions_held"] == [({}, 1.0)]


def test_a_store_that_fails_open_is_counted_and_fail_closed_is_a_denial(tmp_path: Path) -> None:
    """A store URL nothing answers at: each call is let through uncounted (fail-open),
    or denied with the rule ``store`` (fail-closed)."""
    for fail_closed in (False, True):
        notes: list[str] = []
        brake = LoopBrake(
            3, store="redis://127.0.0.1:9/0", fail_closed=fail_closed, warn=notes.append
        )
        reader = in_memory(brake)
        for _ in range(2):
            brake.check("t", {"a": CANARY}, session_id="s")
        points, everything = collected(reader)
        opened = total(points, "loop_brake.fail_open", reason="store_failure")
        store_denied = total(points, "loop_brake.calls", rule="store", outcome="denied")
        assert (opened, store_denied) == ((0, 2) if fail_closed else (2, 0))
        assert "loop_brake.sessions_held" not in points or not points["loop_brake.sessions_held"]
        assert CANARY not in everything


def test_the_library_without_the_api_is_a_clear_error() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from loop_brake_cli import LoopBrake\n"
        "from loop_brake_cli.telemetry import TelemetryError, export_metrics\n"
        "try:\n"
        "    export_metrics(LoopBrake())\n"
        "except TelemetryError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.stdout == (
        "OpenTelemetry metrics need the otel extra: pip install 'loop-brake-cli[otel]'\n"
    )
    assert issubclass(TelemetryError, RuntimeError)


# -- the gateway ------------------------------------------------------------------


def test_the_gateway_exports_the_families_of_metrics_and_no_argument(tmp_path: Path) -> None:
    """--otel beside --metrics: the exported numbers are the scrape's (one count, two
    renderers); the denied count is the log's deny lines; no argument, no session name."""
    from test_mcp_gateway import connect, in_session, scrape

    with receiver() as otlp, upstream(tmp_path) as (up, _calls):
        with gateway(tmp_path, up, "--metrics", "--otel", env=otlp.env()) as (url, log, stderr):

            async def run() -> None:
                async with connect(url) as client:
                    for _ in range(6):
                        meta = in_session(SECRET_SESSION)
                        await client.call_tool("echo", {"text": CANARY}, meta=meta)
                    await client.call_tool("echo", {"text": "x"}, meta=in_session("b"))

            anyio.run(run)
            _status, _type, text = scrape(url)
        points = otlp.points()
        sent = b"".join(otlp.bodies)
    assert set(otlp.paths) == {"/v1/metrics"}
    assert denied_lines(log) == 4
    assert total(points, "loop_brake.calls", outcome="denied") == 4
    assert total(points, "loop_brake.calls", tool="echo", rule="streak", outcome="passed") == 3
    scraped = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if not line.startswith("#")
    }
    for labels, value in points["loop_brake.calls"]:
        inside = ",".join(f'{key}="{labels[key]}"' for key in ("tool", "rule", "outcome"))
        assert scraped[f"loop_brake_calls_total{{{inside}}}"] == value
    assert points["loop_brake.sessions_held"] == [({}, 2.0)]
    assert total(points, "loop_brake.refused") == 0 and total(points, "loop_brake.fail_open") == 0
    assert {labels["reason"] for labels, _ in points["loop_brake.clients_refused"]} == {
        "body_too_large",
        "max_connections",
        "request_timeout",
    }
    kinds = otlp.kinds()
    assert kinds["loop_brake.calls"] == kinds["loop_brake.sessions_evicted"] == "counter"
    assert kinds["loop_brake.sessions_held"] == "gauge"
    assert CANARY.encode() not in sent and SECRET_SESSION.encode() not in sent
    assert b"loop-brake-mcp-gateway" in sent  # the service's name, unless OTEL_SERVICE_NAME
    assert CANARY not in stderr.read_text()


def test_the_gateway_store_latency_and_sessions_when_asked(tmp_path: Path) -> None:
    """With --store, each decision's round trip is in the histogram; with
    --metrics-sessions (no --metrics) a session attribute."""
    from test_mcp_gateway import connect, in_session

    store = f"sqlite:///{tmp_path / 'streaks.db'}"
    options = ("--otel", "--metrics-sessions", "--store", store)
    with receiver() as otlp, upstream(tmp_path) as (up, _calls):
        with gateway(tmp_path, up, *options, env=otlp.env()) as (url, log, _stderr):

            async def run() -> None:
                async with connect(url) as client:
                    for _ in range(4):
                        meta = in_session(SECRET_SESSION)
                        await client.call_tool("echo", {"text": CANARY}, meta=meta)

            anyio.run(run)
        points = otlp.points()
        sent = b"".join(otlp.bodies)
    assert denied_lines(log) == 2 == total(points, "loop_brake.calls", outcome="denied")
    assert total(points, "loop_brake.store_decisions") == 4
    assert otlp.kinds()["loop_brake.store_seconds"] == "histogram"
    assert total(points, "loop_brake.store_seconds") >= 4  # decisions, and ends of exchanges
    assert "loop_brake.sessions_held" not in points  # the store keeps its own
    sessions = points["loop_brake.session_calls"]
    assert sum(value for _labels, value in sessions) == 4
    assert {labels["session"] for labels, _value in sessions} == {f"name:{SECRET_SESSION}"}
    assert CANARY.encode() not in sent


# -- the proxy --------------------------------------------------------------------


def call(request_id: int, text: str = CANARY) -> bytes:
    params = {"name": "echo", "arguments": {"text": text}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("shadow", [False, True], ids=["enforcing", "shadow"])
def test_the_stdio_proxy_exports_its_denials_and_no_argument(tmp_path: Path, shadow: bool) -> None:
    log = tmp_path / "verdicts.jsonl"
    script = b"".join(call(n) for n in range(1, 7))
    options = ["--otel", "--log", str(log), *(["--shadow"] if shadow else [])]
    with receiver() as otlp:
        out = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", *options, "--", *ECHO],
            input=script,
            capture_output=True,
            env=cli_env(**otlp.env()),
            cwd=ROOT,
            timeout=120,
        )
        points = otlp.points()
        sent = b"".join(otlp.bodies)
    assert out.returncode == 0, out.stderr
    assert denied_lines(log) == 4  # under --shadow, would have been
    what = "shadowed" if shadow else "denied"
    assert total(points, "loop_brake.calls", tool="echo", rule="streak", outcome=what) == 4
    assert total(points, "loop_brake.calls", outcome="passed") == 2
    assert total(points, "loop_brake.calls") == 6
    assert points["loop_brake.sessions_held"] == [({}, 1.0)]
    assert CANARY.encode() not in sent and b"mcp#1" not in sent
    assert b"loop-brake-mcp-proxy" in sent


def test_the_console_exporter_writes_to_stderr_never_to_the_client(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--otel", "--", *ECHO],
        input=b"".join(call(n) for n in range(1, 5)),
        capture_output=True,
        env=cli_env(OTEL_METRICS_EXPORTER="console", OTEL_METRIC_EXPORT_INTERVAL="600000"),
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert b"loop_brake.calls" in out.stderr and b"loop_brake" not in out.stdout
    assert out.stdout.count(b'"isError":true') == 2  # the 3rd and 4th denied
    assert CANARY.encode() not in out.stderr


def test_otel_asked_with_the_sdk_disabled_says_so_and_the_brake_holds(tmp_path: Path) -> None:
    """``--otel`` under ``OTEL_SDK_DISABLED=true`` exports nothing (the SDK's rule): said
    once on stderr, not left for the operator to find on an empty dashboard."""
    with receiver() as otlp:
        out = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--otel", "--", *ECHO],
            input=b"".join(call(n) for n in range(1, 5)),
            capture_output=True,
            env=cli_env(**otlp.env(OTEL_SDK_DISABLED="TRUE")),
            cwd=ROOT,
            timeout=120,
        )
        sent = otlp.bodies
    assert out.returncode == 0, out.stderr
    assert sent == []
    said = [line for line in out.stderr.splitlines() if b"OTEL_SDK_DISABLED" in line]
    assert said == [
        b"loop-brake mcp-proxy: --otel: OTEL_SDK_DISABLED is true: no metrics are exported"
    ]
    assert out.stdout.count(b'"isError":true') == 2  # the brake itself is on
    assert CANARY.encode() not in out.stderr


def test_the_url_bridge_exports_its_denials_and_no_argument(tmp_path: Path) -> None:
    log = tmp_path / "verdicts.jsonl"
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with receiver() as otlp, upstream(tmp_path) as (up, calls):
        proc = subprocess.Popen(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--otel", "--url", up]
            + ["--log", str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(**otlp.env()),
            cwd=ROOT,
        )
        assert proc.stdin and proc.stdout

        def send(message: bytes, answered: bool = True) -> None:
            proc.stdin.write(message)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            if answered:  # each request answered before the next is sent
                answers.append(json.loads(proc.stdout.readline()))  # type: ignore[union-attr]

        answers: list[dict[str, Any]] = []
        send(json.dumps(hello).encode() + b"\n")
        send(json.dumps(initialized).encode() + b"\n", answered=False)
        for n in range(1, 6):
            send(call(n))
        _out, err = proc.communicate(timeout=120)  # its input ends: the bridge exits
        points = otlp.points()
        sent = b"".join(otlp.bodies)
        reached = len(calls.read_text().splitlines())
    assert proc.returncode == 0, err
    assert [a["id"] for a in answers] == [0, 1, 2, 3, 4, 5]
    assert reached == 2  # the upstream ran the first two calls only
    assert denied_lines(log) == 3 == total(points, "loop_brake.calls", outcome="denied")
    assert CANARY.encode() not in sent and CANARY.encode() not in err


def test_a_collector_that_cannot_be_reached_is_said_on_stderr_never_a_traceback() -> None:
    import socket

    with socket.socket() as closed:  # bound, never listening: every connection refused
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        out = subprocess.run(
            [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--otel", "--", *ECHO],
            input=b"".join(call(n) for n in range(1, 4)),
            capture_output=True,
            env=cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="1"),
            cwd=ROOT,
            timeout=120,
        )
    assert out.returncode == 0
    assert out.stdout.count(b'"isError":true') == 1  # the brake went on braking
    lines = out.stderr.decode().splitlines()
    assert any(line.startswith("loop-brake mcp-proxy: opentelemetry: ") for line in lines)
    assert "Traceback" not in out.stderr.decode() and CANARY not in out.stderr.decode()


# -- switched on only when asked -------------------------------------------------


def test_nothing_of_opentelemetry_is_imported_unless_asked(tmp_path: Path) -> None:
    for args in (("mcp-proxy", "--", *ECHO), ("--version",)):
        modules = imported(tmp_path, *args, stdin=call(1))
        assert "loop_brake_cli.cli" in modules or "loop_brake_cli.commands.version" in modules
        otel = {m for m in modules if m.startswith(("opentelemetry", "loop_brake_cli.telemetry"))}
        assert otel == set(), args
    asked = imported(tmp_path, "mcp-proxy", "--otel", "--", *ECHO, stdin=call(1))
    assert "loop_brake_cli.telemetry.otel" in asked and "opentelemetry.sdk.metrics" in asked


WITHOUT_OTEL = (
    "import sys; sys.modules['opentelemetry'] = None  # as if the extra were not installed\n"
    "sys.argv = ['loop-brake', *sys.argv[1:]]\n"
    "from loop_brake_cli.entry import main\n"
    "main()\n"
)


@pytest.mark.parametrize(
    "args",
    [
        ("mcp-proxy", "--otel", "--", *ECHO),
        ("mcp-gateway", "--otel", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/"),
    ],
    ids=["proxy", "gateway"],
)
def test_asked_without_the_extra_exits_2_with_one_clear_line(args: tuple[str, ...]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL, *args],
        input=b"",
        capture_output=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stdout == b""
    assert out.stderr.decode().endswith(
        "--otel: OpenTelemetry metrics need the otel extra: pip install 'loop-brake-cli[otel]'\n"
    )
    assert b"Traceback" not in out.stderr and len(out.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_METRICS_EXPORTER": "prometheus"}, "OTEL_METRICS_EXPORTER: 'prometheus'"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json'"),
    ],
)
def test_an_exporter_it_cannot_start_is_a_usage_error(env: dict[str, str], says: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "mcp-proxy", "--otel", "--", *ECHO],
        input=b"",
        capture_output=True,
        env=cli_env(**env),
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2
    assert says in out.stderr.decode() and b"Traceback" not in out.stderr


def test_the_library_example_of_the_docs_prints_what_it_shows() -> None:
    page = (ROOT / "docs" / "library.md").read_text()
    block = page.split("## Metrics with OpenTelemetry")[1].split("```python\n")[1].split("```")[0]
    out = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    shown = block.rsplit("# ", 1)[1]
    assert out.stdout == shown
