"""Settle pyarrow's lazy import of pandas before a worker takes in data.

When pandas is installed, pyarrow imports it the first time it converts Python
objects (``pa.array`` of a list asks whether the list is pandas-like; so do
``RecordBatch.from_pylist`` and every conversion built on it). A worker makes
that conversion on its first batch of per-record rows. Measured on this
project's machines (pyarrow 26, pandas 2.3): 0.23 s and 57 MiB of resident
memory, once per process.

:func:`settle` makes the conversion at start-up instead, so the stall is not
taken by the first records of the stream (and their latency), and the memory is
part of what the worker holds before data flows, not mistaken for data in
flight (the back-pressure memory bound is measured from there). Without pandas
it costs a few microseconds.

>>> settle()
>>> settle()  # once per process is enough; again is cheap
"""

from __future__ import annotations

import pyarrow as pa


def settle() -> None:
    """Make pyarrow's first conversion of Python objects (and its pandas check) now."""
    pa.array([0])
