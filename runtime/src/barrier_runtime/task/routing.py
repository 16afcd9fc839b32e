"""Keyed routing: splitting a batch by the subtask that owns each record's key group.

Two paths give the same split. An Arrow batch keyed by a column is routed in
one vectorised pass: key groups of the whole column
(:func:`~barrier_runtime.state.key_groups.key_groups_of`), owners, one stable
sort of the (small-integer) owners, one ``take`` and zero-copy slices. Any
other batch is routed through the key function: the keys of all its records
first, then their key groups in one call
(:func:`~barrier_runtime.state.key_groups.key_groups_for_keys`: vectorised for
integer keys, cached for strings and bytes), then the same sort. A batch
whose Arrow form is exact is split by ``take`` as well, each part keeping the
rows already built. A batch that goes to one owner only is passed on as is.
A key function that only looks a column up (``lambda r: r["key"]``, recognised
by its bytecode: :func:`column_looked_up`) routes an exact Arrow batch by that
column, vectorised, when the column holds keys the function would give as they
are (integers, strings or bytes, no nulls): no row is built to compute keys.
All paths keep the records' relative order within each part, and the parts
of a batch routed through the key function carry their records' keys
(:meth:`~barrier_runtime.api.batch.Batch.with_keys`): a keyed step that gets a
part in this process does not call the key function again.

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

import inspect
import types
from collections.abc import Sequence
from typing import Any

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
    if key_column is None and batch.arrow_is_exact:
        key_column = _plain_key_column(batch.to_arrow(), column_looked_up(key_fn))
    if key_column is not None and batch.arrow_is_exact:
        arrow = batch.to_arrow()
        groups = key_groups.key_groups_of(arrow.column(key_column), max_parallelism)
        owners = key_groups.subtasks_for_key_groups(groups, parallelism, max_parallelism)
        return [(owner, part) for owner, part, _ in _split_arrow(batch, arrow, owners, parallelism)]
    rows = batch.rows()
    try:
        keys = list(map(key_fn, rows))
        groups = key_groups.key_groups_for_keys(keys, max_parallelism)
    except Exception as exc:
        record, first = _first_failure(rows, key_fn, max_parallelism)
        raise task_failure.UserFunctionError(step_id, record, first or exc) from (first or exc)
    owners = key_groups.subtasks_for_key_groups(groups, parallelism, max_parallelism)
    if batch.arrow_is_exact:
        parts = _split_arrow(batch, batch.to_arrow(), owners, parallelism, rows, keys)
    else:
        parts = _split_rows(batch, rows, owners, parallelism, keys)
    return [(owner, part.with_keys(key_fn, part_keys)) for owner, part, part_keys in parts]


_LOOKUP = (lambda record: record["column"]).__code__
_NOT_PLAIN = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def column_looked_up(key_fn: object) -> str | None:
    """The column ``key_fn`` only looks up, as ``lambda r: r["key"]`` does, else ``None``.

    >>> column_looked_up(lambda r: r["key"]), column_looked_up(lambda r: r["key"] * 2)
    ('key', None)
    """
    code = getattr(key_fn, "__code__", None)
    if (
        not isinstance(code, types.CodeType)
        or code.co_code != _LOOKUP.co_code
        or code.co_argcount != 1
        or code.co_kwonlyargcount
        or code.co_flags & _NOT_PLAIN
        or len(code.co_consts) != len(_LOOKUP.co_consts)
    ):
        return None
    column = code.co_consts[1]
    return column if type(column) is str else None


def _plain_key_column(arrow: pa.RecordBatch, column: str | None) -> str | None:
    """``column`` if every value of it is a key as it is (int, str or bytes; no nulls)."""
    if column is None:
        return None
    index = arrow.schema.get_field_index(column)  # -1 when absent or not unique
    if index < 0 or arrow.column(index).null_count:
        return None
    kind = arrow.schema.field(index).type
    plain = pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_binary(kind)
    return column if plain or pa.types.is_large_string(kind) else None


def _first_failure(
    rows: Sequence[batch_mod.Record], key_fn: steps.KeyFn, max_parallelism: int
) -> tuple[batch_mod.Record | None, Exception | None]:
    """The first record whose key the key function cannot give or hash, and the error."""
    for record in rows:
        try:
            key_groups.key_group_for(key_fn(record), max_parallelism)
        except Exception as exc:
            return record, exc
    return None, None


def _split_rows(
    batch: batch_mod.Batch,
    rows: Sequence[batch_mod.Record],
    owners: npt.NDArray[np.int64],
    parallelism: int,
    keys: list[Any],
) -> list[tuple[int, batch_mod.Batch, list[Any]]]:
    """Split rows and their ``keys`` alike: ``(owner, part, the part's keys)``."""
    whole = _whole(batch, owners)
    if whole is not None:
        return [(owner, part, keys) for owner, part in whole]
    order, runs = _runs(owners, parallelism)
    positions = order.tolist()
    out: list[tuple[int, batch_mod.Batch, list[Any]]] = []
    for owner, offset, count in runs:
        chosen = positions[offset : offset + count]
        part = batch_mod.Batch.from_rows([rows[i] for i in chosen])
        out.append((owner, part, [keys[i] for i in chosen]))
    return out


def _split_arrow(
    batch: batch_mod.Batch,
    arrow: pa.RecordBatch,
    owners: npt.NDArray[np.int64],
    parallelism: int,
    rows: Sequence[batch_mod.Record] | None = None,
    keys: list[Any] | None = None,
) -> list[tuple[int, batch_mod.Batch, list[Any]]]:
    """Split by ``take``: ``(owner, part, the part's keys)``; given ``rows`` (the Arrow
    batch's exactly) and their ``keys``, parts keep their rows and keys (else no keys)."""
    whole = _whole(batch, owners)
    if whole is not None:
        return [(owner, part, keys or []) for owner, part in whole]
    order, runs = _runs(owners, parallelism)
    grouped = arrow.take(pa.array(order))
    positions = [] if rows is None else order.tolist()
    out: list[tuple[int, batch_mod.Batch, list[Any]]] = []
    for owner, offset, count in runs:
        part = grouped.slice(offset, count)
        if rows is None or keys is None:
            out.append((owner, batch_mod.Batch.from_arrow(part), []))
        else:
            chosen = positions[offset : offset + count]
            kept = batch_mod.Batch([rows[i] for i in chosen], part)
            out.append((owner, kept, [keys[i] for i in chosen]))
    return out


def _whole(
    batch: batch_mod.Batch, owners: npt.NDArray[np.int64]
) -> list[tuple[int, batch_mod.Batch]] | None:
    """The split when no record or a single owner gets the batch, else ``None``."""
    if len(owners) == 0:
        return []
    first, last = int(owners.min()), int(owners.max())
    return [(first, batch)] if first == last else None


def _runs(
    owners: npt.NDArray[np.int64], parallelism: int
) -> tuple[npt.NDArray[np.intp], list[tuple[int, int, int]]]:
    """The stable order grouping records by owner, and ``(owner, offset, count)`` per owner."""
    # Owners are < 32768, so a stable int16 sort is a radix sort: linear time.
    order = np.argsort(owners.astype(np.int16), kind="stable")
    runs: list[tuple[int, int, int]] = []
    offset = 0
    for owner, count in enumerate(np.bincount(owners, minlength=parallelism).tolist()):
        if count:
            runs.append((owner, offset, count))
            offset += count
    return order, runs
