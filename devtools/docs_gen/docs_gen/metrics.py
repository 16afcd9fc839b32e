"""``docs/reference/metrics.md`` from the metric definitions of the driver and the operator.

Driver (:class:`barrier_runtime.control.metrics.JobMetrics`): its families exist
only while it collects from a job, so it is run once against a stand-in job
whose every optional part is present (a completed and a failed checkpoint,
records and back-pressure per step); each family's name, type, help and label
names come from what that collection yields.

Operator (:mod:`cjob_operator.metrics`): every prometheus-client metric in the
module, cross-checked against what its ``REGISTRY`` collects (a metric
registered elsewhere fails the generator instead of going missing). Label names
and histogram buckets are read from the metric objects.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import metrics as prom_metrics
from prometheus_client.metrics_core import Metric

from barrier_runtime.checkpoint import stats
from barrier_runtime.control import job
from barrier_runtime.control import metrics as driver_metrics
from barrier_runtime.core import latency, types
from cjob_operator import metrics as operator_metrics
from docs_gen import markdown as md

OUTPUT = pathlib.Path("docs/reference/metrics.md")
DRIVER_MODULE = "runtime/src/barrier_runtime/control/metrics.py"
OPERATOR_MODULE = "operator/src/cjob_operator/metrics.py"
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


@dataclass(frozen=True, slots=True)
class MetricDoc:
    """One metric family as exported."""

    family: str
    kind: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()

    @property
    def exposed(self) -> str:
        """The name a query uses: ``…_total`` for counters, the family name otherwise."""
        return self.family + "_total" if self.kind == "counter" else self.family

    @property
    def series_names(self) -> tuple[str, ...]:
        """Every sample name of the family in the text exposition."""
        suffixes = _SUFFIXES.get(self.kind)
        return tuple(self.family + s for s in suffixes) if suffixes else (self.family,)


class _StandInJob:
    """A job with one of everything, so that every family of :class:`JobMetrics` appears."""

    def info(self) -> job.JobInfo:
        return job.JobInfo(
            name="job",
            state=job.JobState.RUNNING,
            attempt=0,
            restarts=0,
            parallelism=1,
            max_parallelism=1,
            start_time=0.0,
            ready=True,
            startup_seconds=1.0,
        )

    def checkpoint_stats(self) -> stats.CheckpointStats:
        def entry(cid: int, status: stats.CheckpointStatus) -> stats.CheckpointStatsEntry:
            failed = status is stats.CheckpointStatus.FAILED
            return stats.CheckpointStatsEntry(
                checkpoint_id=types.CheckpointId(cid),
                status=status,
                kind=types.CheckpointKind.CHECKPOINT,
                trigger_time=0.0,
                num_tasks=1,
                ack_times={},
                state_size=0,
                alignment_duration=0.0,
                end_time=1.0,
                failure_reason=types.FailureReason.TIMEOUT if failed else None,
            )

        done = entry(1, stats.CheckpointStatus.COMPLETED)
        failed = entry(2, stats.CheckpointStatus.FAILED)
        return stats.CheckpointStats(
            counts=stats.CheckpointCounts(triggered=2, completed=1, failed=1),
            history=(failed, done),
            latest_completed=done,
            latest_failed=failed,
        )

    def runtime_metrics(self) -> job.RuntimeMetrics:
        one = latency.LatencyHistogram.of_seconds([0.01])
        return job.RuntimeMetrics(
            records_in={"step": 1},
            records_out={"step": 1},
            backpressure_seconds={"task": 1.0},
            arrival_latency={"step": one},
            commit_latency={"step": one},
            watermarks={"step": 1_700_000_000_000},
            late_dropped={"step": 1},
            source_lag={"step": {"topic-0": 1}},
        )


def _labels(family: Metric) -> tuple[str, ...]:
    names: list[str] = []
    for sample in family.samples:
        for name in sample.labels:
            if name != "le" and name not in names:
                names.append(name)
    return tuple(names)


def _bucket_bounds(family: Metric) -> tuple[float, ...]:
    """The finite ``le`` bounds a histogram family serves (``()`` for other types)."""
    bounds = {float(s.labels["le"]) for s in family.samples if s.labels.get("le", "+Inf") != "+Inf"}
    return tuple(sorted(bounds))


def driver() -> list[MetricDoc]:
    """The families a driver's ``/metrics`` serves, in the order it serves them."""
    collector = driver_metrics.JobMetrics(_StandInJob(), namespace="namespace")
    return [
        MetricDoc(
            f.name,
            f.type,
            f.documentation,
            _labels(f),
            _bucket_bounds(f),
        )
        for f in collector.collect()
    ]


