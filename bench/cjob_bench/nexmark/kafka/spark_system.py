"""Spark Structured Streaming as a :class:`.run.System`: the same topics, the same query, Kafka to Kafka.

:class:`SparkSystem` runs on one warm SparkSession ``local[P]`` whose ``spark.jars`` are
Spark's Kafka connector (``scripts/spark-kafka-fetch.sh``, :func:`session`). ``start``:

1. reads each kind the query needs from ``{prefix}-{kind}`` with Spark's Kafka source
   (``startingOffsets`` earliest), parses the JSON value into the kind's schema
   (:func:`cjob_bench.nexmark.spark.sources.ddl`) and gives it the event-time column and
   watermark of the file version (:func:`~cjob_bench.nexmark.spark.sources.event_time`,
   ``bound_ms`` as ours: 0, the feed's events are in order);
2. runs the Spark helper's query (:data:`cjob_bench.nexmark.spark.queries.QUERIES`) on them;
3. writes every result row as one JSON object to the output topic with Spark's Kafka sink
   (``append`` mode, a processing-time trigger: ``trigger``, 1 s by default, down to the
   100 ms of the latency criterion; ``0 seconds`` is Spark's shortest, back to back),
   checkpointed to a **local directory** (one per query under ``checkpoints``; ours checkpoints to the
   embedded S3 server). Each row carries ``_written_us``: the wall clock when Spark's task
   computed the row just before its Kafka writer took it (``reflect`` of
   ``System.currentTimeMillis``, evaluated per row in the JVM: ms resolution), as ours
   stamps its sink's write time.

Before its first measured run of a query the system runs that query once over
:data:`WARM_UP_EVENTS` events of topics of its own (``availableNow``), so that the measured
query starts in a JVM that has loaded and compiled its code, as our job's warm SparkSession
has (a cold first micro-batch took 16.7 s at 400 events/s); ``start`` returns once the
query's first micro-batch has ended.

What the latency figures mean for Spark. Spark's Kafka sink is **at-least-once**, not
transactional: a ``read_committed`` reader sees a row as soon as Spark's producer sent it,
before the micro-batch is committed to Spark's commit log. So Spark's *visible* latency is
to at-least-once output, earlier than an exactly-once reader could trust it (after the
batch's commit); there is no later instant a Kafka reader can observe, so Spark's visible
latency is the time its rows appear, with that caveat. ``_written_us`` is the *sink before
commit* figure as for ours.

:class:`SparkQuery` is the :class:`.run.Started`: a ``StreamingQueryListener``
(:mod:`.spark_progress`) adds every progress event's ``numInputRows`` per source and the
sink's ``numOutputRows``, once per ``batchId``. A progress event comes when its micro-batch has ended (written and committed), so
the lag sampled from it includes the batch in flight. ``stop`` waits until the sources have
read every record the input topics hold and no micro-batch (the watermark's no-data batches
close windows) has ended for two triggers plus :data:`QUIET_SECONDS`, then stops the query
and returns its figures (micro-batches, their durations, the medians of their phases).
"""

from __future__ import annotations

import os
import pathlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

import cjob_bench.nexmark.spark as nexmark_spark
from barrier_runtime.connectors.kafka import create_topic
from cjob_bench.nexmark.kafka import feed, spark_progress
from cjob_bench.nexmark.spark import queries as spark_queries
from cjob_bench.nexmark.spark import sources
from cjob_bench.peers import spark as runner
from cjob_bench.workloads.w4_kafka import facts

WRITTEN = "_written_us"
"""The column every output row carries: the wall clock (µs, ms resolution) when it was written."""
DEFAULT_TRIGGER = "1 second"
WARM_UP_EVENTS = 2_000
QUIET_SECONDS = 1.5
"""The stop waits until no micro-batch ended for this long (plus two triggers)."""


class SparkQueryStopError(RuntimeError):
    """Spark's query did not read and write all its input before the stop's timeout."""


class SparkWarmUpError(RuntimeError):
    """Spark's warm-up run of a query did not get its events or finish in time."""


