"""Building Prometheus families that carry a job's labels (``job``, maybe ``namespace``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from barrier_runtime.core import latency


@dataclass(frozen=True, slots=True)
class Labels:
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
