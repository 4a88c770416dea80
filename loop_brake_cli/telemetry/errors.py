"""What goes wrong when OpenTelemetry is asked for, in words (no OpenTelemetry import)."""

from __future__ import annotations

__all__ = ["NEEDS_SDK", "TelemetryError"]

NEEDS_SDK = "OpenTelemetry metrics need the otel extra: pip install 'loop-brake-cli[otel]'"


class TelemetryError(RuntimeError):
    """The exporter asked for cannot start: the extra is missing, or an ``OTEL_*``
    variable names what it cannot do. The message says which, for a person."""
