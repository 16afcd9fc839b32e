"""The paced Nexmark producer: a config's events into Kafka, live, each stamped when sent.

    python -m cjob_bench.nexmark.kafka.feed --bootstrap HOST:PORT --prefix NAME --rate 10000 \
        --seconds 60 --partitions 2 --clock-out clock.npy

Runs in its own process so that no system's work delays it. The events are those of
``NexmarkConfig(events=rate*seconds, first_event_rate=rate, generators=partitions)``: event
time advances at the wall clock's speed, as the reference generator's does when it runs live.
Generator ``g``'s events go to partition ``g`` of ``{prefix}-{kind}``, one JSON object a
record (the columns and values of the Parquet files of :mod:`cjob_bench.nexmark.files`).
The generators run side by side: the ``k``-th event of every generator is due at
``start + (k * P + g) / rate``. When an event is due it is handed to the producer stamped with
the wall clock (its Kafka timestamp, ms): its *creation time*. When the loop falls behind
(the machine is busy) it sends what is due at once and reports how far behind it fell.

The clock file (``.npy``, int64): entry ``t`` is the wall clock (µs) when the newest event
with ``dateTime <= base_time_ms + t`` was handed over (filled forward over ms without
events): the creation time of the newest input an output of event time ``t`` depends on.
Prints ``{"started": WALL}`` when the first event is due, then one JSON line of results.
A ``stop`` line on stdin ends the feed early (a run whose verdict is already decided,
:mod:`.run`): what was sent is flushed and reported, with ``stopped_early``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from cjob_bench.harness import pacing
from cjob_bench.nexmark import config as config_mod
from cjob_bench.nexmark import generator
from cjob_bench.nexmark.config import NexmarkConfig

KIND_NAMES = {config_mod.PERSON: "persons", config_mod.AUCTION: "auctions", config_mod.BID: "bids"}
LINGER_MS = 5
CHUNK_SECONDS = 0.1
"""How much input (in seconds at the rate) is generated and encoded ahead at a time."""


def live_config(rate: int, seconds: float, partitions: int, **params: int) -> NexmarkConfig:
    """The config a live run at ``rate`` events/s for ``seconds`` produces."""
    return NexmarkConfig(
        events=int(rate * seconds), first_event_rate=rate, generators=partitions, **params
    )


def encoded(cfg: NexmarkConfig, g: int, start: int, stop: int) -> list[tuple[int, bytes, int]]:
    """Generator ``g``'s events ``[start, stop)`` in event order: (kind, JSON value, dateTime)."""
    tables = generator.generate(cfg, g, start, stop)
    first = cfg.generator_range(g)[0]
    kinds = cfg.kinds(first + cfg.adjusted(np.arange(start, stop, dtype=np.int64)))
    rows = {
        kind: iter(tables.by_kind()[KIND_NAMES[kind]].to_pylist())
        for kind in (config_mod.PERSON, config_mod.AUCTION, config_mod.BID)
    }
    out = []
    for kind in kinds.tolist():
        row = next(rows[kind])
        out.append((kind, json.dumps(row, separators=(",", ":")).encode(), row["dateTime"]))
    return out


