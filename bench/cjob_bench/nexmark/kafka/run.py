"""One measured run of a Nexmark query on Kafka: topics, our job, the watch, the live feed, the lag.

A run of ``query`` at ``rate`` events/s for ``seconds``:

1. create ``{prefix}-persons``, ``-auctions``, ``-bids`` and the output topic (P partitions);
2. start our job (:mod:`.pipeline` on the warm SparkSession, exactly-once aligned
   checkpoints every ``interval`` s to the embedded S3 server) and wait until it runs;
3. start the watch (:mod:`.watch`) and wait until its partitions are assigned;
4. start the feed (:mod:`.feed`); every ``sample`` s until it ends, take the job's input lag:
   the records in the input topics the query reads (the partitions' high watermarks, asked
   of the broker) minus the records the job's sources have read (ours: their
   ``records_out``, the runtime's own counters); also the runtime's consumer-lag metric
   (``source_lag``);
5. after the feed, sample on until the lag is 0 (at most ``drain`` s): the drain. A run that
   may give up (``give_up_after``) stops its feed as soon as, that many seconds in, the lag
   exceeds ``give_up_lag`` seconds of input, or as soon as the feed falls further behind its
   schedule than :mod:`.method` allows (the machine cannot feed that rate beside the system),
   and skips the drain: its verdict (the bound of :mod:`.method`) is decided then, and the
   rest would only cost time;
6. stop the job with a savepoint (which commits the rest), drain the watch (it reads every
   partition to its end), and return everything (:mod:`.method` makes the figures). A run
   that gave up stops the job without the savepoint and ends the watch at once: nothing it
   would wait for decides the verdict.

The system under test is a :class:`System` (ours: :class:`Runner`); another system (Spark
Structured Streaming reading the same topics, its query from the Spark helper's function of
the query's output DataFrame, writing the output topic) plugs in by implementing it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from barrier_runtime.connectors.kafka import create_topic
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.nexmark import files, local
from cjob_bench.nexmark.kafka import cpu_timeline, method
from cjob_bench.peers import ours as peer
from cjob_bench.workloads.w4_kafka import children
from cjob_bench.workloads.w4_kafka.ours import RunningJob
from cjob_bench.workloads.w4_kafka.runs import Broker

PIPELINE = str(pathlib.Path(__file__).with_name("pipeline.py"))


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    seconds: float
    work: pathlib.Path
    partitions: int = 2
    interval: float = 1.0
    sample: float = 1.0
    drain: float = 60.0
    keep_rows: bool = False
    """Keep the committed rows (``rows.jsonl`` in the run's directory) for checking."""
    params: dict[str, int] = dataclasses.field(default_factory=dict)
    """Other NexmarkConfig fields of the feed."""
    give_up_after: float | None = None
    """Seconds into the feed after which a lag over ``give_up_lag`` ends the run (step 5)."""
    give_up_lag: float = 5.0
    """In seconds of input at the run's rate."""
    cpu_timeline: bool = False
    """Sample every process's CPU each second (:mod:`.cpu_timeline`), from the job's start."""


class Started(Protocol):
    """A system running a query (the seam for another system, e.g. Spark's, to plug in)."""

    def consumed(self, kinds: Sequence[str]) -> tuple[int, int | None]:
        """Records its sources have read from the topics of ``kinds`` so far, and the lag the
        system itself reports (``None``: it reports none)."""
        ...

    def sink_records_in(self) -> int:
        """Records its sink step took in (exactly-once: the committed output's size)."""
        ...

    def stop(self, *, drain: bool = True) -> dict[str, Any]:
        """Stop it, everything it took in committed (``drain``: first read every input record
        there is); what it measured about itself."""
        ...


class System(Protocol):
    """Starts ``query`` reading ``{prefix}-{kind}`` and writing ``out_topic``; running on return."""

    def start(self, query: str, bootstrap: str, prefix: str, out_topic: str) -> Started: ...


class Runner:
    """Ours as a :class:`System`: the job on one warm SparkSession, checkpoints to embedded S3."""

    def __init__(
        self,
        spark: Any,
        s3: EmbeddedS3Server,
        *,
        parallelism: int,
        interval: float,
        profile: bool = False,
    ):
        self.spark, self.s3 = spark, s3
        self.parallelism, self.interval = parallelism, interval
        self.profile = profile
        """Log every sink commit and checkpoint (:mod:`.profile` says where the time goes)."""

    def start(
        self, query: str, bootstrap: str, prefix: str, out_topic: str, timeout: float = 120.0
    ) -> OurJob:
        run_id = prefix.rsplit("-", 1)[-1]
        args = ["--bootstrap", bootstrap, "--prefix", prefix, "--query", query]
        args += ["--out-topic", out_topic, "--txn-prefix", f"nxk-{run_id}"]
        args += ["--staging-url", self.s3.url(peer.BUCKET, f"nexmark-kafka-staging/{run_id}")]
        probe_dir = (
            pathlib.Path(tempfile.mkdtemp(prefix="nexmark-probe-")) if self.profile else None
        )
        if probe_dir is not None:
            args += ["--probe-dir", str(probe_dir)]
        spec = peer.job_spec(
            PIPELINE,
            args,
            s3=self.s3,
            prefix=f"nexmark-kafka/{query}-{run_id}",
            parallelism=self.parallelism,
            checkpoint=peer.checkpoints(self.interval, timeout=60.0),
            restart=peer.no_restarts(Backoff(initial=0.2)),
        )
        job = driver.SparkDriver(spec, session=self.spark)
        running = RunningJob(job, threading.Thread(daemon=True), "aligned")

        def body() -> None:
            try:
                job.run()
            except BaseException as exc:  # reported by stop()
                running.errors.append(exc)

        running.thread = threading.Thread(target=body, name=f"nexmark-kafka-{query}", daemon=True)
        running.thread.start()
        if not job.job.wait_running(timeout):
            raise TimeoutError(f"our job was not running within {timeout:g}s: {running.errors}")
        return OurJob(running, probe_dir)


class OurJob:
    """Our running job as a :class:`Started`: the runtime's own counters (and, profiling, the
    coordinator's checkpoints, gathered at every sample: its history holds the last 20)."""

    def __init__(self, running: RunningJob, probe_dir: pathlib.Path | None = None) -> None:
        self.running = running
        self.probe_dir = probe_dir
        self.checkpoints: dict[int, tuple[float, float | None]] = {}
        """Checkpoint id -> (trigger time, completion time), wall clock (s)."""
        self.acks: dict[int, dict[str, float]] = {}
        """Checkpoint id -> each subtask's acknowledgement, s after the trigger."""

    def consumed(self, kinds: Sequence[str]) -> tuple[int, int | None]:
        if self.probe_dir is not None:
            self._gather_checkpoints()
        metrics = self.running.job.job.runtime_metrics()
        read = sum(metrics.records_out.get(k, 0) for k in kinds)
        return read, sum(sum(v.values()) for k, v in metrics.source_lag.items() if k in kinds)

    def _gather_checkpoints(self) -> None:
        for entry in self.running.job.job.checkpoint_stats().history:
            if entry.status.value == "completed":
                self.checkpoints[int(entry.checkpoint_id)] = (entry.trigger_time, entry.end_time)
                self.acks[int(entry.checkpoint_id)] = {
                    str(task): round(at - entry.trigger_time, 4)
                    for task, at in entry.ack_times.items()
                }

    def sink_records_in(self) -> int:
        return self.running.job.job.runtime_metrics().records_in.get("out", 0)

    def stop(self, *, drain: bool = True) -> dict[str, Any]:
        # the run drained already (step 5) or gave up; a savepoint commits what was read
        figures = self.running.stop()
        if self.probe_dir is not None:
            figures["timeline"] = {
                "checkpoints": [[k, *v] for k, v in sorted(self.checkpoints.items())],
                "acks": {str(k): v for k, v in sorted(self.acks.items())},
                "commits": [
                    json.loads(line)
                    for path in sorted(self.probe_dir.glob("commits-*.jsonl"))
                    for line in path.read_text().splitlines()
                ],
            }
            shutil.rmtree(self.probe_dir, ignore_errors=True)
        return figures


class LagSampler:
    """The job's input lag, sampled: broker high watermarks minus what its sources read."""

    def __init__(
        self, bootstrap: str, topics: dict[str, str], partitions: int, job: Started
    ) -> None:
        from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "nexmark-lag"})
        self.parts = [TopicPartition(t, p) for t in topics.values() for p in range(partitions)]
        self.kinds = list(topics)
        self.job = job
        self.series: list[dict[str, Any]] = []

    def sample(self, t: float) -> int | None:
        """Take one sample at ``t`` s; its lag (``None``: the broker did not answer)."""
        from confluent_kafka import KafkaException  # noqa: PLC0415

        consumed, metric = self.job.consumed(self.kinds)  # first: what is read was produced
        try:
            produced = sum(
                self.consumer.get_watermark_offsets(p, timeout=5, cached=False)[1]
                for p in self.parts
            )
        except KafkaException:  # metadata not there yet: no sample this time
            return None
        point: dict[str, Any] = {"t": round(t, 2), "produced": produced, "consumed": consumed}
        point |= {"lag": produced - consumed, "source_lag_metric": metric}
        self.series.append(point)
        return produced - consumed

    def close(self) -> None:
        self.consumer.close()


