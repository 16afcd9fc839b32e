"""The counters of running subtasks, summed into an attempt's
:class:`~barrier_runtime.core.task_metrics.AttemptMetrics` (the record the
driver reads lives on the ground floor)."""

from __future__ import annotations

from barrier_runtime.core import latency, task_metrics
from barrier_runtime.task import operators
from barrier_runtime.task import subtask as subtask_mod


def subtask_metrics(subtasks: list[subtask_mod.Subtask]) -> task_metrics.AttemptMetrics:
    """The counters of ``subtasks``, summed per step and per task."""
    out = task_metrics.AttemptMetrics()
    for s in subtasks:
        for step, n in list(s.chain.counters.records_in.items()):
            out.records_in[step] = out.records_in.get(step, 0) + n
        for step, n in list(s.chain.counters.records_out.items()):
            out.records_out[step] = out.records_out.get(step, 0) + n
        for step, rejects in list(s.rejects.items()):
            out.records_rejected[step] = out.records_rejected.get(step, 0) + rejects.count
        for op in list(s.chain.ops.values()):
            if isinstance(op, operators.sink.SinkOperator) and op.latency.arrival.count:
                latency.merge_into(out.arrival_latency, {op.step_id: op.latency.arrival})
                latency.merge_into(out.commit_latency, {op.step_id: op.latency.commit})
            late = getattr(op, "late_dropped", 0)
            if late:
                out.late_dropped[op.step_id] = out.late_dropped.get(op.step_id, 0) + late
        for step, wm in list(s.chain.counters.watermarks.items()):
            out.watermarks[step] = min(wm, out.watermarks.get(step, wm))
        reader = s.chain.reader
        if reader is not None and reader.lags:
            lags = out.source_lag.setdefault(reader.step_id, {})
            lags.update(dict(reader.lags))
        task = s.task.task_id
        out.backpressure_seconds[task] = (
            out.backpressure_seconds.get(task, 0.0) + s.backpressure_seconds
        )
    return out
