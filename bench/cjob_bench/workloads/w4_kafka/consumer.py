"""The latency consumer: reads the output topic ``read_committed`` and times every record.

    python -m cjob_bench.workloads.w4_kafka.consumer --bootstrap HOST:PORT --topic OUT --count N \
        --warmup-records W --deadline UNIX_TIME

Runs in its own process. A record's latency is the wall-clock instant ``consume`` returned it
(one ``time.time_ns()`` per returned batch) minus the ``ts`` the producer stamped on the input
record it came from (same machine, same clock). Every output record carries its input's index
``i``, which accounts for them: each index seen is counted once (later copies are
``duplicates``: Spark's Kafka sink is at-least-once); indexes never seen are ``lost``. Records
with ``i < W`` (the first warm-up seconds of input) are counted but not measured. Stops when
all ``N`` indexes were seen or at ``--deadline``. Prints ``{"ready": true}`` once its
partitions are assigned (start the producer after it), then one JSON line of results.

Whether a system *kept up* with the rate is decided here: every record arrived before the
deadline, the median latency of the last fifth of the measured records (by index) is at most
1.5 times the median of the first fifth plus 500 ms (a backlog that grows makes latency grow
with the index), and at most :data:`KEPT_UP_BOUND_MS` (the first full run, on 2026-11-28,
showed Spark runs whose start-up backlog of 10-20 s was shrinking but not gone by the end
of the run, which the first two conditions alone called kept up).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

QUANTILES = {"p50": 0.5, "p99": 0.99, "p99_9": 0.999}
KEPT_UP_BOUND_MS = 5000.0
"""The median latency of the last fifth of a run above which it did not keep up."""


def consume(bootstrap: str, topic: str, count: int, warmup: int, deadline: float) -> dict[str, Any]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: PLC0415

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "w4kafka-latency",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 5,
            "fetch.min.bytes": 1,
        }
    )
    meta = consumer.list_topics(topic, timeout=30)
    parts = sorted(meta.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    consumer.consume(1, 0.5)  # joins the partitions' fetchers before the producer starts
    print(json.dumps({"ready": True}), flush=True)
    latency_us = np.full(count, -1, dtype=np.int64)
    # where the time goes: the output record's CreateTime (when the system's producer made it)
    # and, in probe runs of ours, when the map step ran (``t_map``), both minus the input's ts
    created_us = np.full(count, -1, dtype=np.int64)
    mapped_us = np.full(count, -1, dtype=np.int64)
    seen = 0
    duplicates = 0
    foreign = 0
    first_receive: float | None = None
    last_receive: float | None = None
    try:
        while seen < count and time.time() < deadline:
            messages = consumer.consume(2000, 0.05)
            if not messages:
                continue
            now_us = time.time_ns() // 1000
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consuming {topic}: {error.str()}")
                body = json.loads(msg.value() or b"{}")
                i = int(body["i"])
                if not 0 <= i < count:
                    foreign += 1
                elif latency_us[i] >= 0:
                    duplicates += 1
                else:
                    ts = int(body["ts"])
                    latency_us[i] = now_us - ts
                    created_us[i] = msg.timestamp()[1] * 1000 - ts
                    if "t_map" in body:
                        mapped_us[i] = int(body["t_map"]) - ts
                    seen += 1
            last_receive = now_us / 1e6
            if first_receive is None:
                first_receive = last_receive
    finally:
        consumer.close()
    out = summarise(latency_us, warmup, duplicates, foreign, first_receive, last_receive)
    out["breakdown_ms"] = breakdown(latency_us, created_us, mapped_us, warmup)
    return out


def breakdown(
    latency_us: np.ndarray,
    created_us: np.ndarray,
    mapped_us: np.ndarray,
    warmup: int,
) -> dict[str, dict[str, float | None]]:
    """Quantiles of each leg of a measured record's way (ms; CreateTime has ms resolution).

    ``input_to_output_create``: producer stamp -> the output record made (ours: the sink's
    transaction produced it at commit); ``output_create_to_receive``: -> the consumer got it
    (ours: the transaction's commit and the consumer's fetch); with a probe,
    ``input_to_map`` (source poll and hand-over) and ``map_to_output_create`` (waiting for the
    checkpoint, its completion and the commit's start).
    """
    ok = latency_us[warmup:] >= 0
    lat, created = latency_us[warmup:][ok], created_us[warmup:][ok]
    out = {
        "input_to_output_create": quantiles(created / 1000.0),
        "output_create_to_receive": quantiles((lat - created) / 1000.0),
    }
    mapped = mapped_us[warmup:][ok]
    if len(mapped) and (mapped >= 0).all():
        out["input_to_map"] = quantiles(mapped / 1000.0)
        out["map_to_output_create"] = quantiles((created - mapped) / 1000.0)
    return out


def summarise(
    latency_us: np.ndarray,
    warmup: int,
    duplicates: int,
    foreign: int,
    first_receive: float | None,
    last_receive: float | None,
) -> dict[str, Any]:
    """Counts, latency quantiles (ms) of the measured records, and the kept-up verdict."""
    count = len(latency_us)
    arrived = latency_us >= 0
    measured = latency_us[warmup:][arrived[warmup:]] / 1000.0
    out: dict[str, Any] = {
        "expected": count,
        "received_unique": int(arrived.sum()),
        "lost": int(count - arrived.sum()),
        "duplicates": duplicates,
        "foreign": foreign,
        "warmup_records": warmup,
        "measured_records": len(measured),
        "first_receive": first_receive,
        "last_receive": last_receive,
        "latency_ms": quantiles(measured),
    }
    fifth = len(measured) // 5
    if fifth:
        early = float(np.median(measured[:fifth]))
        late = float(np.median(measured[-fifth:]))
        out["median_ms_first_fifth"] = round(early, 2)
        out["median_ms_last_fifth"] = round(late, 2)
        out["kept_up"] = (
            out["lost"] == 0 and late <= 1.5 * early + 500.0 and late <= KEPT_UP_BOUND_MS
        )
    else:
        out["kept_up"] = False
    return out


def quantiles(values: np.ndarray) -> dict[str, float | None]:
    """p50, p99, p99.9 and max of ``values`` (ms), or ``None`` each when there are none.

    >>> quantiles(np.arange(1, 1001, dtype=float))["p50"]
    500.5
    """
    if not len(values):
        return {**dict.fromkeys(QUANTILES), "max": None}
    out: dict[str, float | None] = {
        name: round(float(np.quantile(values, q)), 2) for name, q in QUANTILES.items()
    }
    out["max"] = round(float(values.max()), 2)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="w4kafka-consumer")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--warmup-records", type=int, required=True)
    parser.add_argument("--deadline", type=float, required=True, help="unix time to give up")
    ns = parser.parse_args(argv)
    out = consume(ns.bootstrap, ns.topic, ns.count, ns.warmup_records, ns.deadline)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