def _module_metrics() -> list[prom_metrics.MetricWrapperBase]:
    return [
        v for v in vars(operator_metrics).values() if isinstance(v, prom_metrics.MetricWrapperBase)
    ]


def operator() -> list[MetricDoc]:
    """The families the operator's ``/metrics`` serves, in definition order."""
    found = _module_metrics()
    registered = {f.name: f for f in operator_metrics.REGISTRY.collect()}
    missing = sorted(set(registered) - {m._name for m in found})
    if missing:
        raise LookupError(
            f"{OPERATOR_MODULE}: {', '.join(missing)} are registered but not module-level "
            "metrics; teach docs_gen.metrics where they are defined"
        )
    docs = []
    for metric in found:
        family = registered[metric._name]
        bounds: Sequence[float] = getattr(metric, "_upper_bounds", ())
        docs.append(
            MetricDoc(
                family.name,
                family.type,
                family.documentation,
                tuple(metric._labelnames),
                tuple(b for b in bounds if b != float("inf")),
            )
        )
    return docs


def exported_names() -> set[str]:
    """Every name a query can use, from both sources (``…_total``, histogram families)."""
    return {m.exposed for m in (*driver(), *operator())}


def _buckets(bounds: Iterable[float]) -> str:
    return ", ".join(f"{b:g}" for b in bounds) + ", +Inf"


def _table(docs: Sequence[MetricDoc], other: Mapping[str, MetricDoc]) -> list[str]:
    rows = []
    for m in docs:
        note = f" Buckets (s): {_buckets(m.buckets)}." if m.buckets else ""
        also = " Also exported by the other side." if m.exposed in other else ""
        rows.append(
            (
                md.code(m.exposed),
                m.kind,
                ", ".join(md.code(n) for n in m.labels),
                md.cell(md.text(m.help) + note + also),
            )
        )
    return md.table(("metric", "type", "labels", "help"), rows)


def render() -> str:
    drv, opr = driver(), operator()
    by_driver = {m.exposed: m for m in drv}
    by_operator = {m.exposed: m for m in opr}
    both = sorted(set(by_driver) & set(by_operator))
    lines = [
        *md.banner(f"{DRIVER_MODULE} and {OPERATOR_MODULE}"),
        "",
        "# Metrics reference",
        "",
        "Every Prometheus metric of Checkpointed Jobs, read from the code that defines it. "
        "All names start with `cjob_`. Counters are listed by the name a query uses "
        "(`…_total`); histograms export `…_bucket`, `…_sum` and `…_count`. How to scrape "
        "them, and the alerts built on them: [Monitoring](../operations.md#monitoring).",
        "",
        "## Driver",
        "",
        "Served by every driver's control API at `GET /metrics` (no token needed; "
        "[control API](../control-api.md)): the driver pod of a CheckpointedJob on its "
        "`control` port (8080), and `cjob run --control-port PORT` on a laptop. "
        "Every series carries `job` (the CheckpointedJob's name, or the dataflow's name "
        "under `cjob run`) and, in a driver pod, `namespace`. Values are computed at "
        "scrape time from the running job; counters never go down, also across the "
        "driver's in-process restarts.",
        "",
        *_table(drv, by_operator),
        "",
        "## Operator",
        "",
        "Served by the operator at `GET /metrics` on `CJOB_METRICS_PORT` (default 8080; "
        "the chart's Service `<release>-checkpointed-operator-metrics`). Every series "
        "carries the CheckpointedJob's `namespace` and `job`. Counters and histograms also "
        "export `…_created`.",
        "",
        *_table(opr, by_driver),
        "",
        "## Exported by both",
        "",
        "The driver counts what happens inside it (restarts in the same pod, every "
        "checkpoint); the operator counts what it observes (driver pods replaced, "
        "checkpoints it saw complete or fail, on-demand triggers). Aggregate per job with "
        "`max by (namespace, job)`, never `sum`, as the chart's alert rules and dashboard "
        "do.",
        "",
        *[f"- {md.code(name)}" for name in both],
    ]
    return md.document(lines)


def generate(root: pathlib.Path) -> str:
    """The page for the installed runtime and operator (``root`` unused)."""
    del root
    return render()
