"""A probed run as figures: per-worker memory, rates, records in flight, checkpoints."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from barrier_runtime.core import metadata
from cjob_bench.probe import bound as bound_mod
from cjob_bench.probe import sampling, workload


@dataclass(frozen=True, slots=True)
class WorkerMemory:
    worker: int
    before_running: int | None
    """RSS at the last sample before every worker reported Running (before any data flowed)."""
    baseline: int
    """RSS at the first sample after every worker reported Running."""
    peak: int
    peak_first_half: int
    peak_second_half: int

    @property
    def growth(self) -> int:
        return self.peak - self.baseline

    @property
    def growth_second_half(self) -> int:
        """Peak of the second half of the steady phase minus the peak of its first half."""
        return self.peak_second_half - self.peak_first_half

    def as_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "before_running_mib": bound_mod.mib(self.before_running),
            "baseline_mib": bound_mod.mib(self.baseline),
            "peak_mib": bound_mod.mib(self.peak),
            "growth_mib": bound_mod.mib(self.growth),
            "peak_first_half_mib": bound_mod.mib(self.peak_first_half),
            "peak_second_half_mib": bound_mod.mib(self.peak_second_half),
            "growth_second_half_mib": bound_mod.mib(self.growth_second_half),
        }


@dataclass(frozen=True, slots=True)
class Phase:
    """The steady phase: from ``warmup`` s after Running until the source emitted everything."""

    samples: list[sampling.Sample]

    @property
    def duration(self) -> float:
        return self.samples[-1].t - self.samples[0].t

    def rate(self, counter: Callable[[sampling.Sample], float]) -> float:
        return (counter(self.samples[-1]) - counter(self.samples[0])) / self.duration


def steady_phase(run: sampling.ProbeResult, job: workload.ThrottledJob, warmup: float) -> Phase:
    ready = [s for s in run.samples if s.ready and s.attempt == 0]
    if not ready:
        raise ValueError("no sample saw the workers running")
    start = ready[0].t + warmup
    steady = [s for s in ready if s.t >= start and s.source_out < job.total_events]
    if len(steady) < 8:
        raise ValueError(f"the steady phase is too short to measure ({len(steady)} samples)")
    return Phase(steady)


def worker_memory(run: sampling.ProbeResult, phase: Phase) -> list[WorkerMemory]:
    first_run = [s for s in run.samples if s.attempt == 0]
    ready = next(s for s in first_run if s.ready)
    half = (phase.samples[0].t + phase.samples[-1].t) / 2
    out = []
    for worker, baseline in sorted(ready.rss.items()):
        before = [s.rss[worker] for s in first_run if s.t < ready.t and worker in s.rss]
        first = [s.rss[worker] for s in phase.samples if s.t < half and worker in s.rss]
        second = [s.rss[worker] for s in phase.samples if s.t >= half and worker in s.rss]
        seen = [s.rss[worker] for s in first_run if worker in s.rss]
        before_running = before[-1] if before else None
        out.append(
            WorkerMemory(worker, before_running, baseline, max(seen), max(first), max(second))
        )
    return out


def checkpoint_figures(run: sampling.ProbeResult, phase: Phase) -> dict[str, Any]:
    """The checkpoints triggered in the steady phase, under back-pressure."""
    start, end = phase.samples[0].wall, phase.samples[-1].wall
    periodic = [m for m in run.checkpoints if start <= m.trigger_time <= end]
    durations = sorted(m.completion_time - m.trigger_time for m in periodic)
    channel = [_channel_state_size(m) for m in periodic]
    return {
        "completed": len(periodic),
        "failed_in_the_whole_run": run.failed_checkpoints,
        "with_channel_state": sum(1 for c in channel if c > 0),
        "duration_p50_s": _round(_quantile(durations, 0.5)),
        "duration_p99_s": _round(_quantile(durations, 0.99)),
        "duration_max_s": _round(max(durations, default=None)),
        "channel_state_bytes_p50": _quantile(sorted(channel), 0.5),
        "channel_state_bytes_max": max(channel, default=None),
    }


def _channel_state_size(meta: metadata.CheckpointMetadata) -> int:
    return sum(h.size for h in meta.state_handles if h.kind is metadata.HandleKind.CHANNEL)


def summarise(
    run: sampling.ProbeResult,
    job: workload.ThrottledJob,
    bound: bound_mod.MemoryBound,
    channel_capacity: int,
    warmup: float,
) -> dict[str, Any]:
    """The run as JSON-ready figures (what the benchmark prints and the test asserts)."""
    phase = steady_phase(run, job, warmup)
    memory = worker_memory(run, phase)
    lag = [s.source_out - s.sink_in for s in phase.samples]
    return {
        "workers": [m.as_dict() for m in memory],
        "bound_per_worker": bound.as_dict(),
        "unbounded_would_hold_mib": bound_mod.mib(
            job.total_events * bound.record_bytes // job.parallelism
        ),
        "rates": {
            "source_configured": job.source_rate,
            "sink_configured": job.sink_rate,
            "source_measured": round(phase.rate(lambda s: s.source_out), 1),
            "sink_measured": round(phase.rate(lambda s: s.sink_in), 1),
            "source_backpressured_fraction": round(
                phase.rate(lambda s: s.source_backpressure) / job.parallelism, 3
            ),
        },
        "records_between_source_and_sink": {
            "max": max(lag),
            "bound": bound_mod.records_in_flight_bound(job, channel_capacity),
        },
        "steady_phase_s": round(phase.duration, 1),
        "elapsed_s": round(run.elapsed, 1),
        "samples": len(run.samples),
        "restarts": run.result.restarts,
        "checkpoints": checkpoint_figures(run, phase),
    }


def _quantile(values: Iterable[float], q: float) -> Any:
    data = list(values)
    if not data:
        return None
    if len(data) == 1:
        return data[0]
    return statistics.quantiles(data, n=100, method="inclusive")[max(0, round(q * 100) - 1)]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
