"""Operator instances: one per step per subtask, chained by direct calls.

Each instance receives batches through :meth:`process` and hands its output
to ``emit``, which the subtask wires to the chained steps and to output
channels. At a snapshot each instance adds what it owns to a
:class:`SnapshotBuilder`: keyed state as an Arrow blob for its key-group
range, sink transactions (pre-committed now) and source positions. A blob's
payload is either its bytes or, when serialising costs more than copying, a
function that serialises a copy taken now: :attr:`StateBlob.data` calls it
on the upload thread, after the barrier has gone on.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks, steps
from barrier_runtime.core import metadata, types
from barrier_runtime.state import keyed
from barrier_runtime.task import latency

Emit = Callable[[batch_mod.Batch], None]
CommitHook = Callable[[types.CheckpointId], None]
Reject = Callable[[object, BaseException], None]
"""Takes a record the user's function raised on (``on_error`` skip or dead-letter)."""


@dataclass(frozen=True, slots=True)
class StateBlob:
    relpath: str
    payload: bytes | Callable[[], bytes]
    """The bytes, or a function returning them that does not depend on later processing."""
    step_id: types.StepId
    kind: metadata.HandleKind
    key_group_start: int | None = None
    key_group_end: int | None = None

    @property
    def data(self) -> bytes:
        """The bytes to upload (a deferred payload is serialised by this call)."""
        return self.payload if isinstance(self.payload, bytes) else self.payload()


@dataclass
class SnapshotBuilder:
    """Collects the synchronous part of one subtask's snapshot."""

    checkpoint_id: types.CheckpointId
    subtask: int
    blobs: list[StateBlob] = field(default_factory=list)
    source_positions: dict[types.StepId, dict[str, Any]] = field(default_factory=dict)
    sink_transactions: dict[types.StepId, tuple[Any, ...]] = field(default_factory=dict)
    sink_records: dict[types.StepId, int] = field(default_factory=dict)
    """Per sink step: records written since the attempt started (published with the checkpoint)."""


class Operator(abc.ABC):
    def __init__(self, step_id: types.StepId, emit: Emit) -> None:
        self.step_id = step_id
        self.emit = emit

    @abc.abstractmethod
    def process(self, batch: batch_mod.Batch, side: int) -> None: ...

    def snapshot(self, builder: SnapshotBuilder) -> None:  # noqa: B027 - stateless default
        """Add this operator's state to ``builder`` (stateless operators add nothing)."""

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:  # noqa: B027
        """React to the completion of a checkpoint (sinks commit)."""

    def on_processing_time(self, now_ms: int) -> int | None:
        """Fire processing-time timers due at ``now_ms``; when the next one is due (ms)."""
        return None

    def on_watermark(self, watermark: int) -> None:  # noqa: B027 - no event-time timers
        """The step's input watermark rose to ``watermark``.

        An operator with event-time timers fires the due ones here and emits
        their output; the chain forwards the watermark after this returns, so
        that output precedes it downstream.
        """

    def close(self) -> None:  # noqa: B027
        """Release resources."""


class FlatMapOperator(Operator):
    def __init__(self, step: steps.FlatMapStep, emit: Emit, reject: Reject | None = None) -> None:
        super().__init__(step.step_id, emit)
        self._fn = step.fn
        self._reject = reject

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        fn = self._fn
        out: list[batch_mod.Record] = []
        extend = out.extend
        for record in batch.rows():
            try:
                extend(fn(record))
            except Exception as exc:
                if self._reject is None:
                    raise task_failure.UserFunctionError(self.step_id, record, exc) from exc
                self._reject(record, exc)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))


class FilterOperator(Operator):
    """``filter``: passes on the records the predicate holds for, unchanged.

    A batch read as Arrow stays Arrow: the kept rows travel with the Arrow
    batch filtered by the same mask, so a keyed edge or a wire downstream
    needs no conversion back from rows. A batch kept whole is passed on as is.
    """

    def __init__(self, step: steps.FilterStep, emit: Emit, reject: Reject | None = None) -> None:
        super().__init__(step.step_id, emit)
        self._predicate = step.predicate
        self._reject = reject

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        rows = batch.rows()
        keep = self._keep(rows)
        kept = keep.count(True)
        if kept == len(rows):
            self.emit(batch)
        elif kept:
            records = list(itertools.compress(rows, keep))
            if batch.arrow_is_exact:
                mask = pa.array(keep, type=pa.bool_())
                self.emit(batch_mod.Batch(records, batch.to_arrow().filter(mask)))
            else:
                self.emit(batch_mod.Batch.from_rows(records))

    def _keep(self, rows: Sequence[batch_mod.Record]) -> list[bool]:
        """Whether to keep each record; a record the predicate raised on is rejected or fatal."""
        predicate = self._predicate
        keep: list[bool] = []
        append = keep.append
        while len(keep) < len(rows):
            try:
                for record in itertools.islice(rows, len(keep), None):
                    append(True if predicate(record) else False)  # noqa: SIM210 - no call to bool()
            except Exception as exc:
                record = rows[len(keep)]
                if self._reject is None:
                    raise task_failure.UserFunctionError(self.step_id, record, exc) from exc
                self._reject(record, exc)
                append(False)
        return keep


class MapBatchesOperator(Operator):
    def __init__(
        self, step: steps.MapBatchesStep, emit: Emit, reject: Reject | None = None
    ) -> None:
        super().__init__(step.step_id, emit)
        self._fn = step.fn
        self._reject = reject

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        arrow = batch.to_arrow()
        try:
            result = self._fn(arrow)
        except Exception as exc:
            if self._reject is not None:  # the whole batch, record by record
                for record in arrow.to_pylist():
                    self._reject(record, exc)
                return
            first = arrow.slice(0, 1).to_pylist()
            sample = {"batch_rows": arrow.num_rows, "first": first[0] if first else None}
            raise task_failure.UserFunctionError(self.step_id, sample, exc) from exc
        if result.num_rows:
            self.emit(batch_mod.Batch.from_arrow(result))


