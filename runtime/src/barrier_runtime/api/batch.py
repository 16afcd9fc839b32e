"""The unit of data on a channel: a batch of records, as rows or as an Arrow batch.

Records are ``dict``s of column name to value. A :class:`Batch` holds either
Python rows or a ``pyarrow.RecordBatch`` and converts lazily, so per-record
steps and batch steps can be chained without paying a conversion at every
step. Channels that cross a process boundary frame batches as Arrow IPC.

>>> b = Batch.from_rows([{"k": "a", "v": 1}, {"k": "b", "v": 2}])
>>> len(b), b.to_arrow().num_columns
(2, 2)
>>> Batch.from_arrow(b.to_arrow()).rows()[1]
{'k': 'b', 'v': 2}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

Record = dict[str, Any]


class Batch:
    """An immutable batch of records; hold rows or an Arrow batch, convert on demand."""

    __slots__ = ("_arrow", "_arrow_exact", "_rows")

    def __init__(self, rows: Sequence[Record] | None, arrow: pa.RecordBatch | None) -> None:
        """Given both forms, the caller promises ``rows == arrow.to_pylist()``."""
        if rows is None and arrow is None:
            raise ValueError("a batch needs rows or an Arrow record batch")
        self._rows = None if rows is None else tuple(rows)
        self._arrow = arrow
        self._arrow_exact = arrow is not None

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
            self._rows = tuple(self._arrow.to_pylist())
        return self._rows

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
