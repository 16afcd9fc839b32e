"""The streams a dataflow is wired through: :class:`Stream`, :class:`KeyedStream`,
:class:`WindowedStream`.

A stream is the output of one step of its :class:`~barrier_runtime.api.building.StepGraph`;
its methods add the steps downstream of it (``map``, ``key_by``, ``sink``, and on a keyed
stream ``reduce``, ``sum``, ``connect`` and the event-time steps of
:class:`~barrier_runtime.api.keyed_time.EventTimeSteps`). The dataflow owns the steps, their
ids and the rules of the whole graph; a stream only says what to add.

>>> from barrier_runtime.api import Dataflow
>>> from barrier_runtime.testing import TestingSink, TestingSource
>>> flow = Dataflow("keyed")
>>> keyed = flow.source("in", TestingSource([{"k": 1}])).key_by("by-k", "k")
>>> type(keyed).__name__, keyed.key_column
('KeyedStream', 'k')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import building, keyed_time, sinks
from barrier_runtime.api import steps as defs
from barrier_runtime.core import types
from barrier_runtime.state import key_groups


class Stream:
    """The output of a step; call methods on it to add downstream steps."""

    __slots__ = ("flow", "step_id")

    def __init__(self, flow: building.StepGraph, step_id: types.StepId) -> None:
        self.flow = flow
        self.step_id = step_id

    def _input(self, by: str) -> defs.Input:
        return self.flow._consume(self, by)

    def _then(self, step: defs.Step) -> Stream:
        """Add ``step`` (downstream of this stream); its output."""
        return Stream(self.flow, self.flow._add(step))

    def flat_map(
        self,
        step_id: str,
        fn: Callable[[batch_mod.Record], Iterable[batch_mod.Record]],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Replace each record by zero or more records."""
        return self._then(
            defs.FlatMapStep(self.flow._new_id(step_id), self._input(step_id), fn, on_error)
        )

    def map(
        self,
        step_id: str,
        fn: Callable[[batch_mod.Record], batch_mod.Record],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Replace each record by ``fn(record)``."""
        return self.flat_map(step_id, lambda r: (fn(r),), on_error=on_error)

    def filter(
        self,
        step_id: str,
        predicate: Callable[[batch_mod.Record], bool],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Keep the records for which ``predicate`` is true (it must not modify them)."""
        return self._then(
            defs.FilterStep(self.flow._new_id(step_id), self._input(step_id), predicate, on_error)
        )

    def map_batches(
        self,
        step_id: str,
        fn: Callable[[pa.RecordBatch], pa.RecordBatch],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Transform whole Arrow record batches (the fast, vectorised path)."""
        return self._then(
            defs.MapBatchesStep(self.flow._new_id(step_id), self._input(step_id), fn, on_error)
        )

    def key_by(self, step_id: str, key: str | defs.KeyFn) -> KeyedStream:
        """Partition the stream by key: a column name or a function of the record.

        Keying by a column name lets Arrow batches be routed in one vectorised
        pass; a function is called record by record, except one that only reads
        a field (``lambda r: r["key"]``): on an integer, string or bytes column
        without nulls, routing recognises it and reads the column as it would
        for the name (the keyed step downstream still calls it per record).
        """
        column = key if isinstance(key, str) else None
        key_fn = _column_key(key) if isinstance(key, str) else key
        added = self.flow._add(
            defs.KeyByStep(self.flow._new_id(step_id), self._input(step_id), key_fn, column)
        )
        return KeyedStream(self.flow, added, key_fn, column)

    def sink(self, step_id: str, sink: sinks.Sink) -> None:
        """Send the stream to a transactional sink."""
        if not isinstance(sink, sinks.Sink):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: {type(sink).__name__} is not a barrier_runtime Sink"
            )
        self.flow._add(defs.SinkStep(self.flow._new_id(step_id), self._input(step_id), sink))


class WindowedStream(Stream):
    """The results of a window step; :meth:`late` is the stream of its late records."""

    __slots__ = ()

    def late(self, step_id: str) -> Stream:
        """The records that came after their windows closed (beyond the allowed lateness)."""
        if any(
            isinstance(s, defs.SideOutputStep) and s.input.step_id == self.step_id
            for s in self.flow.steps
        ):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: window step {self.step_id!r} already has a late-records stream"
            )
        return self._then(defs.SideOutputStep(self.flow._new_id(step_id), self._input(step_id)))


class KeyedStream(Stream, keyed_time.EventTimeSteps[Stream, WindowedStream]):
    """A stream partitioned by key; keyed steps keep one state value per key.

    The event-time steps (``window``, ``window_agg``, ``process``,
    ``interval_join``) come from :class:`~barrier_runtime.api.keyed_time.EventTimeSteps`.
    """

    __slots__ = ("key_column", "key_fn")

    def __init__(
        self,
        flow: building.StepGraph,
        step_id: types.StepId,
        key_fn: defs.KeyFn,
        key_column: str | None = None,
    ) -> None:
        super().__init__(flow, step_id)
        self.key_fn = key_fn
        self.key_column = key_column

    def _keyed_input(self, by: str) -> defs.Input:
        return self.flow._consume(self, by, defs.Partitioning.KEYED, self.key_fn, self.key_column)

    def _stream(self, step_id: types.StepId) -> Stream:
        return Stream(self.flow, step_id)

    def _windowed_stream(self, step_id: types.StepId) -> WindowedStream:
        return WindowedStream(self.flow, step_id)

    def stateful_map(
        self, step_id: str, fn: defs.StatefulFn, *, on_error: defs.OnError = "fail"
    ) -> Stream:
        """``fn(state_or_None, record) -> (new_state_or_None, outputs)`` per key."""
        return self._then(
            defs.StatefulStep(self.flow._new_id(step_id), self._keyed_input(step_id), fn, on_error)
        )

    def reduce(
        self,
        step_id: str,
        fn: Callable[[batch_mod.Record, batch_mod.Record], batch_mod.Record],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Fold each key's records with ``fn(acc, record)``; emit the new accumulator each time."""

        def step(acc: batch_mod.Record | None, rec: batch_mod.Record) -> tuple[Any, Iterable[Any]]:
            new = rec if acc is None else fn(acc, rec)
            return new, (new,)

        return self.stateful_map(step_id, step, on_error=on_error)

    def aggregate(
        self,
        step_id: str,
        initial: Callable[[], Any],
        add: Callable[[Any, batch_mod.Record], Any],
        output: Callable[[Any, batch_mod.Record], batch_mod.Record],
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Keep an accumulator per key: ``add(acc, record)``; emit ``output(acc, record)``."""

        def step(acc: Any, rec: batch_mod.Record) -> tuple[Any, Iterable[Any]]:
            new = add(initial() if acc is None else acc, rec)
            return new, (output(new, rec),)

        return self.stateful_map(step_id, step, on_error=on_error)

    def sum(self, step_id: str, column: str, *, output: str = "sum") -> Stream:
        """Running sum of the integer ``column`` per key, vectorised over whole batches.

        Every record is emitted with ``output`` set to its key's sum so far
        (itself included; nulls count as 0), exactly like
        ``aggregate(step_id, lambda: 0, lambda a, r: a + r[column],
        lambda a, r: {**r, output: a})`` but computed with NumPy on Arrow
        batches. Sums are 64-bit and wrap on overflow. The stream must be keyed
        by a column.

        >>> from barrier_runtime.api import Dataflow
        >>> from barrier_runtime.testing import TestingSink, TestingSource
        >>> flow = Dataflow("sums")
        >>> rows = [{"k": 1, "v": 5}, {"k": 2, "v": 1}, {"k": 1, "v": 2}]
        >>> flow.source("in", TestingSource(rows)).key_by("by-k", "k") \\
        ...     .sum("total", "v").sink("out", TestingSink())
        >>> type(flow.step("total")).__name__
        'KeyedSumStep'
        """
        if self.key_column is None:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: sum needs a stream keyed by a column (key_by(step, 'col')); "
                "for a key function use aggregate"
            )
        if not column or not output:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: sum needs non-empty column names"
            )
        return self._then(
            defs.KeyedSumStep(
                self.flow._new_id(step_id), self._keyed_input(step_id), column, output
            )
        )

    def connect(
        self,
        step_id: str,
        other: KeyedStream,
        fn: defs.ConnectFn,
        *,
        on_error: defs.OnError = "fail",
    ) -> Stream:
        """Two keyed inputs sharing per-key state: ``fn(state, side, record)``.

        Side 0 is this stream, side 1 is ``other``.
        """
        if not isinstance(other, KeyedStream):
            raise building.InvalidDataflowError(f"step {step_id!r}: connect needs a KeyedStream")
        inputs = (self._keyed_input(step_id), other._keyed_input(step_id))
        return self._then(defs.ConnectStep(self.flow._new_id(step_id), inputs, fn, on_error))


def _column_key(column: str) -> defs.KeyFn:
    def key_fn(record: batch_mod.Record) -> defs.Key:
        return key_groups.column_key(record[column])

    return key_fn
