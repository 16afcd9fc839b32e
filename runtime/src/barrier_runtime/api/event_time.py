"""Reading event times from records: a column (vectorised) or a function per record.

>>> import pyarrow as pa
>>> from barrier_runtime.api import batch as batch_mod
>>> arrow = pa.record_batch({"ts": pa.array([1_500, 2_000], pa.timestamp("ms"))})
>>> timestamps_of(batch_mod.Batch.from_arrow(arrow), "ts").tolist()
[1500, 2000]
>>> rows = batch_mod.Batch.from_rows([{"t": 7}, {"t": 9}])
>>> timestamps_of(rows, lambda r: r["t"] * 1000).tolist()
[7000, 9000]
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.api import batch as batch_mod

Timestamps = str | Callable[[batch_mod.Record], int]
"""A column name, or a function returning a record's event time in ms since the epoch.

A column may be an integer (ms) or an Arrow ``timestamp`` of any unit; in rows, a
``datetime`` counts too (a naive one as UTC, as Arrow reads it)."""

_MS_PER = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}
"""Per Arrow timestamp unit: (multiply, floor-divide) to get milliseconds."""


class EventTimeError(ValueError):
    """A record has no usable event time; the message names the record and the reason."""

    def __init__(self, message: str, record: batch_mod.Record | None = None) -> None:
        super().__init__(message)
        self.record = record


def timestamps_of(batch: batch_mod.Batch, assigner: Timestamps) -> npt.NDArray[np.int64]:
    """The event time (ms) of every record of ``batch``, in order."""
    if isinstance(assigner, str):
        if batch.arrow_is_exact:
            return _column_ms(batch.to_arrow(), assigner)
        return _from_rows(batch.rows(), lambda r: r[assigner], f"column {assigner!r}")
    return _from_rows(batch.rows(), assigner, "the timestamp function")


def _column_ms(arrow: pa.RecordBatch, name: str) -> npt.NDArray[np.int64]:
    index = arrow.schema.get_field_index(name)
    if index < 0:
        raise EventTimeError(f"records have no event-time column {name!r}")
    column = arrow.column(index)
    if column.null_count:
        first = pc.index(pc.is_null(column), True).as_py()
        raise EventTimeError(
            f"event-time column {name!r} is null in a record", arrow.slice(first, 1).to_pylist()[0]
        )
    kind = column.type
    if pa.types.is_timestamp(kind):
        times = column.cast(pa.int64()).to_numpy()
        mul, div = _MS_PER[kind.unit]
        return np.asarray(times * mul // div if (mul, div) != (1, 1) else times, dtype=np.int64)
    if pa.types.is_integer(kind):
        return np.asarray(column.to_numpy(), dtype=np.int64)
    raise EventTimeError(
        f"event-time column {name!r} is {kind}: use an integer of ms since the epoch or an "
        "Arrow timestamp, or give a function that returns one"
    )


def _from_rows(
    rows: tuple[batch_mod.Record, ...], fn: Callable[[batch_mod.Record], Any], what: str
) -> npt.NDArray[np.int64]:
    out = np.empty(len(rows), dtype=np.int64)
    for i, record in enumerate(rows):
        try:
            value = fn(record)
        except Exception as exc:
            raise EventTimeError(f"{what} failed on a record: {exc!r}", record) from exc
        if isinstance(value, datetime.datetime):
            value = _datetime_ms(value)
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise EventTimeError(
                f"{what} gave {value!r} ({type(value).__name__}), not an int of ms since the epoch",
                record,
            )
        out[i] = value
    return out


def _datetime_ms(value: datetime.datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is UTC, as Arrow reads it."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    return delta // datetime.timedelta(milliseconds=1)
