"""The keyed per-record operator: ``stateful_map`` and two-input ``connect`` steps, with a
Python value per key in the subtask's key-group range."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.state import keyed
from barrier_runtime.task.operators import base, registry

_NO_KEY = object()
"""Stands for the key of a record whose key function raised (it is called again to fail)."""


class KeyedOperator(base.StatefulOperator):
    """``stateful_map`` (one input) and ``connect`` (two inputs) over per-key value state.

    The keys of a batch come from routing when it was split in this process
    (:meth:`~barrier_runtime.api.batch.Batch.keys_for`), else from one pass of
    the key function. The loop over a batch binds what it needs to locals and
    reads and writes the state's dict directly (no key hashing: key groups
    matter only at a snapshot). A function's emitted records are materialised
    before the state changes, so a generator that raises leaves the key's
    state as it was.
    """

    def __init__(
        self,
        step: steps.StatefulStep | steps.ConnectStep,
        emit: base.Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        reject: base.Reject | None = None,
        state: keyed.KeyedState | None = None,
    ) -> None:
        """``state``: made by the job's state backend (default: in memory)."""
        super().__init__(step.step_id, emit)
        self._reject = reject
        self.state = keyed.KeyedState(key_group_range, max_parallelism) if state is None else state
        self._key_fns: tuple[steps.KeyFn, ...]
        self._stateful: steps.StatefulFn | None = None
        self._connect: steps.ConnectFn | None = None
        if isinstance(step, steps.StatefulStep):
            self._stateful = step.fn
            self._key_fns = (base.key_fn_of(step.input),)
        else:
            self._connect = step.fn
            self._key_fns = (base.key_fn_of(step.inputs[0]), base.key_fn_of(step.inputs[1]))

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        key_fn = self._key_fns[side]
        rows = batch.rows()
        keys = batch.keys_for(key_fn)
        if keys is None:
            keys = self._keys_of(rows, key_fn)
        if self._stateful is not None:
            out = self._stateful_batch(rows, keys, self._stateful)
        else:
            out = self._connect_batch(rows, keys, side)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def _keys_of(self, rows: Sequence[batch_mod.Record], key_fn: steps.KeyFn) -> list[Any]:
        """Every record's key; a record whose key function raises gets :data:`_NO_KEY`."""
        try:
            return list(map(key_fn, rows))
        except Exception:  # find which records fail, one by one
            keys: list[Any] = []
            for record in rows:
                try:
                    keys.append(key_fn(record))
                except Exception:
                    keys.append(_NO_KEY)
            return keys

    def _stateful_batch(
        self, rows: Sequence[batch_mod.Record], keys: Sequence[Any], fn: steps.StatefulFn
    ) -> list[batch_mod.Record]:
        """``fn`` on every record with its key's state, in one loop with local bindings."""
        held = self.state.values
        get, changed = held.get, self.state.changed
        mark = None if changed is None else changed.add
        out: list[batch_mod.Record] = []
        extend = out.extend
        for given, record in zip(keys, rows, strict=True):
            key = given
            try:
                if key is _NO_KEY:
                    key = self._key_fns[0](record)  # raises the key function's error again
                new, emitted = fn(get(key), record)
                if type(emitted) is not tuple and type(emitted) is not list:
                    emitted = list(emitted)  # a generator raises here, before the state changes
            except Exception as exc:
                self._failed(record, exc)
                continue
            if new is None:
                held.pop(key, None)
            else:
                held[key] = new
            if mark is not None:
                mark(key)
            extend(emitted)
        return out

    def _connect_batch(
        self, rows: Sequence[batch_mod.Record], keys: Sequence[Any], side: int
    ) -> list[batch_mod.Record]:
        """The connect function on every record of input ``side`` with its key's state."""
        connect = self._connect
        assert connect is not None
        held = self.state.values
        get, changed = held.get, self.state.changed
        mark = None if changed is None else changed.add
        out: list[batch_mod.Record] = []
        for given, record in zip(keys, rows, strict=True):
            key = given
            try:
                if key is _NO_KEY:
                    key = self._key_fns[side](record)  # raises its error again
                new, emitted = connect(get(key), side, record)
                if type(emitted) is not tuple and type(emitted) is not list:
                    emitted = list(emitted)
            except Exception as exc:
                self._failed(record, exc)
                continue
            if new is None:
                held.pop(key, None)
            else:
                held[key] = new
            if mark is not None:
                mark(key)
            out.extend(emitted)
        return out

    def _failed(self, record: batch_mod.Record, exc: Exception) -> None:
        """A user function raised on ``record``: the job fails, or the record is rejected."""
        if self._reject is None:
            raise task_failure.UserFunctionError(self.step_id, record, exc) from exc
        self._reject(record, exc)

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        base.add_keyed_state(builder, self.step_id, self.state)

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)


@registry.register(steps.StatefulStep, steps.ConnectStep)
def _keyed(
    step: steps.StatefulStep | steps.ConnectStep, ctx: registry.OperatorContext
) -> base.Operator:
    state = ctx.keyed_state(step.step_id)
    return KeyedOperator(
        step, ctx.emit, ctx.key_group_range, ctx.max_parallelism, ctx.reject, state
    )
