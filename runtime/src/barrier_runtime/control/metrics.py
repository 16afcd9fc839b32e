"""Prometheus metrics of one job, collected from its :class:`~.job.JobControl` on scrape.

Each :class:`JobMetrics` owns its own ``CollectorRegistry`` (two servers in one
process never share series). Nothing is pushed: a scrape reads
``info()``, ``checkpoint_stats()`` and ``runtime_metrics()`` and renders
families prefixed ``cjob_``, every one labelled ``job`` (and ``namespace``
when given).

Counters never go down: :mod:`.metric_tracker` keeps them so across restarts
and a bounded history; :mod:`.metric_labels` builds the labelled families.

Threading: scrapes may run concurrently (one thread per request); the
tracker is guarded by this collector's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import registry as prom_registry
from prometheus_client.metrics_core import (
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job
from barrier_runtime.control.metric_labels import Labels
from barrier_runtime.control.metric_tracker import (
    DURATION_BUCKETS,
    UNKNOWN_REASON,
    CheckpointTotals,
    CheckpointTracker,
    Histogram,
)

__all__ = [
    "DURATION_BUCKETS",
    "UNKNOWN_REASON",
    "CheckpointTotals",
    "CheckpointTracker",
    "Histogram",
    "JobMetrics",
]


class JobMetrics:
    """The ``cjob_`` metrics of one job, in a registry of their own.

    >>> from prometheus_client import generate_latest
    >>> # JobMetrics(executor, namespace="team-a").registry → generate_latest(...)
    """

    def __init__(
        self,
        job_control: job.JobView,
        *,
        namespace: str | None = None,
        job_name: str | None = None,
        buckets: Sequence[float] = DURATION_BUCKETS,
    ) -> None:
        self._job = job_control
        self._namespace = namespace
        self._job_name = job_name
        self._tracker = CheckpointTracker(buckets)
        self._lock = threading.Lock()
        self.registry = prom_registry.CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return ()  # names are only known from a live job; no registration-time checks

    def collect(self) -> Iterable[Metric]:
        info = self._job.info()
        snapshot = self._job.checkpoint_stats()
        runtime = self._job.runtime_metrics()
        base = Labels(self._job_name or info.name, self._namespace)
        with self._lock:
            totals = self._tracker.observe(snapshot, info.restarts)
            families = [
                *self._job_families(base, info, totals),
                *self._runtime_families(base, runtime),
                *self._checkpoint_families(base, snapshot, totals),
            ]
        return families

    # -- families ---------------------------------------------------------------------

    def _job_families(
        self, base: Labels, info: job.JobInfo, totals: CheckpointTotals
    ) -> list[Metric]:
        up = info.state is job.JobState.RUNNING and info.ready
        startup = (
            []
            if info.startup_seconds is None
            else [
                base.gauge(
                    "cjob_job_startup_seconds",
                    "The latest attempt: its start to all subtasks restored and running.",
                    info.startup_seconds,
                )
            ]
        )
        return [
            base.gauge(
                "cjob_job_up", "1 while every subtask of the job is running.", 1 if up else 0
            ),
            base.gauge(
                "cjob_job_info", "The job's current state (value 1).", 1, state=info.state.value
            ),
            base.counter("cjob_job_restarts_total", "Restarts after failures.", totals.restarts),
            base.gauge("cjob_job_attempt", "The current attempt (0 = the first).", info.attempt),
            base.gauge("cjob_job_parallelism", "Parallel slices of the job.", info.parallelism),
            base.gauge("cjob_job_start_time_seconds", "When the job started.", info.start_time),
            *startup,
        ]

    def _runtime_families(self, base: Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
        counted: list[tuple[str, str, str, Mapping[str, float], str]] = [
            ("cjob_records_in_total", "Records received by each step.", "step",
             runtime.records_in, "in"),
            ("cjob_records_out_total", "Records emitted by each step.", "step",
             runtime.records_out, "out"),
            ("cjob_backpressure_seconds_total",
             "Time each task's subtasks spent waiting for downstream capacity, summed over "
             "its subtasks (rate / cjob_job_parallelism: the share back-pressured).", "task",
             runtime.backpressure_seconds, "bp"),
            ("cjob_records_rejected_total",
             "Records a step or source passed over: skipped or sent to dead letters (on_error).",
             "step", runtime.records_rejected, "rejected"),
            ("cjob_late_records_dropped_total",
             "Records a window or join step dropped as late (windows without a late stream).",
             "step", runtime.late_dropped, "late"),
        ]  # fmt: skip
        families = []
        for name, text, label, values, kind in counted:
            family = base.counters(name, text, label)
            for item, value in sorted(values.items()):
                base.add(family, self._tracker.peak(kind, item, value), **{label: item})
            families.append(family)
        lags, watermarks = self._source_lags(base, runtime), self._watermarks(base, runtime)
        return [*families, *lags, *watermarks, *self._latencies(base, runtime)]

    def _source_lags(self, base: Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
        gauge = GaugeMetricFamily(
            "cjob_source_lag_records",
            "Records each source partition holds past the job's position, as last read "
            "(sources that can tell; Kafka: the high watermark - the position).",
            labels=base.names("step", "partition"),
        )
        for step, lags in sorted(runtime.source_lag.items()):
            for partition, value in sorted(lags.items()):
                base.add(gauge, value, step=step, partition=partition)
        return [gauge]

    def _watermarks(self, base: Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
        gauge = base.gauges(
            "cjob_step_watermark_seconds",
            "Event time each step has promised to be complete up to (its smallest subtask "
            "watermark), as seconds since the epoch; lag = now - this.",
            "step",
        )
        for step, ms in sorted(runtime.watermarks.items()):
            base.add(gauge, ms / 1000, step=step)
        return [gauge]

    def _latencies(self, base: Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
        families = (
            ("cjob_sink_arrival_latency_seconds", "Sink write", runtime.arrival_latency),
            ("cjob_sink_commit_latency_seconds", "Checkpoint commit", runtime.commit_latency),
        )
        out: list[Metric] = []
        for name, moment, per_step in families:
            doc = f"{moment} time minus creation time of records stamped with event_created."
            peaked = {s: self._tracker.peak_histogram(name, s, h) for s, h in per_step.items()}
            out.append(base.latencies(name, doc, peaked))
        return out

    def _checkpoint_families(
        self, base: Labels, snapshot: stats.CheckpointStats, totals: CheckpointTotals
    ) -> list[Metric]:
        failed = base.counters(
            "cjob_checkpoints_failed_total", "Checkpoints that failed, by reason.", "reason"
        )
        for reason, n in sorted(totals.failed_by_reason.items()):
            base.add(failed, n, reason=reason)
        histogram = HistogramMetricFamily(
            "cjob_checkpoint_duration_seconds",
            "Trigger-to-commit time of completed checkpoints.",
            labels=base.names(),
        )
        durations = self._tracker.durations
        histogram.add_metric(base.values(), durations.cumulative(), durations.total)
        families: list[Metric] = [
            base.counter(
                "cjob_checkpoints_triggered_total",
                "Checkpoints and savepoints started.",
                totals.triggered,
            ),
            base.counter(
                "cjob_checkpoints_completed_total",
                "Checkpoints and savepoints committed.",
                totals.completed,
            ),
            failed,
            base.counter(
                "cjob_checkpoint_triggers_rejected_total",
                "Trigger requests refused before a checkpoint started.",
                totals.rejected,
            ),
            base.gauge(
                "cjob_checkpoints_in_progress",
                "Checkpoints triggered, not yet finished.",
                snapshot.counts.in_progress,
            ),
            base.gauge(
                "cjob_checkpoint_consecutive_failures",
                "Checkpoints failed since the last completed one.",
                snapshot.consecutive_failures,
            ),
            histogram,
        ]
        last = snapshot.latest_completed
        if last is not None:
            families += [
                base.gauge(
                    "cjob_last_checkpoint_duration_seconds",
                    "Duration of the latest completed checkpoint.",
                    last.duration or 0.0,
                ),
                base.gauge(
                    "cjob_last_checkpoint_size_bytes",
                    "State size of the latest completed checkpoint.",
                    last.state_size,
                ),
                base.gauge(
                    "cjob_last_checkpoint_uploaded_bytes",
                    "Bytes written for the latest completed checkpoint (its state size, "
                    "unless it is incremental).",
                    last.uploaded_size,
                ),
                base.gauge(
                    "cjob_last_checkpoint_alignment_seconds",
                    "Longest alignment in the latest completed checkpoint.",
                    last.alignment_duration,
                ),
                base.gauge(
                    "cjob_last_completed_checkpoint_id",
                    "Id of the latest completed checkpoint.",
                    int(last.checkpoint_id),
                ),
                base.gauge(
                    "cjob_last_completed_checkpoint_timestamp_seconds",
                    "When the latest completed checkpoint was committed.",
                    last.end_time or last.trigger_time,
                ),
            ]
        return families
