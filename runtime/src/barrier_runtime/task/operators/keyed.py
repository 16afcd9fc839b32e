"""The keyed per-record operator: ``stateful_map`` and two-input ``connect`` steps, with a
Python value per key in the subtask's key-group range."""

from __future__ import annotations

from collections.abc import Iterable

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.state import keyed
from barrier_runtime.task.operators import base, registry


class KeyedOperator(base.StatefulOperator):
    """``stateful_map`` (one input) and ``connect`` (two inputs) over per-key value state.

    The loop over a batch binds what it needs to locals and reads and writes
    the state's dict directly (no key hashing: key groups matter only at a
    snapshot). A function's emitted records are materialised before the state
    changes, so a generator that raises leaves the key's state as it was.
    """

    def __init__(
        self,
        step: steps.StatefulStep | steps.ConnectStep,
        emit: base.Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        reject: base.Reject | None = None,
    ) -> None:
        super().__init__(step.step_id, emit)
        self._reject = reject
        self.state = keyed.KeyedState(key_group_range, max_parallelism)
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

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        builder.blobs.append(base.keyed_state_blob(self.step_id, builder, self.state))

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)


@registry.register(steps.StatefulStep, steps.ConnectStep)
def _keyed(
    step: steps.StatefulStep | steps.ConnectStep, ctx: registry.OperatorContext
) -> base.Operator:
    return KeyedOperator(step, ctx.emit, ctx.key_group_range, ctx.max_parallelism, ctx.reject)
