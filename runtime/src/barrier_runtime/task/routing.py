"""Keyed routing: splitting a batch by the subtask that owns each record's key group.

Two paths give the same split. An Arrow batch keyed by a column is routed in
one vectorised pass: key groups of the whole column
(:func:`~barrier_runtime.state.key_groups.key_groups_of`), owners, one stable
sort of the (small-integer) owners, one ``take`` and zero-copy slices. Any
other batch is routed record by record through the key function. Both keep
the records' relative order within each part.

>>> import pyarrow as pa
>>> from barrier_runtime.api import batch as batch_mod
>>> from barrier_runtime.state import key_groups
>>> arrow = pa.record_batch({"k": list(range(8))})
>>> key_fn = lambda r: r["k"]
>>> vectorised = split_by_owner(batch_mod.Batch.from_arrow(arrow), key_fn, "k", 2, 128)
>>> per_record = split_by_owner(batch_mod.Batch.from_rows(arrow.to_pylist()), key_fn, "k", 2, 128)
>>> [(o, b.rows()) for o, b in vectorised] == [(o, b.rows()) for o, b in per_record]
True
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.state import key_groups


def split_by_owner(
    batch: batch_mod.Batch,
    key_fn: steps.KeyFn,
    key_column: str | None,
    parallelism: int,
    max_parallelism: int,
    step_id: str = "",
) -> list[tuple[int, batch_mod.Batch]]:
    """``(owner subtask, records)`` for every owner that gets records, in owner order.

    A key function that raises is reported as the user-function error of ``step_id``
    (the step whose output is keyed).
    """
    if key_column is not None and batch.holds_arrow:
        arrow = batch.to_arrow()
        groups = key_groups.key_groups_of(arrow.column(key_column), max_parallelism)
        owners = key_groups.subtasks_for_key_groups(groups, parallelism, max_parallelism)
        return _split_arrow(batch, arrow, owners, parallelism)
    parts: dict[int, list[batch_mod.Record]] = {}
    record: batch_mod.Record | None = None
    try:
        for record in batch.rows():
            kg = key_groups.key_group_for(key_fn(record), max_parallelism)
            owner = key_groups.subtask_for_key_group(kg, parallelism, max_parallelism)
            parts.setdefault(owner, []).append(record)
    except Exception as exc:
        raise task_failure.UserFunctionError(step_id, record, exc) from exc
    return [(owner, batch_mod.Batch.from_rows(parts[owner])) for owner in sorted(parts)]


def _split_arrow(
    batch: batch_mod.Batch,
    arrow: pa.RecordBatch,
    owners: npt.NDArray[np.int64],
    parallelism: int,
) -> list[tuple[int, batch_mod.Batch]]:
    if len(owners) == 0:
        return []
    first, last = int(owners.min()), int(owners.max())
    if first == last:
        return [(first, batch)]
    # Owners are < 32768, so a stable int16 sort is a radix sort: linear time.
    order = np.argsort(owners.astype(np.int16), kind="stable")
    grouped = arrow.take(pa.array(order))
    counts = np.bincount(owners, minlength=parallelism)
    out: list[tuple[int, batch_mod.Batch]] = []
    offset = 0
    for owner, count in enumerate(counts.tolist()):
        if count:
            out.append((owner, batch_mod.Batch.from_arrow(grouped.slice(offset, count))))
            offset += count
    return out
