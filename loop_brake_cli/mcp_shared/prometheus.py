"""The Prometheus text exposition format (version 0.0.4), written by hand.

A scrape is a few dozen lines; the format is three rules (a ``# HELP`` and a
``# TYPE`` line per family, one ``name{label="value"} number`` line per series,
a histogram as cumulative ``_bucket`` series with ``le`` and its ``_sum`` and
``_count``), so no client library is needed (and none is imported: the
front-ends stay as light as they are).

Label values are what a client chose (tool names; session names only when the
operator asks): each is first made visible (``render.visible``: controls,
separators, bidi controls and lone surrogates as escapes), then escaped as the
format says (backslash, double quote, line feed), so no value can end its
series early, forge another line, or carry a control to the dashboard.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..render.visible import visible

__all__ = ["CONTENT_TYPE", "Histogram", "exposition", "family", "label_value", "series"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = Sequence[tuple[str, str]]


def label_value(value: str) -> str:
    """``value`` as the inside of a quoted label value: visible, then escaped."""
    shown = visible(value)
    return shown.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    return repr(value)


def series(name: str, labels: Labels, value: float) -> str:
    """One sample line (without its line feed)."""
    if not labels:
        return f"{name} {_number(value)}"
    inside = ",".join(f'{key}="{label_value(text)}"' for key, text in labels)
    return f"{name}{{{inside}}} {_number(value)}"


def family(name: str, kind: str, help_text: str, lines: Iterable[str]) -> list[str]:
    """A metric family: its HELP and TYPE lines, then its samples."""
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *lines]


def exposition(families: Iterable[Any]) -> list[str]:
    """The lines of ``families`` (``telemetry.counts.Family``), in their order."""
    out: list[str] = []
    for found in families:
        if found.kind == "histogram":
            lines = found.histogram.lines(found.name, ())
        else:
            lines = [series(found.name, labels, value) for labels, value in found.samples]
        out += family(found.name, found.kind, found.help, lines)
    return out


class Histogram:
    """Observations counted into fixed upper bounds (seconds); not thread-safe on its
    own (its owner holds a lock)."""

    __slots__ = ("bounds", "counts", "total", "count")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * len(self.bounds)  # per bucket, not cumulative
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[index] += 1
                break
        self.total += value
        self.count += 1

    def copy(self) -> Histogram:
        """Its counts as they are now (read under its owner's lock)."""
        copied = Histogram(self.bounds)
        copied.counts = list(self.counts)
        copied.total, copied.count = self.total, self.count
        return copied

    def lines(self, name: str, labels: Labels) -> list[str]:
        """Its ``_bucket`` (cumulative, ``+Inf`` last), ``_sum`` and ``_count`` lines."""
        out = []
        running = 0
        for bound, count in zip(self.bounds, self.counts, strict=True):
            running += count
            out.append(series(f"{name}_bucket", [*labels, ("le", _number(bound))], running))
        out.append(series(f"{name}_bucket", [*labels, ("le", "+Inf")], self.count))
        out.append(series(f"{name}_sum", labels, self.total))
        out.append(series(f"{name}_count", labels, self.count))
        return out
