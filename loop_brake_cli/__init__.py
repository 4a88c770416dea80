"""loop-brake-cli: the dsh-loop-brake exact-match circuit breaker, in Python.

The public API imports neither click nor rich, so an agent host can use the
brake without the CLI::

    from loop_brake_cli import LoopBrake, LoopBrakeError
    brake = LoopBrake(max_repeats=3)
    brake.enforce("search", {"q": "weather"}, session_id="s1")  # raises on the 3rd
"""

from __future__ import annotations

from .core.brake import (
    LoopBrake,
    LoopBrakeError,
    LoopBrakeStop,
    decorate_tool,
    session_key,
    wrap_execute,
)
from .core.canonical import JSONInputError, call_hash, canonical_json, hash_prefix, parse_json
from .core.limits import (
    DEFAULT_MAX_REPEATS,
    ENV_VAR,
    InvalidMaxRepeatsError,
    normalize_max_repeats,
    resolve_max_repeats,
)
from .core.table import set_url_opener
from .core.verdicts import Verdict, deny_message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

    from .integrations.attachment import attach, dispose


def _open_store(url: str, warn: Any = None) -> Any:
    """``LoopBrake(store=URL)``: the backend registered for the URL's scheme
    (``stores.open_store``). Wired here, where the layers meet: the core imports no
    backend, and ``stores`` (with it the backends' modules) is imported on first use."""
    from .stores import open_store

    return open_store(url, warn=warn)


set_url_opener(_open_store)


def __getattr__(name: str) -> Any:
    """``attach`` and ``dispose``, imported on first use: ``import loop_brake_cli``
    stays as cheap as before they existed."""
    if name in ("attach", "dispose"):
        from .integrations import attachment

        globals().update(attach=attachment.attach, dispose=attachment.dispose)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_REPEATS",
    "ENV_VAR",
    "InvalidMaxRepeatsError",
    "JSONInputError",
    "LoopBrake",
    "LoopBrakeError",
    "LoopBrakeStop",
    "Verdict",
    "attach",
    "call_hash",
    "canonical_json",
    "decorate_tool",
    "deny_message",
    "dispose",
    "hash_prefix",
    "normalize_max_repeats",
    "parse_json",
    "resolve_max_repeats",
    "session_key",
    "wrap_execute",
]