def session(parallelism: int, libs: pathlib.Path | None = None) -> Any:
    """A SparkSession ``local[parallelism]`` with the Kafka connector's jars (fetched if needed)."""
    from barrier_runtime.spark import session as session_mod  # noqa: PLC0415
    from cjob_bench.peers.spark import kafka as peer_kafka  # noqa: PLC0415 (imports pyspark)

    jars = peer_kafka.extra_jars(libs or facts.spark_kafka_libs())
    bench = str(pathlib.Path(__file__).resolve().parents[3])  # q4's Python workers import it
    paths = [bench, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    conf = {
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "spark.jars": ",".join(str(p) for p in jars),
        "spark.sql.shuffle.partitions": str(parallelism),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": nexmark_spark.DRIVER_MEMORY,
    }
    return session_mod.build_session(
        f"local[{parallelism}]", app_name="nexmark-kafka-spark", parallelism=parallelism, conf=conf
    )


class SparkSystem:
    """Spark Structured Streaming as a :class:`.run.System` (see the module docstring)."""

    def __init__(
        self,
        spark: Any,
        checkpoints: pathlib.Path,
        *,
        trigger: str = DEFAULT_TRIGGER,
        bound_ms: int = 0,
    ) -> None:
        self.spark, self.checkpoints = spark, checkpoints
        self.trigger, self.bound_ms = trigger, bound_ms
        self.warmed: set[str] = set()

    def start(
        self, query: str, bootstrap: str, prefix: str, out_topic: str, timeout: float = 120.0
    ) -> SparkQuery:
        warm_up = self._warm_up(query, bootstrap, timeout)
        kinds = spark_queries.kinds_read(query)
        topics = {kind: f"{prefix}-{kind}" for kind in kinds}
        name = f"nexmark_kafka_{query}_{prefix.replace('-', '_')}"
        counter = spark_progress.counter(name, topics)
        self.spark.streams.addListener(counter)
        try:
            handle = self._start(query, bootstrap, topics, out_topic, name, self.trigger)
            started = SparkQuery(self.spark, handle, counter, bootstrap, self.trigger)
            started.warm_up_seconds = warm_up
            started.wait_first_batch(timeout)
        except BaseException:
            self.spark.streams.removeListener(counter)
            raise
        return started

    def _start(
        self,
        query: str,
        bootstrap: str,
        topics: dict[str, str],
        out_topic: str,
        name: str,
        trigger: str | None,
    ) -> Any:
        """Start ``query`` from ``topics`` (kind -> topic) to ``out_topic``; ``trigger``
        ``None``: ``availableNow`` (what the topics hold, then the query ends)."""
        inputs = {kind: self._read(bootstrap, topic, kind) for kind, topic in topics.items()}
        result = spark_queries.QUERIES[query](inputs)
        writer = (
            _as_json(result)
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", out_topic)
            .option("kafka.linger.ms", "5")
            .option("checkpointLocation", str(self.checkpoints / name))
            .outputMode("append")
            .queryName(name)
        )
        if trigger is None:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=trigger)
        conf = spark_queries.CONF.get(query, {})
        saved = {key: self.spark.conf.get(key, None) for key in conf}
        try:
            for key, value in conf.items():
                self.spark.conf.set(key, value)
            return writer.start()
        finally:
            for key, value in saved.items():
                if value is None:
                    self.spark.conf.unset(key)
                else:
                    self.spark.conf.set(key, value)

    def _warm_up(self, query: str, bootstrap: str, timeout: float) -> float:
        """Once per query: run it over a few hundred events of its own topics (``availableNow``),
        so that the measured query starts in a JVM that has loaded and compiled its code (as
        our job's warm SparkSession has); the seconds it took (0: warm already)."""
        if query in self.warmed:
            return 0.0
        started = time.monotonic()
        prefix = f"nxk-warm-{uuid.uuid4().hex[:10]}"
        kinds = spark_queries.kinds_read(query)
        topics = {kind: f"{prefix}-{kind}" for kind in kinds}
        for topic in [*topics.values(), f"{prefix}-out"]:
            create_topic(bootstrap, topic, 1)
        _produce_events(bootstrap, topics, WARM_UP_EVENTS)
        name = prefix.replace("-", "_")
        handle = self._start(query, bootstrap, topics, f"{prefix}-out", name, None)
        try:
            if not handle.awaitTermination(timeout):
                raise SparkWarmUpError(f"Spark's warm-up of {query} ran over {timeout:g}s")
        finally:
            handle.stop()
        self.warmed.add(query)
        return round(time.monotonic() - started, 2)

    def _read(self, bootstrap: str, topic: str, kind: str) -> Any:
        from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

        raw = (
            self.spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("kafka.fetch.max.wait.ms", "5")
            .load()
        )
        parsed = raw.select(
            sf.from_json(sf.col("value").cast("string"), sources.ddl(kind)).alias("r")
        )
        return sources.event_time(parsed.select("r.*"), self.bound_ms)


def _as_json(result: Any) -> Any:
    """``result``'s rows as the Kafka sink's ``value``: JSON with :data:`WRITTEN` added."""
    from pyspark.sql import functions as sf  # noqa: PLC0415

    now_ms = sf.expr("reflect('java.lang.System', 'currentTimeMillis')").cast("long")
    columns = [sf.col(f"`{name}`") for name in result.columns]
    stamped = sf.struct(*columns, (now_ms * 1000).alias(WRITTEN))
    return result.select(sf.to_json(stamped).alias("value"))


