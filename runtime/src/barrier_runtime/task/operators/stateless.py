"""The stateless operators: ``flat_map`` (and ``map``), ``filter``, ``map_batches``, and the
pass-through of ``key_by``, ``merge`` and side outputs (routing happens on the edges)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pyarrow as pa

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.task.operators import base, registry


class FlatMapOperator(base.Operator):
    def __init__(
        self, step: steps.FlatMapStep, emit: base.Emit, reject: base.Reject | None = None
    ) -> None:
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


class FilterOperator(base.Operator):
    """``filter``: passes on the records the predicate holds for, unchanged.

    A batch read as Arrow stays Arrow: the kept rows travel with the Arrow
    batch filtered by the same mask, so a keyed edge or a wire downstream
    needs no conversion back from rows. A batch kept whole is passed on as is.
    """

    def __init__(
        self, step: steps.FilterStep, emit: base.Emit, reject: base.Reject | None = None
    ) -> None:
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


class MapBatchesOperator(base.Operator):
    def __init__(
        self, step: steps.MapBatchesStep, emit: base.Emit, reject: base.Reject | None = None
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


class PassThroughOperator(base.Operator):
    """``key_by`` and ``merge``: routing happens on the edges, records pass unchanged."""

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        self.emit(batch)


@registry.register(steps.FlatMapStep)
def _flat_map(step: steps.FlatMapStep, ctx: registry.OperatorContext) -> base.Operator:
    return FlatMapOperator(step, ctx.emit, ctx.reject)


@registry.register(steps.FilterStep)
def _filter(step: steps.FilterStep, ctx: registry.OperatorContext) -> base.Operator:
    return FilterOperator(step, ctx.emit, ctx.reject)


@registry.register(steps.MapBatchesStep)
def _map_batches(step: steps.MapBatchesStep, ctx: registry.OperatorContext) -> base.Operator:
    return MapBatchesOperator(step, ctx.emit, ctx.reject)


@registry.register(steps.KeyByStep, steps.MergeStep, steps.SideOutputStep)
def _pass_through(step: steps.Step, ctx: registry.OperatorContext) -> base.Operator:
    return PassThroughOperator(step.step_id, ctx.emit)
