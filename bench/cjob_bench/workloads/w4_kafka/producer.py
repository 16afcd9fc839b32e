"""The live producer: ``count`` records at ``rate`` records/s into the input topic, then a summary.

    python -m cjob_bench.workloads.w4_kafka.producer --bootstrap HOST:PORT --topic T --partitions 2 \
        --rate 5000 --count 100000 --keys 1000

Runs in its own process so that no system's work delays it. Record ``i`` is due at
``start + i / rate``; when it is due it is stamped with the wall clock (``time.time_ns``) and
handed to the producer (``linger.ms`` 5, ``acks=all``); the same instant is the Kafka record's
CreateTime. When it falls behind (the machine is busy) it sends what is due at once, stamped
when handed over, and reports how far behind it fell. Prints one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from cjob_bench.harness import pacing
from cjob_bench.workloads.w4_kafka import records

LINGER_MS = 5


def produce(
    bootstrap: str, topic: str, partitions: int, rate: float, count: int, keys: int
) -> dict[str, Any]:
    from confluent_kafka import Producer  # noqa: PLC0415 (only the producer process needs it)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "acks": "all"})
    pacer = pacing.Pacer(rate)
    i = 0
    while i < count:
        due = min(count, pacer.due(sent=i))
        while i < due:
            ts_ns = time.time_ns()
            value = records.encode(i, keys=keys, ts_us=ts_ns // 1000)
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=records.key_of(i, keys),
                    partition=i % partitions,
                    timestamp=ts_ns // 1_000_000,
                )
            except BufferError:
                producer.poll(0.01)
                continue
            i += 1
        producer.poll(0)
        pacer.wait(sent=i)
    pacer.finished()
    left = producer.flush(60)
    return {"records": count, **pacer.summary(count, left)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="w4kafka-producer")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    ns = parser.parse_args(argv)
    out = produce(ns.bootstrap, ns.topic, ns.partitions, ns.rate, ns.count, ns.keys)
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["undelivered"] == 0 else 1)


if __name__ == "__main__":
    main()