def run(query: str, rate: int, s: Settings, broker: Broker, runner: System) -> dict[str, Any]:
    """Steps 1-6 of the module docstring: the raw figures of one run."""
    bootstrap = broker.bootstrap_servers
    prefix = f"nxk-{uuid.uuid4().hex[:10]}"
    out_topic = f"{prefix}-out"
    work = s.work / prefix
    work.mkdir(parents=True)
    for topic in [f"{prefix}-{k}" for k in files.KINDS] + [out_topic]:  # Step 1
        create_topic(bootstrap, topic, s.partitions)
    timeline = cpu_timeline.CpuTimeline().start() if s.cpu_timeline else None
    started = time.time()
    job = runner.start(query, bootstrap, prefix, out_topic)  # Step 2
    startup = time.time() - started
    read = {k: f"{prefix}-{k}" for k in local.kinds_read(query)}
    sampler = LagSampler(bootstrap, read, s.partitions, job)
    watcher = producer = None
    feed_args = ["--rate", str(rate), "--seconds", str(s.seconds)]
    feed_args += ["--partitions", str(s.partitions), "--params", json.dumps(s.params)]
    try:
        watch_args = ["--bootstrap", bootstrap, "--topic", out_topic, "--query", query]
        watch_args += ["--arrays-out", str(work / "watch.npz"), *feed_args]
        watch_args += ["--drain-timeout", str(s.drain)]
        if s.keep_rows:
            watch_args += ["--rows-out", str(work / "rows.jsonl")]
        watcher = children.Child("cjob_bench.nexmark.kafka.watch", watch_args, work / "watch.log")
        watcher.answer(120.0)  # Step 3
        gives_up_behind: list[str] = []  # a feed that falls behind decides the verdict too (step 5)
        if s.give_up_after is not None:
            gives_up_behind = ["--give-up-behind-ms", str(method.FEED_SLACK_MS)]
        producer = children.Child(  # Step 4
            "cjob_bench.nexmark.kafka.feed",
            [
                "--bootstrap",
                bootstrap,
                "--prefix",
                prefix,
                "--clock-out",
                str(work / "clock.npy"),
                *feed_args,
                *gives_up_behind,
            ],
            work / "feed.log",
        )
        fed_at = float(producer.answer(120.0)["started"])
        produced = _sample_until_fed(sampler, producer, fed_at, s, rate)
        gave_up = produced.get("gave_up_at") is not None or bool(produced.get("fell_behind_at"))
        drain_started = time.time()
        while not gave_up and time.time() - drain_started < s.drain:  # Step 5
            lag = sampler.sample(time.time() - fed_at)
            if lag is not None and lag <= 0:
                break
            time.sleep(s.sample)
        drained = bool(sampler.series) and sampler.series[-1]["lag"] <= 0
        drain_seconds = time.time() - drain_started
    finally:
        if producer is not None:
            producer.close(10)
        sampler.close()
        seen: dict[str, Any] = {}
        try:
            figures = job.stop(drain=not gave_up)  # Step 6
        finally:
            if watcher is not None:
                try:
                    with contextlib.suppress(BrokenPipeError):  # a run that gave up waits no more
                        watcher.tell("stop" if gave_up else f"drain {job.sink_records_in()}")
                    seen = watcher.answer(s.drain + 60)
                finally:
                    watcher.close(10)
    sink_in = job.sink_records_in()
    cpu = None if timeline is None else timeline.stop()
    arrays = np.load(work / "watch.npz", allow_pickle=False)
    return {
        "query": query,
        "rate": rate,
        "seconds": s.seconds,
        "partitions": s.partitions,
        "interval": s.interval,
        "startup_seconds": round(startup, 2),
        "feed": produced,
        "lag_series": sampler.series,
        "drained": drained,
        "gave_up_at": produced.get("gave_up_at"),
        "drain_seconds": round(drain_seconds, 2),
        "sink_records_in": sink_in,
        "watch": seen,
        "system_figures": figures,
        "arrays": {k: arrays[k] for k in arrays.files},
        "clock": np.load(work / "clock.npy", allow_pickle=False),
        "rows_file": str(work / "rows.jsonl") if s.keep_rows else None,
        "cpu_timeline": cpu,
    }


