"""Our side of W4 on Kafka as a pipeline file: Kafka source -> transform -> transactional Kafka sink.

``build_flow(["--bootstrap", HOST_PORT, "--in-topic", IN, "--out-topic", OUT, ...])``: the
Spark driver and every worker load this file by path with the same arguments, so it imports
nothing from the benchmark package.

    in   KafkaSource (manually assigned partitions, offsets in our checkpoints)
      -> map("transform", transform)   parse (the source decodes JSON), light stateless work
      -> KafkaSink                     one Kafka transaction per checkpoint (exactly-once)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.kafka import KafkaSink, KafkaSource


def transform(record: dict[str, Any]) -> dict[str, Any]:
    """The work every system does per record (Spark's query does the same in SQL functions).

    >>> transform({"i": 7, "key": "k2", "seq": 1, "ts": 1000, "payload": "xy"})
    {'i': 7, 'key': 'k2', 'seq': 1, 'ts': 1000, 'payload_len': 2}
    """
    return {
        "i": record["i"],
        "key": record["key"],
        "seq": record["seq"],
        "ts": record["ts"],
        "payload_len": len(record["payload"]),
    }


def transform_probed(record: dict[str, Any]) -> dict[str, Any]:
    """:func:`transform` plus ``t_map``, the wall clock (µs) when it ran (profile runs only)."""
    return {**transform(record), "t_map": time.time_ns() // 1000}


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="w4kafka-pipeline")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--in-topic", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--txn-prefix", required=True, help="transactional.id prefix (per run)")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--poll-timeout", type=float, default=0.05)
    parser.add_argument("--probe", action="store_true", help="stamp t_map (profile runs)")
    ns = parser.parse_args(list(args))
    source = KafkaSource(
        ns.bootstrap, ns.in_topic, batch_size=ns.batch_size, poll_timeout=ns.poll_timeout
    )
    sink = KafkaSink(
        ns.bootstrap, ns.out_topic, key_field="key", transactional_id_prefix=ns.txn_prefix
    )
    flow = Dataflow("w4-kafka")
    fn = transform_probed if ns.probe else transform
    flow.source("in", source).map("transform", fn).sink("out", sink)
    return flow
