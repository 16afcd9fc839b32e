"""The keyed running count from one Kafka topic to another, exactly once.

``build_flow(["--servers", HOSTS, "--in-topic", T, "--out-topic", U, ...])``: the Spark
driver and every worker load this file by path and call ``build_flow`` with the same
arguments. Events are JSON ``{"key", "seq"}`` records (every key on one partition);
the bounded :class:`~barrier_runtime.connectors.kafka.KafkaSource` ends the job at the
partitions' ends, and the counts go to the transactional
:class:`~barrier_runtime.connectors.kafka.KafkaSink` (keyed by ``key``), one Kafka
transaction per checkpoint. ``--rate`` paces each source subtask (events/s) so that a
run lasts long enough to be killed several times.
"""

from __future__ import annotations

import argparse
import time

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.kafka import KafkaSink, KafkaSource
from barrier_runtime.demo import count_event


def build_flow(args):
    parser = argparse.ArgumentParser(prog="kafka_running_count_pipeline")
    parser.add_argument("--servers", required=True)
    parser.add_argument("--in-topic", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=None, help="events/s per source subtask")
    ns = parser.parse_args(args)
    flow = Dataflow("kafka-running-count")
    source = KafkaSource(ns.servers, ns.in_topic, bounded=True, batch_size=ns.batch_size)
    events = flow.source("events", source)
    if ns.rate:
        events = events.map_batches("pace", _pace(ns.rate))
    counted = events.key_by("by-key", "key").stateful_map("count", count_event)
    counted.sink("out", KafkaSink(ns.servers, ns.out_topic, key_field="key"))
    return flow


def _pace(rate):
    def pace(batch):
        time.sleep(batch.num_rows / rate)
        return batch

    return pace