def _sample_until_fed(
    sampler: LagSampler, producer: children.Child, fed_at: float, s: Settings, rate: int
) -> dict[str, Any]:
    """Sample the lag every ``s.sample`` s while the feed runs; the feed's answer, with
    ``gave_up_at`` (s) when the run gave up (step 5) and stopped the feed."""
    answer: dict[str, Any] = {"gave_up_at": None}
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            answer.update(producer.answer(s.seconds * 3 + 120))
        except BaseException as exc:  # re-raised below
            failure.append(exc)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    next_at = fed_at
    while waiter.is_alive():
        t = time.time() - fed_at
        lag = sampler.sample(t)
        if _gives_up(s, rate, t, lag) and answer["gave_up_at"] is None:
            answer["gave_up_at"] = round(t, 2)
            with contextlib.suppress(BrokenPipeError):
                producer.tell("stop")
        next_at += s.sample
        waiter.join(max(0.0, next_at - time.time()))
    if failure:
        raise failure[0]
    return answer


def _gives_up(s: Settings, rate: int, t: float, lag: int | None) -> bool:
    """Whether the run's verdict is decided at ``t`` s with ``lag`` (step 5)."""
    after = s.give_up_after
    return after is not None and lag is not None and t >= after and lag > rate * s.give_up_lag
