"""Prometheus metrics of one job, collected from its :class:`~.job.JobControl` on scrape.

Each :class:`JobMetrics` owns its own ``CollectorRegistry`` (two servers in one
process never share series). Nothing is pushed: a scrape reads
``info()``, ``checkpoint_stats()`` and ``runtime_metrics()`` and renders
families prefixed ``cjob_``, every one labelled ``job`` (and ``namespace``
when given).

Counters never go down. The job's own numbers can dip (a restart swaps the
live subtasks out before their counts are folded into the totals) or be
bounded (the checkpoint history keeps the newest finished entries only), so a
:class:`CheckpointTracker` remembers which checkpoint ids it has counted and
the highest value each counter has shown. A checkpoint that finished and fell
out of the history between two scrapes is still counted (from the job's
totals): as failed with reason ``unknown``, or as completed without a
duration observation.

Threading: scrapes may run concurrently (one thread per request); the
tracker is guarded by a lock.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import registry as prom_registry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job
from barrier_runtime.core import latency

DURATION_BUCKETS: tuple[float, ...] = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
)
"""Upper bounds (seconds) of ``cjob_checkpoint_duration_seconds``; ``+Inf`` is implied."""

UNKNOWN_REASON = "unknown"


class Histogram:
    """A cumulative histogram fed one observation at a time (not thread-safe)."""

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        bounds = sorted(b for b in buckets if not math.isinf(b))
        if not bounds:
            raise ValueError("a histogram needs at least one finite bucket")
        self.bounds = tuple(bounds)
        self._counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, count)`` pairs as Prometheus wants them, ending with ``+Inf``."""
        les = [*(_le(b) for b in self.bounds), "+Inf"]
        running, out = 0, []
        for le, n in zip(les, self._counts, strict=True):
            running += n
            out.append((le, float(running)))
        return out


def _le(bound: float) -> str:
    return repr(float(bound))


@dataclass(frozen=True, slots=True)
class CheckpointTotals:
    """What one scrape reports about checkpoints; every count is monotonic."""

    triggered: int
    completed: int
    failed_by_reason: Mapping[str, int]
    rejected: int
    restarts: int


class CheckpointTracker:
    """Turns bounded, possibly dipping job statistics into monotonic counters."""

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        self.durations = Histogram(buckets)
        self._seen: set[int] = set()
        self._completed_seen = 0
        self._completed_unseen = 0
        self._failed: dict[str, int] = {}
        self._high: dict[str, int] = {}
        self._peaks: dict[tuple[str, str], float] = {}
        self._histograms: dict[tuple[str, str], latency.LatencyHistogram] = {}

    def observe(self, snapshot: stats.CheckpointStats, restarts: int) -> CheckpointTotals:
        visible = {e.checkpoint_id: e for e in _finished(snapshot)}
        for checkpoint_id in sorted(set(visible) - self._seen):
            self._count(visible[checkpoint_id])
        # An entry not visible now never will be again (the history only moves forward),
        # so remembering the visible ids is enough, and bounded.
        self._seen = set(visible)
        counts = snapshot.counts
        missed_failed = counts.failed - sum(self._failed.values())
        if missed_failed > 0:
            self._failed[UNKNOWN_REASON] = self._failed.get(UNKNOWN_REASON, 0) + missed_failed
        missed_completed = counts.completed - self._completed_seen - self._completed_unseen
        if missed_completed > 0:
            self._completed_unseen += missed_completed
        return CheckpointTotals(
            triggered=self._monotonic("triggered", counts.triggered),
            completed=self._completed_seen + self._completed_unseen,
            failed_by_reason=dict(self._failed),
            rejected=self._monotonic("rejected", counts.rejected),
            restarts=self._monotonic("restarts", restarts),
        )

    def peak(self, family: str, label: str, value: float) -> float:
        """The highest ``value`` seen for this series (cumulative job counters may dip)."""
        key = (family, label)
        best = max(value, self._peaks.get(key, value))
        self._peaks[key] = best
        return best

    def peak_histogram(
        self, family: str, step: str, now: latency.LatencyHistogram
    ) -> latency.LatencyHistogram:
        """Bucket by bucket the highest counts seen for this series (no bucket goes down)."""
        best = self._histograms.get((family, step))
        served = now if best is None else now.envelope(best)
        self._histograms[(family, step)] = served
        return served

    def _count(self, entry: stats.CheckpointStatsEntry) -> None:
        if entry.status is stats.CheckpointStatus.COMPLETED:
            self._completed_seen += 1
            if entry.duration is not None:
                self.durations.observe(max(entry.duration, 0.0))
        else:
            reason = UNKNOWN_REASON if entry.failure_reason is None else entry.failure_reason.value
            self._failed[reason] = self._failed.get(reason, 0) + 1

    def _monotonic(self, name: str, value: int) -> int:
        best = max(value, self._high.get(name, value))
        self._high[name] = best
        return best


