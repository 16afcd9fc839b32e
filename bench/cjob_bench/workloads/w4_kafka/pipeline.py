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
import json
import os
import pathlib
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


class ProbedKafkaSink(KafkaSink):
    """A :class:`KafkaSink` that logs how long each commit took (with a ``probe_dir``).

    One JSON line per commit into ``{probe_dir}/commits-{pid}.jsonl``: the checkpoint, the
    writer, the wall-clock start and end of :meth:`KafkaSink.commit` (already-published
    check, transactional producer, produce, commit) and the records it published.
    """

    def __init__(self, *args: Any, probe_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.probe_dir = probe_dir

    def commit(self, transaction: Any) -> None:
        start = time.time()
        super().commit(transaction)
        end = time.time()
        if self.probe_dir is None:  # not a profile run
            return
        line = {
            "checkpoint": transaction["checkpoint"],
            "subtask": transaction["subtask"],
            "start": start,
            "end": end,
            "records": len(transaction.get("records", ())),
        }
        path = pathlib.Path(self.probe_dir) / f"commits-{os.getpid()}.jsonl"
        with path.open("a") as out:
            out.write(json.dumps(line) + "\n")


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="w4kafka-pipeline")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--in-topic", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--txn-prefix", required=True, help="transactional.id prefix (per run)")
    parser.add_argument("--staging-url", default=None, help="the sink's staging_url")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--poll-timeout", type=float, default=0.05)
    parser.add_argument("--probe-dir", default=None, help="profile run: stamp t_map, log commits")
    ns = parser.parse_args(list(args))
    source = KafkaSource(
        ns.bootstrap, ns.in_topic, batch_size=ns.batch_size, poll_timeout=ns.poll_timeout
    )
    sink: KafkaSink
    if ns.probe_dir is None:
        sink = KafkaSink(
            ns.bootstrap,
            ns.out_topic,
            key_field="key",
            transactional_id_prefix=ns.txn_prefix,
            staging_url=ns.staging_url,
        )
    else:
        sink = ProbedKafkaSink(
            ns.bootstrap,
            ns.out_topic,
            key_field="key",
            transactional_id_prefix=ns.txn_prefix,
            staging_url=ns.staging_url,
            probe_dir=ns.probe_dir,
        )
    flow = Dataflow("w4-kafka")
    fn = transform if ns.probe_dir is None else transform_probed
    flow.source("in", source).map("transform", fn).sink("out", sink)
    return flow
