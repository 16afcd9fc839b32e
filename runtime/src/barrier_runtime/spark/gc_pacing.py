"""Pacing of the garbage collector's young collections while a worker hosts a slice.

The per-record path allocates a dict per record, at both ends of a keyed
edge, and keeps a batch of them alive while it is processed. CPython's
default first-generation threshold (700 net container allocations) then
runs a young collection a dozen times per 8,192-record batch, each
traversing records that are all still alive and promoting them to the next
generation, where they are traversed again. Measured on W2 (P = 2, 2,000,000
events): about 3,000 young and 270 middle collections per worker, 0.3-1.2 s
of collector time per worker, all of it finding nothing (records form no
cycles; reference counting frees them).

:func:`paced` raises the first-generation threshold above what a few
batches allocate, so collections happen when garbage accumulates, not per
batch. The older generations' thresholds stay as they are, and so does
reference counting: memory is freed as before, only cyclic garbage waits
longer. The setting is process-wide, so it is taken while the first hosted
slice runs and restored when the last one ends (slices on threads nest).

>>> import gc
>>> before = gc.get_threshold()
>>> with paced(50_000):
...     gc.get_threshold()[0]
50000
>>> gc.get_threshold() == before
True
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

YOUNG_THRESHOLD = 100_000
"""Net container allocations between young collections while a slice runs (CPython: 700)."""


class _Holders:
    """How many slices of this process are inside :func:`paced`, and the pacing before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.saved: tuple[int, int, int] = gc.get_threshold()


_HOLDERS = _Holders()


@contextlib.contextmanager
def paced(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Young collections every ``young`` net allocations while inside; the old pacing after."""
    holders = _HOLDERS
    with holders.lock:
        if holders.count == 0:
            holders.saved = gc.get_threshold()
            first, middle, old = holders.saved
            gc.set_threshold(max(young, first), middle, old)
        holders.count += 1
    try:
        yield
    finally:
        with holders.lock:
            holders.count -= 1
            if holders.count == 0:
                gc.set_threshold(*holders.saved)