def _finished(snapshot: stats.CheckpointStats) -> Iterator[stats.CheckpointStatsEntry]:
    candidates = (
        *snapshot.history,
        snapshot.latest_completed,
        snapshot.latest_failed,
        snapshot.latest_savepoint,
    )
    for entry in candidates:
        if entry is not None and entry.status is not stats.CheckpointStatus.IN_PROGRESS:
            yield entry


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
        base = _Labels(self._job_name or info.name, self._namespace)
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
        self, base: _Labels, info: job.JobInfo, totals: CheckpointTotals
    ) -> list[Metric]:
        up = info.state is job.JobState.RUNNING and info.ready
        startup = (
            []
            if info.startup_seconds is None
            else [
                base.gauge(
                    "cjob_job_startup_seconds",
                    "The latest attempt that got running: its start to every subtask running.",
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

    def _runtime_families(self, base: _Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
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

    def _source_lags(self, base: _Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
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

    def _watermarks(self, base: _Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
        gauge = base.gauges(
            "cjob_step_watermark_seconds",
            "Event time each step has promised to be complete up to (its smallest subtask "
            "watermark), as seconds since the epoch; lag = now - this.",
            "step",
        )
        for step, ms in sorted(runtime.watermarks.items()):
            base.add(gauge, ms / 1000, step=step)
        return [gauge]

    def _latencies(self, base: _Labels, runtime: job.RuntimeMetrics) -> list[Metric]:
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
        self, base: _Labels, snapshot: stats.CheckpointStats, totals: CheckpointTotals
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


@dataclass(frozen=True, slots=True)
class _Labels:
    """The labels every family carries (``job`` and maybe ``namespace``)."""

    job: str
    namespace: str | None

    def names(self, *extra: str) -> list[str]:
        own = ["job"] if self.namespace is None else ["job", "namespace"]
        return [*own, *extra]

    def values(self, **extra: str) -> list[str]:
        own = [self.job] if self.namespace is None else [self.job, self.namespace]
        return [*own, *extra.values()]

    def counters(self, name: str, doc: str, label: str) -> CounterMetricFamily:
        """A counter family with one series per value of ``label`` (added with :meth:`add`)."""
        return CounterMetricFamily(name, doc, labels=self.names(label))

    def gauges(self, name: str, doc: str, label: str) -> GaugeMetricFamily:
        """A gauge family with one series per value of ``label`` (added with :meth:`add`)."""
        return GaugeMetricFamily(name, doc, labels=self.names(label))

    def add(
        self, family: CounterMetricFamily | GaugeMetricFamily, value: float, **extra: str
    ) -> None:
        family.add_metric(self.values(**extra), value)

    def latencies(
        self, name: str, doc: str, per_step: Mapping[str, latency.LatencyHistogram]
    ) -> HistogramMetricFamily:
        """A histogram family with one series per sink step."""
        family = HistogramMetricFamily(name, doc, labels=self.names("step"))
        for step, h in sorted(per_step.items()):
            family.add_metric(self.values(step=step), h.cumulative(), h.sum_seconds)
        return family

    def counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=self.names())
        family.add_metric(self.values(), value)
        return family

    def gauge(self, name: str, doc: str, value: float, **extra: str) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=self.names(*extra))
        family.add_metric(self.values(**extra), value)
        return family
