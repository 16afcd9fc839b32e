"""Connectors: sources and two-phase-commit sinks built on the ``barrier_runtime.api`` contracts.

What belongs here, one module per system:

* :mod:`~barrier_runtime.connectors.generator`,
  :mod:`~barrier_runtime.connectors.columnar_generator` (Arrow batches, the
  fast path) and :mod:`~barrier_runtime.connectors.discard`: deterministic
  and discarding connectors for tests and benchmarks (the in-memory
  ``TestingSource``/``TestingSink`` with crash injection are in
  :mod:`barrier_runtime.testing`);
* :mod:`~barrier_runtime.connectors.file_source` (JSON lines, CSV, Parquet)
  and :mod:`~barrier_runtime.connectors.files` (transactional JSON-lines
  sink) on a local directory or an S3 prefix;
* :mod:`~barrier_runtime.connectors.nats`: JetStream source by stream
  sequence, sink deduplicated with ``Nats-Msg-Id``;
* :mod:`~barrier_runtime.connectors.kafka`: ``confluent-kafka`` with manual
  partition assignment, offsets in our checkpoints, transactional sink;
* :mod:`~barrier_runtime.connectors.embedded_nats` and
  :mod:`~barrier_runtime.connectors.embedded_kafka`: real brokers on
  loopback for tests and demos.

Broker client libraries (``nats-py``, ``confluent-kafka``) are optional and
imported only when a connection is made, so the core runtime needs neither.
The broker connectors and embedded brokers themselves load on first use
(attribute access on this package), so a worker whose pipeline reads files
or generators does not pay for importing them.
"""

import importlib
from typing import TYPE_CHECKING

from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.discard import DiscardSink
from barrier_runtime.connectors.errors import (
    BrokerUnavailableError,
    ConnectorDependencyError,
    ConnectorError,
    EmbeddedBrokerError,
    MalformedRecordError,
    TransactionTooLargeError,
)
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink, TransactionLostError
from barrier_runtime.connectors.generator import GeneratorSource

if TYPE_CHECKING:
    from barrier_runtime.connectors.embedded_kafka import EmbeddedKafkaBroker
    from barrier_runtime.connectors.embedded_nats import EmbeddedNatsServer
    from barrier_runtime.connectors.kafka import KafkaSink, KafkaSource
    from barrier_runtime.connectors.nats import NatsSink, NatsSource, ensure_stream

_LAZY = {
    "EmbeddedKafkaBroker": "embedded_kafka",
    "EmbeddedNatsServer": "embedded_nats",
    "KafkaSink": "kafka",
    "KafkaSource": "kafka",
    "NatsSink": "nats",
    "NatsSource": "nats",
    "ensure_stream": "nats",
}

__all__ = [
    "BrokerUnavailableError",
    "ColumnarGeneratorSource",
    "ConnectorDependencyError",
    "ConnectorError",
    "DiscardSink",
    "EmbeddedBrokerError",
    "EmbeddedKafkaBroker",
    "EmbeddedNatsServer",
    "FileSink",
    "FileSource",
    "GeneratorSource",
    "KafkaSink",
    "KafkaSource",
    "MalformedRecordError",
    "NatsSink",
    "NatsSource",
    "TransactionLostError",
    "TransactionTooLargeError",
    "ensure_stream",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
