"""The watching consumer: reads a query's output topic ``read_committed`` and times every record.

    python -m cjob_bench.nexmark.kafka.watch --bootstrap HOST:PORT --topic OUT --query q1 \
        --arrays-out figures.npz [--rows-out rows.jsonl] [--rate R --seconds S --partitions P]

Runs in its own process. For every record it sees it keeps the wall clock (µs) when
``consume`` returned it (*visible*: an exactly-once reader can see it only once its Kafka
transaction committed), the sink's write time the record carries (``_written_us``, before the
commit) and the event time (ms) of the newest input the record depends on
(:func:`event_time`). With ``--rows-out`` it also writes every record (without the stamp) as a
JSON line, for checking against the oracle. Prints ``{"ready": true}`` once its partitions are
assigned; on a ``drain N`` line on stdin (the job has stopped, its sink took in ``N`` records)
it reads on until it has seen at least ``N`` records and every partition is at its end (the
last commit may land after the stop returned), or ``--timeout``. On a ``stop`` line (the run
gave up, its verdict decided) it reads only until every partition is at its end or
``STOP_GRACE`` s have passed: a job stopped with a backlog may leave records its sink took in
uncommitted, and waiting for them would only cost time. Then it saves the arrays (``.npz``,
no pickle) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from cjob_bench.nexmark import generator, queries
from cjob_bench.nexmark.kafka import feed
from cjob_bench.nexmark.queries_windowed import WINDOW_MS

WRITTEN = "_written_us"
STOP_GRACE = 5.0
"""Seconds a watch told to ``stop`` reads on for what is committed already."""
EventTime = Callable[[dict[str, Any]], int | None]


def event_time(query: str, cfg: Any = None) -> EventTime:
    """The event time (ms) of the newest input an output record of ``query`` depends on.

    q0, q1: the bid's ``dateTime`` (the record is the event). q2: the ``dateTime`` of the bid
    with that ``auction`` and ``price`` (looked up in ``cfg``'s events, regenerated). Windowed
    queries: the window's last millisecond (``window_end - 1``; q7 from the bid's
    ``dateTime``, q8 ``starttime + 10 s - 1``): the result is complete once that ms's input
    is in. q3, q4: none (their results carry no time); not measured.
    """
    if query in ("q0", "q1"):
        return lambda r: int(r["dateTime"])
    if query in ("q5", "q11", "q12"):
        return lambda r: int(r["window_end"]) - 1
    if query == "q7":
        return lambda r: int(r["dateTime"]) // WINDOW_MS * WINDOW_MS + WINDOW_MS - 1
    if query == "q8":
        return lambda r: int(r["starttime"]) + WINDOW_MS - 1
    if query == "q2" and cfg is not None:
        times = _q2_times(cfg)
        return lambda r: times.get((int(r["auction"]), int(r["price"])))
    return lambda r: None


def _q2_times(cfg: Any) -> dict[tuple[int, int], int]:
    """(auction, price) -> the earliest ``dateTime`` of such a bid among q2's selected bids."""
    out: dict[tuple[int, int], int] = {}
    for g in range(cfg.generators):
        first, stop = cfg.generator_range(g)
        bids = generator.generate(cfg, g, 0, stop - first).bids
        keep = np.mod(bids["auction"].to_numpy(), queries.Q2_SKIP) == 0
        for row in bids.filter(pa.array(keep)).to_pylist():
            key = (row["auction"], row["price"])
            out[key] = min(out.get(key, row["dateTime"]), row["dateTime"])
    return out


def watch(ns: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: PLC0415

    cfg = None
    if ns.query == "q2" and ns.rate:
        cfg = feed.live_config(ns.rate, ns.seconds, ns.partitions, **json.loads(ns.params))
    when = event_time(ns.query, cfg)
    consumer = Consumer(
        {
            "bootstrap.servers": ns.bootstrap,
            "group.id": "nexmark-kafka-watch",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 5,
        }
    )
    parts = sorted(consumer.list_topics(ns.topic, timeout=30).topics[ns.topic].partitions)
    consumer.assign([TopicPartition(ns.topic, p, 0) for p in parts])
    consumer.consume(1, 0.5)
    drain = threading.Event()
    stop = threading.Event()
    expected: list[int] = []
    threading.Thread(target=_wait_for_drain, args=(drain, stop, expected), daemon=True).start()
    print(json.dumps({"ready": True}), flush=True)
    visible: list[int] = []
    written: list[int] = []
    times: list[int] = []
    rows_out = open(ns.rows_out, "w") if ns.rows_out else None  # noqa: SIM115
    drained = draining = False
    checked = 0.0
    deadline = time.time() + ns.timeout
    try:
        while time.time() < deadline:
            if drain.is_set() and not draining:  # the drain has its own deadline
                draining = True
                grace = STOP_GRACE if stop.is_set() else ns.drain_timeout
                deadline = min(deadline, time.time() + grace)
            if drain.is_set() and len(visible) >= sum(expected) and time.time() - checked > 0.2:
                checked = time.time()
                if _at_end(consumer, ns.topic, parts):
                    drained = True
                    break
            messages = consumer.consume(2000, 0.05)
            now_us = time.time_ns() // 1000
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consuming {ns.topic}: {error.str()}")
                row = json.loads(msg.value() or b"{}")
                stamp = row.pop(WRITTEN, -1)
                at = when(row)
                visible.append(now_us)
                written.append(int(stamp))
                times.append(-1 if at is None else at)
                if rows_out is not None:
                    rows_out.write(json.dumps(row, separators=(",", ":")) + "\n")
    finally:
        consumer.close()
        if rows_out is not None:
            rows_out.close()
    np.savez(
        ns.arrays_out,
        visible_us=np.asarray(visible, np.int64),
        written_us=np.asarray(written, np.int64),
        event_time_ms=np.asarray(times, np.int64),
    )
    return {"records": len(visible), "drained": drained}


def _at_end(consumer: Any, topic: str, parts: list[int]) -> bool:
    """Whether the consumer has read every partition up to its end as the broker says now."""
    from confluent_kafka import TopicPartition  # noqa: PLC0415

    ends = [
        consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
        for p in parts
    ]
    here = consumer.position([TopicPartition(topic, p) for p in parts])
    return all(end <= 0 or tp.offset >= end for tp, end in zip(here, ends, strict=True))


def _wait_for_drain(drain: threading.Event, stop: threading.Event, expected: list[int]) -> None:
    """Wait for ``drain N`` (the job stopped; its sink took in N records) or ``stop`` (the run
    gave up: what the job did not commit will not come) on stdin."""
    for line in sys.stdin:
        words = line.split()
        if words and words[0] == "stop":
            expected.append(0)
            stop.set()
            break
        if words and words[0] == "drain":
            expected.append(int(words[1]) if len(words) > 1 else 0)
            break
    drain.set()  # a closed stdin drains too


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="nexmark-kafka-watch")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--query", required=True)
    parser.add_argument("--arrays-out", required=True)
    parser.add_argument("--rows-out", default=None)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--drain-timeout", type=float, default=60.0, help="s to read after drain")
    parser.add_argument("--rate", type=int, default=0, help="q2: the feed's config")
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--params", default="{}")
    print(json.dumps(watch(parser.parse_args(argv))), flush=True)


if __name__ == "__main__":
    main()
