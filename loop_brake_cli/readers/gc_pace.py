"""The cyclic GC's pace over a long run of records: ``relaxed_gc``.

Apart from the fast path (fastpath.py), which uses it too, so that ``replay``
does not import filter's fast path, its prover and its templates for this alone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["relaxed_gc"]


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """Raise the cyclic GC thresholds for the run, and restore them after.

    Session slots are long-lived objects: with the default thresholds the cyclic
    GC rescans them over and over (29% of the time with 1,000,000 sessions).
    Young cycles are still collected. A slot is a named tuple, which the GC never
    untracks (it untracks exact tuples only), so on the way out everything still
    tracked is moved to the oldest generation (freeze, then unfreeze): otherwise
    the first collection under the restored thresholds scans every slot of the
    run once more (0.47 s with 1,000,000 sessions)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 50, 1000)
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.set_threshold(*thresholds)
