"""The OpenTelemetry metrics exporter (the ``otel`` extra): each family an instrument.

Imported only when asked (``--otel``, ``export_metrics``): nothing of OpenTelemetry
is loaded otherwise. ``observe`` gives a source's families (``telemetry.counts.Family``: the
gateway's ``GatewayMetrics``, the library's and the proxy's ``BrakeMetrics``) one
asynchronous instrument each, on a meter provider: every collection reads the
counts the source already keeps (cumulative), so nothing is counted twice and
the numbers are those ``GET /metrics`` shows. The store's latency histogram has
no asynchronous form in OpenTelemetry: a histogram instrument hears each store
round trip through the gateway's latency hooks (``GatewayCounters.store_latency``,
which exist for that), with the ``/metrics`` buckets as advice.

An instrument's name is its family's with ``loop_brake.`` for ``loop_brake_`` and
without ``_total`` (``loop_brake_calls_total``: ``loop_brake.calls``), so an
OpenTelemetry Collector's Prometheus exporter, which adds ``_total`` to a counter
and ``_seconds`` to a histogram in seconds, gives back the ``/metrics`` names.
Attribute values a client chose (tool names; session names only when asked) are
made visible as ``/metrics`` shows them (``render.visible``).

``start`` builds the SDK's meter provider from the standard environment variables
(``OTEL_METRICS_EXPORTER``: ``otlp``, the default, ``console`` (to stderr: a
proxy's stdout is its client's) or ``none``; ``OTEL_EXPORTER_OTLP_PROTOCOL``,
``http/protobuf`` by default, or ``grpc`` with its exporter installed; the OTLP
exporter reads its endpoint, headers and timeout itself, the reader
``OTEL_METRIC_EXPORT_INTERVAL``, the resource ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``). Its mistakes are ``TelemetryError`` (exit 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import metrics

from ..render.visible import visible
from .errors import NEEDS_SDK, TelemetryError

__all__ = ["Exporter", "instrument_name", "observe", "start"]

SCOPE = "loop_brake_cli"
UNITS = {
    "calls": "{call}",
    "session_calls": "{call}",
    "fail_open": "{call}",
    "store_decisions": "{call}",
    "refused": "{request}",
    "clients_refused": "{request}",
    "store_ends_late": "{end}",
    "sessions_held": "{session}",
    "sessions_evicted": "{session}",
}
EXPORTERS = ("otlp", "console", "none")


def instrument_name(family: str) -> str:
    """``loop_brake_calls_total`` -> ``loop_brake.calls`` (module docstring)."""
    base = family.removeprefix("loop_brake_").removesuffix("_total")
    return f"loop_brake.{base}"


def observe(source: Any, meter_provider: Any = None) -> None:
    """One asynchronous instrument per family of ``source.families()`` on
    ``meter_provider`` (default: the application's global one); the store latency
    histogram too, where ``source.store_latency()`` gives its hooks and bounds."""
    provider = meter_provider or metrics.get_meter_provider()
    meter = provider.get_meter(SCOPE)
    for family in source.families():
        if family.kind == "histogram":
            continue
        name = instrument_name(family.name)
        unit = UNITS.get(name.removeprefix("loop_brake."), "")
        callbacks = [_reader(source, family.name)]
        if family.kind == "counter":
            meter.create_observable_counter(name, callbacks, unit, family.help)
        else:
            meter.create_observable_gauge(name, callbacks, unit, family.help)
    latency = getattr(source, "store_latency", None)
    found = None if latency is None else latency()
    if found is not None:
        hooks, bounds = found
        histogram = meter.create_histogram(
            "loop_brake.store_seconds",
            "s",
            "Seconds each store round trip took as the gateway waited for it.",
            explicit_bucket_boundaries_advisory=list(bounds),
        )
        hooks.append(histogram.record)


def _reader(source: Any, name: str) -> Callable[[Any], Iterable[Any]]:
    """The callback that reports family ``name``'s samples, read at each collection."""

    def read(_options: Any) -> Iterable[Any]:
        for family in source.families():
            if family.name == name:
                return [_observation(labels, value) for labels, value in family.samples]
        return []

    return read


def _observation(labels: Iterable[tuple[str, str]], value: int) -> Any:
    return metrics.Observation(value, {key: visible(text) for key, text in labels})


class Exporter:
    """A meter provider of the SDK, exporting as the environment says; ``shutdown``
    exports what was counted last (the gateway and the proxy call it on their way out)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def observe(self, source: Any) -> None:
        observe(source, self.provider)

    def shutdown(self) -> None:
        self.provider.shutdown()


def start(service: str, environ: Any = None) -> Exporter:
    """The exporter the ``OTEL_*`` variables of ``environ`` (default ``os.environ``)
    describe, for a process named ``service`` unless they name it."""
    env = os.environ if environ is None else environ
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise TelemetryError(NEEDS_SDK) from None
    readers = [PeriodicExportingMetricReader(made) for made in _exporters(env)]
    _say_failures(service)
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        # The SDK then makes every meter a no-op: asked for metrics, the operator
        # would otherwise find only an empty dashboard.
        print(
            f"{_prog(service)}: --otel: OTEL_SDK_DISABLED is true: no metrics are exported",
            file=sys.stderr,
        )
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": service}))
    return Exporter(MeterProvider(metric_readers=readers, resource=resource))


def _say_failures(service: str) -> None:
    """An export that fails (a Collector that cannot be reached) is told on stderr, one
    line each, named as ours: the SDK logs it (``opentelemetry`` loggers), and a
    process that set up no logging would print it bare."""
    import logging

    logger = logging.getLogger("opentelemetry")
    if logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{_prog(service)}: opentelemetry: %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False


def _prog(service: str) -> str:
    """``loop-brake-mcp-proxy`` -> ``loop-brake mcp-proxy``, as the command's own lines."""
    return service.replace("loop-brake-", "loop-brake ", 1)


def _exporters(env: Any) -> list[Any]:
    names = [n.strip() for n in env.get("OTEL_METRICS_EXPORTER", "otlp").split(",") if n.strip()]
    out = []
    for name in names or ["otlp"]:
        if name not in EXPORTERS:
            raise TelemetryError(
                f"OTEL_METRICS_EXPORTER: {visible(name)!r} is not one loop-brake starts "
                f"({', '.join(EXPORTERS)}; the gateway's --metrics serves Prometheus text)"
            )
        if name == "console":
            from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

            out.append(ConsoleMetricExporter(out=sys.stderr))
        elif name == "otlp":
            out.append(_otlp(env))
    return out


def _otlp(env: Any) -> Any:
    """The OTLP exporter for the protocol asked (``http/protobuf`` by default)."""
    protocol = env.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol == "http/protobuf":
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
        except ImportError:
            raise TelemetryError(NEEDS_SDK) from None
        return OTLPMetricExporter()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcExporter,
            )
        except ImportError:
            raise TelemetryError(
                "OTLP over gRPC needs its exporter: "
                "pip install opentelemetry-exporter-otlp-proto-grpc"
            ) from None
        return GrpcExporter()
    raise TelemetryError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL: {visible(protocol)!r} is not supported "
        "(http/protobuf, or grpc with opentelemetry-exporter-otlp-proto-grpc)"
    )
