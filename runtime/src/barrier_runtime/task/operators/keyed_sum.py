"""Vectorised keyed operators: whole batches in, whole batches out, state in NumPy arrays.

:class:`KeyedSumOperator` runs ``KeyedStream.sum``. An Arrow batch is
processed column-wise (key and value columns to NumPy, one
:meth:`~barrier_runtime.state.keyed_sums.KeyedSums.running_sums` call, the
sums appended as a column); a batch of Python rows (from per-record steps or
a replay of unaligned channel state) takes the same state update with the
columns gathered from the rows, and stays rows. Either way the output equals
that of the per-record ``aggregate`` it replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.state import key_groups, keyed_sums
from barrier_runtime.task.operators import base, registry


class NotAnIntegerColumnError(TypeError):
    """The column a keyed sum adds up does not hold integers."""


class KeyedSumOperator(base.StatefulOperator):
    """The running sum of ``step.column`` per key, emitted with every record."""

    def __init__(
        self,
        step: steps.KeyedSumStep,
        emit: base.Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
    ) -> None:
        super().__init__(step.step_id, emit)
        if step.input.key_column is None:
            raise ValueError(f"keyed sum {step.step_id!r} needs an input keyed by a column")
        self.key_column = step.input.key_column
        self.column = step.column
        self.output = step.output
        self.state = keyed_sums.KeyedSums(key_group_range, max_parallelism)

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        if not len(batch):
            return
        if batch.arrow_is_exact:
            self.emit(batch_mod.Batch.from_arrow(self._process_arrow(batch.to_arrow())))
        else:
            self.emit(batch_mod.Batch.from_rows(self._process_rows(batch.rows())))

    def _process_arrow(self, arrow: pa.RecordBatch) -> pa.RecordBatch:
        keys = _key_array(arrow.column(self.key_column))
        values = self._value_array(arrow.column(self.column))
        sums = pa.array(self.state.running_sums(keys, values), type=pa.int64())
        index = arrow.schema.get_field_index(self.output)
        if index >= 0:
            return arrow.set_column(index, self.output, sums)
        return arrow.append_column(self.output, sums)

    def _value_array(self, column: pa.Array) -> npt.NDArray[np.int64]:
        if not pa.types.is_integer(column.type):
            raise NotAnIntegerColumnError(
                f"step {self.step_id!r} sums column {self.column!r} of type {column.type}; "
                "sum adds up integer columns only (use aggregate for other values)"
            )
        if column.null_count:
            column = column.fill_null(0)
        values: npt.NDArray[Any] = column.to_numpy(zero_copy_only=False)
        return values.astype(np.int64, copy=False)

    def _process_rows(self, rows: Sequence[batch_mod.Record]) -> list[batch_mod.Record]:
        keys = _keys_from_values([key_groups.column_key(r[self.key_column]) for r in rows])
        values = np.fromiter((self._row_value(r) for r in rows), dtype=np.int64, count=len(rows))
        sums = self.state.running_sums(keys, values).tolist()
        return [{**r, self.output: s} for r, s in zip(rows, sums, strict=True)]

    def _row_value(self, record: batch_mod.Record) -> int:
        value = record[self.column]
        if value is None:
            return 0
        if not isinstance(value, int):
            raise NotAnIntegerColumnError(
                f"step {self.step_id!r} sums column {self.column!r} but a record holds "
                f"{type(value).__name__} {value!r}; sum adds up integers only"
            )
        return value

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        # Copy now (cheap); encode and compress on the upload thread.
        base.add_keyed_state(builder, self.step_id, self.state)

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)


def _key_array(column: pa.Array) -> keyed_sums.KeyArray:
    ints = key_groups.int64_values(column)
    if ints is not None:
        return ints
    return _keys_from_values([key_groups.column_key(v) for v in column.to_pylist()])


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _keys_from_values(keys: list[Any]) -> keyed_sums.KeyArray:
    """Keys as int64 when all are 64-bit integers (as Arrow would type them), else objects."""
    if all(type(k) is int and _INT64_MIN <= k <= _INT64_MAX for k in keys):
        return np.array(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    out[:] = keys
    return out


@registry.register(steps.KeyedSumStep)
def _keyed_sum(step: steps.KeyedSumStep, ctx: registry.OperatorContext) -> base.Operator:
    return KeyedSumOperator(step, ctx.emit, ctx.key_group_range, ctx.max_parallelism)