class PassThroughOperator(Operator):
    """``key_by`` and ``merge``: routing happens on the edges, records pass unchanged."""

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        self.emit(batch)


class StatefulOperator(Operator):
    """An operator with keyed state, restored from the handles of its key-group range."""

    @abc.abstractmethod
    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the state rows of ``blobs`` that fall into this subtask's key-group range."""


class KeyedOperator(StatefulOperator):
    """``stateful_map`` (one input) and ``connect`` (two inputs) over per-key value state.

    The loop over a batch binds what it needs to locals and reads and writes
    the state's dict directly (no key hashing: key groups matter only at a
    snapshot). A function's emitted records are materialised before the state
    changes, so a generator that raises leaves the key's state as it was.
    """

    def __init__(
        self,
        step: steps.StatefulStep | steps.ConnectStep,
        emit: Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        reject: Reject | None = None,
    ) -> None:
        super().__init__(step.step_id, emit)
        self._reject = reject
        self.state = keyed.KeyedState(key_group_range, max_parallelism)
        self._key_fns: tuple[steps.KeyFn, ...]
        self._stateful: steps.StatefulFn | None = None
        self._connect: steps.ConnectFn | None = None
        if isinstance(step, steps.StatefulStep):
            self._stateful = step.fn
            self._key_fns = (key_fn_of(step.input),)
        else:
            self._connect = step.fn
            self._key_fns = (key_fn_of(step.inputs[0]), key_fn_of(step.inputs[1]))

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        key_fn = self._key_fns[side]
        held = self.state.values
        get = held.get
        stateful = self._stateful
        connect = self._connect
        out: list[batch_mod.Record] = []
        extend = out.extend
        for record in batch.rows():
            try:
                key = key_fn(record)
                if stateful is not None:
                    new, emitted = stateful(get(key), record)
                else:
                    assert connect is not None
                    new, emitted = connect(get(key), side, record)
                kind = type(emitted)
                if kind is not list and kind is not tuple:
                    emitted = list(emitted)  # a generator raises here, before the state changes
            except Exception as exc:
                if self._reject is None:
                    raise task_failure.UserFunctionError(self.step_id, record, exc) from exc
                self._reject(record, exc)
                continue
            if new is None:
                held.pop(key, None)
            else:
                held[key] = new
            extend(emitted)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def snapshot(self, builder: SnapshotBuilder) -> None:
        builder.blobs.append(keyed_state_blob(self.step_id, builder, self.state))

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)


def keyed_blob(
    step_id: types.StepId,
    builder: SnapshotBuilder,
    data: bytes | Callable[[], bytes],
    start: int,
    end: int,
) -> StateBlob:
    """The blob of one subtask's keyed state for key groups ``[start, end]``."""
    return StateBlob(
        relpath=f"{step_id}/{builder.subtask}.arrow",
        payload=data,
        step_id=step_id,
        kind=metadata.HandleKind.KEYED,
        key_group_start=start,
        key_group_end=end,
    )


def keyed_state_blob(
    step_id: types.StepId, builder: SnapshotBuilder, state: keyed.KeyedState
) -> StateBlob:
    """The blob of a :class:`~keyed.KeyedState`: copied now (mutable values encoded at
    once), serialised on the upload thread."""
    copy = state.snapshot_copy(step_id)
    return keyed_blob(step_id, builder, copy.encode, state.start, state.end)


class SinkOperator(Operator):
    """Writes to a two-phase-commit sink writer; commits on checkpoint completion."""

    def __init__(
        self,
        step: steps.SinkStep,
        writer: sinks.SinkWriter,
        on_commit: CommitHook,
    ) -> None:
        super().__init__(step.step_id, _no_emit)
        self.sink = step.sink
        self.writer = writer
        self._on_commit = on_commit
        self.pending: list[tuple[types.CheckpointId, Any]] = []
        self.latency = latency.SinkLatency()
        self.written = 0
        """Records written in this attempt; those before a barrier are published with it."""

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        self.written += len(batch)
        if batch.arrow_is_exact:  # rows converted to Arrow are written as the rows they are
            self.writer.write_batch(batch.to_arrow())
        else:
            self.writer.write(batch.rows())
        created = latency.created_times(batch)
        if created is not None:
            self.latency.observe(created)

    def snapshot(self, builder: SnapshotBuilder) -> None:
        self.latency.epoch_ended(builder.checkpoint_id)
        txn = self.writer.pre_commit(builder.checkpoint_id)
        if txn is not None:
            self.pending.append((builder.checkpoint_id, txn))
        # Every transaction not yet committed travels with this checkpoint, so that
        # data of an aborted earlier checkpoint is published with this one.
        builder.sink_transactions[self.step_id] = tuple(t for _, t in self.pending)
        builder.sink_records[self.step_id] = self.written

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:
        due = [(cid, t) for cid, t in self.pending if cid <= checkpoint_id]
        for cid, txn in due:
            self._on_commit(cid)
            self.sink.commit(txn)
            self.pending.remove((cid, txn))
        self.latency.committed(checkpoint_id)

    def close(self) -> None:
        self.writer.close()


def key_fn_of(inp: steps.Input) -> steps.KeyFn:
    """The key function of a keyed step's input (the graph gives every keyed input one)."""
    if inp.key_fn is None:
        raise ValueError(f"keyed step input from {inp.step_id!r} has no key function")
    return inp.key_fn


def _no_emit(batch: batch_mod.Batch) -> None:
    raise RuntimeError("a sink has no output")