def schedule(cfg: NexmarkConfig) -> Iterator[list[tuple[int, int, bytes, int]]]:
    """Chunks of (generator, kind, value, dateTime) in send order (generators side by side)."""
    per_gen = [cfg.generator_range(g) for g in range(cfg.generators)]
    step = max(1, int(cfg.first_event_rate * CHUNK_SECONDS) // cfg.generators)
    longest = max(stop - first for first, stop in per_gen)
    for start in range(0, longest, step):
        parts = []
        for g, (first, stop) in enumerate(per_gen):
            end = min(start + step, stop - first)
            parts.append(encoded(cfg, g, start, end) if start < end else [])
        chunk = []
        for k in range(max(len(p) for p in parts)):
            chunk += [(g, *p[k]) for g, p in enumerate(parts) if k < len(p)]
        yield chunk


STEP = 2000
"""The most records sent with one clock reading (a feed catching up re-reads it, and checks
how far behind it is, every ``STEP`` records)."""


def produce(
    bootstrap: str,
    prefix: str,
    cfg: NexmarkConfig,
    rate: float,
    stop: threading.Event | None = None,
    give_up_behind_ms: float | None = None,
) -> dict[str, Any]:
    """Send ``cfg``'s events at ``rate``, until the end or until ``stop`` is set; with
    ``give_up_behind_ms``, also once the feed is that far behind its schedule (the run cannot
    be sustained then: :mod:`.method`'s ``feed_kept_schedule``), with ``fell_behind_at`` (s)."""
    from confluent_kafka import Producer  # noqa: PLC0415 (only this process needs it)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "acks": "all"})
    topics = {kind: f"{prefix}-{name}" for kind, name in KIND_NAMES.items()}
    span_ms = cfg.events * cfg.inter_event_delay_us // cfg.generators // 1000 + 2
    clock = np.full(span_ms, -1, dtype=np.int64)
    counts = dict.fromkeys(KIND_NAMES.values(), 0)
    chunks = schedule(cfg)
    ahead = next(chunks, [])  # the first chunk is ready before the clock starts
    pacer, i = pacing.Pacer(rate), 0
    fell_behind_at: float | None = None
    print(json.dumps({"started": pacer.first_wall}), flush=True)
    for chunk in itertools.chain([ahead], chunks):
        if (stop is not None and stop.is_set()) or fell_behind_at is not None:
            break
        j = 0
        while j < len(chunk):
            if give_up_behind_ms is not None and pacer.behind_ms > give_up_behind_ms:
                fell_behind_at = round(time.time() - pacer.first_wall, 2)
                break
            due = min(len(chunk), j + min(STEP, max(0, pacer.due(sent=i) - i)))
            now_ns = time.time_ns()
            while j < due:
                g, kind, value, at = chunk[j]
                try:
                    producer.produce(
                        topics[kind], value=value, partition=g, timestamp=now_ns // 1_000_000
                    )
                except BufferError:
                    producer.poll(0.01)
                    continue
                clock[at - cfg.base_time_ms] = now_ns // 1000
                counts[KIND_NAMES[kind]] += 1
                i, j = i + 1, j + 1
            producer.poll(0)
            pacer.wait(sent=i)
    pacer.finished()
    left = producer.flush(60)
    summary = {"events": i, "by_kind": counts, **pacer.summary(i, left)}
    summary["stopped_early"] = stop is not None and stop.is_set()
    summary["fell_behind_at"] = fell_behind_at
    return {**summary, "clock": _filled(clock)}


def _stop_on_request(stop: threading.Event) -> None:
    """Set ``stop`` on a ``stop`` line on stdin (end of input does not stop)."""
    for line in sys.stdin:
        if line.strip() == "stop":
            stop.set()
            return


def _filled(clock: np.ndarray) -> np.ndarray:
    """``clock`` with every unset ms (-1) taking the newest set entry before it."""
    index = np.where(clock >= 0, np.arange(len(clock)), 0)
    np.maximum.accumulate(index, out=index)
    filled = clock[index]
    filled[filled < 0] = -1
    return np.asarray(filled, dtype=np.int64)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="nexmark-kafka-feed")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", required=True, help="topics are PREFIX-persons, ...")
    parser.add_argument("--rate", type=int, required=True, help="events/s, every kind")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--clock-out", required=True, help="where the clock goes (.npy)")
    parser.add_argument("--params", default="{}", help="other NexmarkConfig fields, JSON")
    parser.add_argument(
        "--give-up-behind-ms", type=float, default=None, help="stop when this far behind"
    )
    ns = parser.parse_args(argv)
    cfg = live_config(ns.rate, ns.seconds, ns.partitions, **json.loads(ns.params))
    stop = threading.Event()
    threading.Thread(target=_stop_on_request, args=(stop,), daemon=True).start()
    out = produce(ns.bootstrap, ns.prefix, cfg, ns.rate, stop, ns.give_up_behind_ms)
    np.save(ns.clock_out, out.pop("clock"), allow_pickle=False)
    out["config"] = dataclasses.asdict(cfg)
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["undelivered"] == 0 else 1)


if __name__ == "__main__":
    main()
