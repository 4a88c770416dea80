"""Whether the optional C reader of event lines (``_event_scan.c``) is here and in use.

Apart from ``fastpath.py`` so that ``loop-brake --version`` can name the reader
without importing the fast path (orjson, the prover, the verdict templates).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (--version's start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["NOT_BUILT", "policy_digest", "reader_name", "scan_event"]

scan_event: Callable[[bytes], tuple[str, str, str, bytes, bytes, bytes, bytes] | None] | None
policy_digest: Callable[[bytes, bytes, tuple[bytes, ...]], bytes | None] | None

try:  # optional: built from _event_scan.c when a C compiler was there at install
    from ._event_scan import SHA_INSTRUCTIONS as _SHA_INSTRUCTIONS
    from ._event_scan import policy_digest, scan_event
except ImportError:  # pragma: no cover - exercised where the extension is not built
    scan_event = policy_digest = None
    _SHA_INSTRUCTIONS = ""

NOT_BUILT = (
    "Python (the optional C reader was not built at install, usually for want of a C "
    "compiler: install gcc and the Python headers, then reinstall loop-brake-cli)"
)


def reader_name() -> str:
    """Which reader ``filter`` uses for event lines (``loop-brake --version``), and why."""
    if scan_event is None:
        return NOT_BUILT
    if os.environ.get("LOOP_BRAKE_PURE_PYTHON"):  # as fastpath.scanner() reads it
        return "Python (LOOP_BRAKE_PURE_PYTHON is set)"
    return f"C with {_SHA_INSTRUCTIONS}" if _SHA_INSTRUCTIONS else "C"
