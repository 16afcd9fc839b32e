"""The back-pressure probe's pure parts: the pacer, the bound, and the figures of a run."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from cjob_bench import probe
from cjob_bench.probe import workload

from barrier_runtime.core import metadata, types
from barrier_runtime.driver.job_driver import JobResult

JOB = probe.ThrottledJob(keys=12, events_per_key=100, source_rate=1000.0, slowdown=10.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_each_sink_subtask_is_paced_at_its_share_of_the_sink_rate() -> None:
    pacer = probe.SinkPacer(JOB)
    assert sum(pacer.subtask_rates.values()) == pytest.approx(JOB.sink_rate)
    owned = {
        o: sum(1 for k in range(JOB.keys) if workload.owner_of(f"k{k}", 3) == o) for o in range(3)
    }
    for subtask, rate in pacer.subtask_rates.items():
        assert rate == pytest.approx(JOB.sink_rate * owned[subtask] / JOB.keys)


def test_the_pacer_holds_a_subtask_to_its_rate_and_saves_no_burst_while_idle() -> None:
    clock = _Clock()
    pacer = probe.SinkPacer(JOB, monotonic=clock.monotonic, sleep=clock.sleep)
    batch = pa.record_batch({"key": ["k0"] * 10})
    rate = pacer.rates["k0"]
    for _ in range(5):
        pacer(batch)
    assert clock.now == pytest.approx(50 / rate)  # 50 records at exactly ``rate``
    clock.now += 0.05 / rate  # processing between batches: made up, not lost
    pacer(batch)
    assert clock.now == pytest.approx(60 / rate)
    clock.now += 100.0  # idle: no burst afterwards
    pacer(batch)
    assert clock.slept[-1] == pytest.approx(10 / rate)


def test_the_bound_counts_every_channel_of_a_worker_at_capacity() -> None:
    bound = probe.in_flight_bound(JOB, channel_capacity=8, checkpoint_interval=1.0)
    assert bound.batches == (2 * 3 - 1) * 8 + 2
    assert bound.records == bound.batches * JOB.batch_size
    assert bound.record_bytes > 2 * JOB.payload_bytes  # a Python row and its Arrow copy
    assert bound.channel_data == bound.records * bound.record_bytes
    assert bound.channel_state >= bound.records * JOB.payload_bytes
    parts = (bound.channel_data, bound.channel_state, bound.read_buffers, bound.sink_staging)
    assert bound.total == sum(parts) + bound.allocator_slack
    bigger = probe.in_flight_bound(JOB, channel_capacity=16, checkpoint_interval=1.0)
    assert bigger.channel_data == pytest.approx(bound.channel_data * (5 * 16 + 2) / (5 * 8 + 2))
    assert probe.records_in_flight_bound(JOB, 8) == (9 * 8 + 6) * JOB.batch_size


def test_read_rss_sees_this_process_and_not_a_missing_one() -> None:
    rss = probe.read_rss(os.getpid())
    assert rss is not None and rss > 1 << 20
    assert probe.read_rss(2**22 + 12345) is None  # above Linux's pid_max


def _sample(t: float, *, ready: bool, rss: int, source: int, sink: int) -> probe.Sample:
    return probe.Sample(
        t=t,
        wall=1000.0 + t,
        attempt=0,
        ready=ready,
        rss={0: rss, 1: rss + 1},
        source_out=source,
        sink_in=sink,
        source_backpressure=0.9 * 3 * t,
    )


def _checkpoint(
    cid: int, trigger: float, duration: float, channel: int
) -> metadata.CheckpointMetadata:
    handle = metadata.StateHandle(
        step_id=types.StepId("count"),
        subtask=0,
        kind=metadata.HandleKind.CHANNEL,
        key=f"chk-{cid}/channel-state/count-0.bin",
        size=channel,
        sha256="0" * 64,
    )
    return metadata.CheckpointMetadata(
        checkpoint_id=types.CheckpointId(cid),
        kind=types.CheckpointKind.CHECKPOINT,
        trigger_time=1000.0 + trigger,
        completion_time=1000.0 + trigger + duration,
        fingerprint=metadata.JobFingerprint(step_ids=(), max_parallelism=128, parallelism=3),
        state_handles=(handle,) if channel else (),
    )


def test_the_figures_of_a_run() -> None:
    mib = probe.MiB
    samples = [_sample(0.0, ready=False, rss=50 * mib, source=0, sink=0)]
    samples += [
        _sample(1.0 + t, ready=True, rss=(100 + min(t, 4)) * mib, source=100 * t + 50, sink=100 * t)
        for t in range(20)
    ]
    samples.append(_sample(21.0, ready=True, rss=105 * mib, source=JOB.total_events, sink=1900))
    run = probe.ProbeResult(
        result=JobResult(final_checkpoint=9),
        samples=samples,
        elapsed=22.0,
        checkpoints=[
            _checkpoint(1, 1.5, 2.0, 0),  # before the steady phase: left out
            _checkpoint(2, 6.0, 0.1, 10),
            _checkpoint(3, 12.0, 0.3, 30),
            _checkpoint(9, 21.0, 0.05, 0),  # the final one, after the input ended
        ],
    )
    figures = probe.summarise(run, JOB, probe.in_flight_bound(JOB, 8, 1.0), 8, warmup=3.0)
    first = figures["workers"][0]
    assert first["before_running_mib"] == 50 and first["baseline_mib"] == 100
    assert first["peak_mib"] == 105 and first["growth_mib"] == 5
    assert first["growth_second_half_mib"] == 0  # the steady phase is t = 4..20: flat at 104
    assert figures["rates"]["source_measured"] == pytest.approx(100.0)
    assert figures["rates"]["source_backpressured_fraction"] == pytest.approx(0.9)
    assert figures["records_between_source_and_sink"]["max"] == 50
    checkpoints = figures["checkpoints"]
    assert checkpoints["completed"] == 2 and checkpoints["with_channel_state"] == 2
    assert checkpoints["duration_max_s"] == pytest.approx(0.3)
    assert checkpoints["channel_state_bytes_max"] == 30
