"""Metrics about the brake, for ``GET /metrics`` and for OpenTelemetry (opt-in).

``counts`` is the one place a front-end counts the calls it judged (``CallCounts``)
and the shape both renderers read (``Family``); ``brake_metrics`` the families of
one ``LoopBrake`` (the library, ``mcp-proxy``); ``otel`` the OpenTelemetry
exporter, imported only when asked (it needs the ``otel`` extra): ``--otel`` on
``mcp-gateway`` and ``mcp-proxy`` (``start_exporter``), ``export_metrics`` in the
library. Nothing here sees an argument, and a session name only when asked.
"""

from __future__ import annotations

from typing import Any

from .brake_metrics import BrakeMetrics
from .errors import NEEDS_SDK, TelemetryError

__all__ = ["BrakeMetrics", "TelemetryError", "export_metrics", "start_exporter"]


def export_metrics(brake: Any, *, meter_provider: Any = None, sessions: bool = False) -> Any:
    """Report ``brake``'s calls (``check``, ``enforce``, ``wrap_execute``,
    ``decorate_tool``, ``attach``) as OpenTelemetry instruments on ``meter_provider``
    (default: the application's global one, as libraries do); session keys as an
    attribute only with ``sessions``. Returns the ``BrakeMetrics`` it reads.
    ``TelemetryError`` when the OpenTelemetry API is not installed."""
    otel = _otel()
    found = BrakeMetrics(sessions=sessions)
    found.watch(brake)
    brake.counts = found.counts
    otel.observe(found, meter_provider)
    return found


def start_exporter(service: str) -> Any:
    """The SDK's exporter as the ``OTEL_*`` environment variables describe it
    (``otel.start``); ``TelemetryError`` when the extra is missing or a variable wrong."""
    return _otel().start(service)


def _otel() -> Any:
    try:
        from . import otel
    except ImportError:
        raise TelemetryError(NEEDS_SDK) from None
    return otel
