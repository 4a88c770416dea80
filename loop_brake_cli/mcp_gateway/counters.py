"""What the gateway counts about its own health: plain numbers anyone may read.

One ``GatewayCounters`` per gateway process, shared by the brake (``decide``), the
store's worker pool (``store_calls``), the session table's bounds and the HTTP
side's (``limits``). Every field is a plain ``int``
attribute, only ever added to, on the event loop's thread; ``store_latency`` is a
list of hooks, each called with the seconds one store round trip took (a metrics
exporter appends its own). Nothing here names a session, a tool or an argument:
counts only.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["GatewayCounters"]


class GatewayCounters:
    """The gateway's counts (module docstring); all start at 0."""

    def __init__(self) -> None:
        self.store_decisions = 0
        """Calls whose decision asked the store (in the worker pool)."""
        self.fail_open_deadline = 0
        """Calls decided without the store because it did not answer within
        ``--store-deadline`` (allowed uncounted; denied with ``--fail-closed``)."""
        self.fail_open_store = 0
        """Calls decided without the store because it failed (unreachable, circuit open)."""
        self.end_calls_late = 0
        """Ends of exchanges the store did not hear within the deadline."""
        self.sessions_evicted = 0
        """Sessions dropped from memory because ``--max-sessions`` were held."""
        self.sessions_expired = 0
        """Sessions dropped from memory after ``--session-idle`` seconds unused."""
        self.connections_refused = 0
        """Connections answered 503 at once because ``--max-connections`` were open."""
        self.requests_timed_out = 0
        """Connections closed because a request (headers and body) did not arrive
        within ``--request-timeout`` (a slow or stalled client)."""
        self.bodies_too_large = 0
        """POST bodies refused with 413 (over ``--max-body``)."""
        self.store_latency: list[Callable[[float], None]] = []
        """Hooks: each is called with the seconds of every store round trip."""

    def store_answered_in(self, seconds: float) -> None:
        """One store round trip took ``seconds``: every hook hears it."""
        for hook in self.store_latency:
            hook(seconds)

    def as_dict(self) -> dict[str, int]:
        """Every count by name (the bench prints them)."""
        return {name: value for name, value in vars(self).items() if isinstance(value, int)}
