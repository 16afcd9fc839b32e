"""The unit of data on a channel: a batch of records, as rows or as an Arrow batch.

Records are ``dict``s of column name to value. A :class:`Batch` holds either
Python rows or a ``pyarrow.RecordBatch`` and converts lazily, so per-record
steps and batch steps can be chained without paying a conversion at every
step. Channels that cross a process boundary frame batches as Arrow IPC.

Arrow is turned into rows column by column (:func:`arrow_rows`): each column
becomes a Python list once, and every row is built by one dict display whose
shape depends only on the number of columns (1.6x faster than
``RecordBatch.to_pylist``, which indexes a dict of columns per value). A batch
that was split by key on the way (:mod:`~barrier_runtime.task.routing`) may
carry its records' keys, so that the keyed step that receives it in this
process does not call the key function again (:meth:`Batch.keys_for`).

>>> b = Batch.from_rows([{"k": "a", "v": 1}, {"k": "b", "v": 2}])
>>> len(b), b.to_arrow().num_columns
(2, 2)
>>> Batch.from_arrow(b.to_arrow()).rows()[1]
{'k': 'b', 'v': 2}
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

Record = dict[str, Any]


class Batch:
    """An immutable batch of records; hold rows or an Arrow batch, convert on demand."""

    __slots__ = ("_arrow", "_arrow_exact", "_key_fn", "_keys", "_rows")

    def __init__(self, rows: Sequence[Record] | None, arrow: pa.RecordBatch | None) -> None:
        """Given both forms, the caller promises ``rows == arrow.to_pylist()``."""
        if rows is None and arrow is None:
            raise ValueError("a batch needs rows or an Arrow record batch")
        self._rows = None if rows is None else tuple(rows)
        self._arrow = arrow
        self._arrow_exact = arrow is not None
        self._key_fn: Callable[[Record], Any] | None = None
        self._keys: Sequence[Any] = ()

    @classmethod
    def from_rows(cls, rows: Sequence[Record]) -> Batch:
        return cls(rows, None)

    @classmethod
    def from_arrow(cls, batch: pa.RecordBatch) -> Batch:
        return cls(None, batch)

    @property
    def holds_arrow(self) -> bool:
        """Whether the Arrow form is at hand (batch functions can use it without converting)."""
        return self._arrow is not None

    @property
    def holds_rows(self) -> bool:
        """Whether the rows are at hand (made, or converted from Arrow already)."""
        return self._rows is not None

    @property
    def arrow_is_exact(self) -> bool:
        """Whether the Arrow form holds exactly the rows (built from Arrow, not from rows).

        Rows converted to Arrow may come back different (a tuple as a list, a
        missing column as ``None``), so only an exact batch may be split or
        sent as its Arrow form without changing the records.
        """
        return self._arrow_exact

    def rows(self) -> tuple[Record, ...]:
        if self._rows is None:
            assert self._arrow is not None
            self._rows = tuple(arrow_rows(self._arrow))
        return self._rows

    def with_keys(self, key_fn: Callable[[Record], Any], keys: Sequence[Any]) -> Batch:
        """The same records, noting that ``keys[i]`` is ``key_fn(self.rows()[i])``."""
        if len(keys) != len(self):
            raise ValueError(f"{len(keys)} keys for a batch of {len(self)} records")
        keyed = Batch(self._rows, self._arrow)
        keyed._arrow_exact = self._arrow_exact
        keyed._key_fn = key_fn
        keyed._keys = keys
        return keyed

    def keys_for(self, key_fn: Callable[[Record], Any]) -> Sequence[Any] | None:
        """The records' keys under ``key_fn`` if they were computed already, else ``None``.

        >>> b = Batch.from_rows([{"k": 1}]).with_keys(len, [1])
        >>> b.keys_for(len), b.keys_for(str)
        ([1], None)
        """
        return self._keys if key_fn is self._key_fn else None

    def to_arrow(self) -> pa.RecordBatch:
        if self._arrow is None:
            assert self._rows is not None
            self._arrow = pa.RecordBatch.from_pylist(list(self._rows))
        return self._arrow

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        assert self._arrow is not None
        return int(self._arrow.num_rows)

    def __repr__(self) -> str:
        return f"Batch({len(self)} records)"


_MAX_DISPLAY_COLUMNS = 64


def arrow_rows(arrow: pa.RecordBatch) -> list[Record]:
    """``arrow.to_pylist()``, built column-wise: the same dicts, in the same key order.

    >>> arrow_rows(pa.record_batch({"a": [1, None], "b": ["x", "y"]}))
    [{'a': 1, 'b': 'x'}, {'a': None, 'b': 'y'}]
    """
    names = arrow.schema.names
    if not 0 < len(names) <= _MAX_DISPLAY_COLUMNS or len(set(names)) != len(names):
        return list(arrow.to_pylist())
    columns = [column.to_pylist() for column in arrow.columns]
    return _rows_builder(len(names))(columns, *names)


@functools.cache
def _rows_builder(arity: int) -> Callable[..., list[Record]]:
    """``f(columns, name0, ..., name{arity-1})``: one dict display per row of ``columns``.

    The generated source depends on ``arity`` alone (column names are arguments, never code).
    """
    names = ", ".join(f"n{i}" for i in range(arity))
    values = "".join(f"v{i}, " for i in range(arity))
    items = ", ".join(f"n{i}: v{i}" for i in range(arity))
    source = f"lambda columns, {names}: [{{{items}}} for {values} in zip(*columns)]"
    builder: Callable[..., list[Record]] = eval(source, {"__builtins__": {"zip": zip}})
    return builder