class SparkQuery:
    """A running Spark query as a :class:`.run.Started` (see the module docstring)."""

    def __init__(self, spark: Any, handle: Any, counter: Any, bootstrap: str, trigger: str) -> None:
        self.spark, self.handle, self.counter = spark, handle, counter
        self.bootstrap, self.trigger = bootstrap, trigger
        self.warm_up_seconds = 0.0

    def wait_first_batch(self, timeout: float) -> None:
        """Until the query's first micro-batch has ended (the topics may still be empty)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.counter.lock:
                if self.counter.batches:
                    return
            self._check(deadline, "run its first micro-batch")
            time.sleep(runner.POLL)

    def consumed(self, kinds: Sequence[str]) -> tuple[int, int | None]:
        with self.counter.lock:
            return sum(self.counter.read.get(k, 0) for k in kinds), None

    def sink_records_in(self) -> int:
        with self.counter.lock:
            return int(self.counter.written)

    def stop(self, *, drain: bool = True, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until every input record is read and written and the watermark's batches ran
        (at most ``timeout`` s: a run far behind says so in its figures; not at all without
        ``drain``), then stop the query; its figures."""
        left = None if drain else "gave up: stopped without reading the rest"
        try:
            if drain:
                self._drain(timeout)
        except SparkQueryStopError as exc:
            left = str(exc)
        finally:
            self.handle.stop()
            self.spark.streams.removeListener(self.counter)
            runner.unload_state_stores(self.spark)
        with self.counter.lock:
            batches = [self.counter.batches[b] for b in sorted(self.counter.batches)]
        with_input = [b for b in batches if b["rows_in"] > 0]
        durations = sorted(b["ms"] for b in batches)
        return {
            "system": "spark_ss",
            "trigger": self.trigger,
            "warm_up_seconds": self.warm_up_seconds,
            "checkpoint": "local directory",
            "sink": "Kafka, at-least-once",
            "stopped_before_the_end": left,
            "batches": len(batches),
            "batches_with_input": len(with_input),
            "rows_read": dict(self.counter.read),
            "rows_written": self.counter.written,
            "batch_ms": spark_progress.spread(durations),
            "batch_ms_with_input": spark_progress.spread(sorted(b["ms"] for b in with_input)),
            "batch_phase_ms_p50": {
                k: spark_progress.spread(sorted(b["phases"][k] for b in with_input)).get("p50")
                for k in spark_progress.PHASES
            },
        }

    def _drain(self, timeout: float) -> None:
        topics = self.counter.topics
        deadline = time.monotonic() + timeout
        end = _end_offsets(self.bootstrap, list(topics.values()))
        while self.consumed(list(topics))[0] < end:
            self._check(deadline, f"read {self.consumed(list(topics))[0]} of {end} records")
            time.sleep(runner.POLL)
        # the watermark's no-data batches (windows it closes; several for chained
        # aggregations) follow back to back: wait until none came for a quiet period
        quiet = 2 * _seconds(self.trigger) + QUIET_SECONDS
        while True:
            self._check(deadline, "finished the batches after the input's last")
            with self.counter.lock:
                last = max((b["done_at"] for b in self.counter.batches.values()), default=0.0)
            active = self.handle.status.get("isTriggerActive")
            if not active and time.time() - last >= quiet:
                return
            time.sleep(runner.POLL)

    def _check(self, deadline: float, doing: str) -> None:
        if self.handle.exception() is not None:
            raise runner.SparkQueryFailedError(f"Spark query failed: {self.handle.exception()}")
        if time.monotonic() > deadline:
            raise SparkQueryStopError(f"Spark's query had not {doing} before the stop's timeout")


def _produce_events(bootstrap: str, topics: dict[str, str], events: int) -> None:
    """The first ``events`` Nexmark events, each into the topic of its kind (one partition)."""
    from confluent_kafka import Producer  # noqa: PLC0415

    names = {code: name for code, name in feed.KIND_NAMES.items() if name in topics}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    cfg = feed.live_config(events, 1.0, 1)
    for kind, value, _ in feed.encoded(cfg, 0, 0, events):
        if kind in names:
            producer.produce(topics[names[kind]], value=value, partition=0)
    if producer.flush(30):
        raise SparkWarmUpError("the warm-up's events were not all delivered within 30 s")


def _end_offsets(bootstrap: str, topics: list[str]) -> int:
    """Records the ``topics`` hold now (sum of every partition's high watermark)."""
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "nexmark-spark-stop"})
    try:
        total = 0
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=10).topics[topic]
            for p in meta.partitions:
                tp = TopicPartition(topic, p)
                total += consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1]
        return total
    finally:
        consumer.close()


def _seconds(trigger: str) -> float:
    """A processing-time interval in seconds (``"1 second"``, ``"100 milliseconds"``).

    >>> _seconds("1 second"), _seconds("100 milliseconds"), _seconds("0 seconds")
    (1.0, 0.1, 0.0)
    """
    number, unit = trigger.split()
    scale = 0.001 if unit.startswith("milli") else 1.0
    return float(number) * scale
