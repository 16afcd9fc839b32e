"""The Kafka source: manually assigned topic partitions, offsets kept in our checkpoints.

See :mod:`barrier_runtime.connectors.kafka` for the contract.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources
from barrier_runtime.connectors import _kafka_client, _payloads, errors

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message

log = logging.getLogger(__name__)

Payload = _payloads.Payload


class KafkaSource(sources.Source):
    """Topic partitions as replayable partitions; see :mod:`barrier_runtime.connectors.kafka`."""

    def __init__(
        self,
        bootstrap_servers: str,
        topics: str | Sequence[str],
        *,
        partitions: Sequence[int] | None = None,
        bounded: bool = False,
        batch_size: int = 500,
        poll_timeout: float = 0.1,
        payload: Payload = "json",
        include_metadata: bool = False,
        on_error: _payloads.OnError = "fail",
        consumer_config: Mapping[str, Any] | None = None,
        metadata_timeout: float = 10.0,
    ) -> None:
        if batch_size < 1 or poll_timeout <= 0:
            raise ValueError("batch_size and poll_timeout must be positive")
        self.bootstrap_servers = bootstrap_servers
        self.topics = (topics,) if isinstance(topics, str) else tuple(topics)
        self.partition_numbers = None if partitions is None else tuple(partitions)
        self.bounded = bounded
        self.batch_size = batch_size
        self.poll_timeout = poll_timeout
        self.payload: Payload = payload
        self.include_metadata = include_metadata
        self.on_error = on_error
        self.consumer_config = dict(consumer_config or {})
        self.metadata_timeout = metadata_timeout

    def partitions(self) -> Sequence[str]:
        if self.partition_numbers is not None:
            return [f"{t}-{p}" for t in self.topics for p in self.partition_numbers]
        kafka = _kafka_client.import_kafka()
        admin = kafka.admin.AdminClient(
            {"bootstrap.servers": self.bootstrap_servers, "logger": _kafka_client.client_log}
        )
        try:
            meta = admin.list_topics(timeout=self.metadata_timeout)
        except kafka.KafkaException as exc:
            raise errors.BrokerUnavailableError(
                f"cannot list topics at {self.bootstrap_servers}: {exc}"
            ) from exc
        names = []
        for topic in self.topics:
            info = meta.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                raise errors.ConnectorError(
                    f"Kafka topic {topic!r} does not exist at {self.bootstrap_servers} "
                    "(create it, or pass partitions=)"
                )
            names += [f"{topic}-{p}" for p in sorted(info.partitions)]
        return names

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        topic, number = _kafka_client.parse_partition(partition)
        position = None if resume_from is None else int(resume_from)
        return KafkaPartition(self, topic, number, position)

    def consumer(self) -> Consumer:
        kafka = _kafka_client.import_kafka()
        config = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "cjob-unused",  # librdkafka wants one; nothing is committed to it
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "logger": _kafka_client.client_log,
            **self.consumer_config,
        }
        consumer: Consumer = kafka.Consumer(config)
        return consumer


class KafkaPartition(sources.SourcePartition):
    """One topic partition, read by its own manually assigned consumer."""

    def __init__(self, source: KafkaSource, topic: str, number: int, position: int | None) -> None:
        kafka = _kafka_client.import_kafka()
        self._src = source
        self.topic = topic
        self.number = number
        self.position = 0 if position is None else position
        self.skipped = 0
        self._finished = False
        self._end = _kafka_client.EndOfPartition()
        self._eof_offset = 0  # where the last end of partition was (past transaction markers)
        self._consumer = source.consumer()
        # Offset 0 rather than OFFSET_BEGINNING: a concrete offset starts fetching at once,
        # and auto.offset.reset=earliest handles a log that no longer starts at 0.
        self._consumer.assign([kafka.TopicPartition(topic, number, self.position)])

    def where(self) -> str:
        return f"Kafka {self.topic}-{self.number} at {self._src.bootstrap_servers}"

    def next_batch(self) -> Sequence[batch_mod.Record] | None:
        if self._finished:
            return None
        rows: list[batch_mod.Record] = []
        ended = False
        for msg in self._available():
            event = self._event(msg)
            if event == "eof":
                self._eof_offset = max(self._eof_offset, msg.offset() or 0)
                if self._src.bounded:
                    ended = ended or self._end.reached(self._consumer, msg)
            if event is not None:
                continue
            offset = msg.offset()
            if offset is None or offset < self.position:
                continue
            self.position = offset + 1
            row = self._decode(msg, offset)
            if row is not None:
                rows.append(row)
        self._finished = ended
        if ended and not rows:
            return None
        return rows

    def _available(self) -> list[Message]:
        """What the consumer holds now, up to ``batch_size``; wait only while it holds nothing.

        ``consume(n, timeout)`` waits until ``n`` messages arrived or the timeout passed,
        so at low rates every batch would wait ``poll_timeout`` to fill. Instead a partial
        batch is returned at once, and the wait (for a first message, up to
        ``poll_timeout``) happens only when nothing at all is available.
        """
        size = self._src.batch_size
        messages: list[Message] = self._consumer.consume(size, 0)
        if not messages:
            messages = self._consumer.consume(1, self._src.poll_timeout)
            if messages and size > 1:
                messages += self._consumer.consume(size - 1, 0)
        return messages

    def _event(self, msg: Message) -> Literal["eof", "retry"] | None:
        """What ``msg`` is if it is an event rather than a record (end of partition, error)."""
        kafka = _kafka_client.import_kafka()
        error = msg.error()
        if error is None:
            return None
        if error.code() == kafka.KafkaError._PARTITION_EOF:
            return "eof"
        if error.fatal() or not error.retriable():
            raise errors.BrokerUnavailableError(f"{self.where()}: {error.str()}")
        log.debug("%s: %s (retrying)", self.where(), error.str())
        return "retry"

    def _decode(self, msg: Message, offset: int) -> batch_mod.Record | None:
        try:
            row = _payloads.record_of(msg.value() or b"", self._src.payload)
        except _payloads.NotJsonError as exc:
            return self._malformed(offset, str(exc))
        if self._src.include_metadata:
            key = msg.key()
            row = {
                **row,
                "_topic": self.topic,
                "_partition": self.number,
                "_offset": offset,
                "_key": key.decode("utf-8", errors="replace") if key is not None else None,
            }
        return row

    def _malformed(self, offset: int, problem: str) -> batch_mod.Record | None:
        where = f"malformed record in {self.where()} at offset {offset}: {problem}"
        _payloads.reject(where, self._src.on_error)
        self.skipped += 1
        return None

    def snapshot(self) -> sources.Position:
        return self.position

    def lag(self) -> int | None:
        """The high watermark of the latest fetch minus the position (no broker request).

        ``None`` before the first fetch answered. Transaction markers count as
        offsets until the reader has passed them.
        """
        kafka = _kafka_client.import_kafka()
        partition = kafka.TopicPartition(self.topic, self.number)
        watermarks = self._consumer.get_watermark_offsets(partition, cached=True)
        if watermarks is None or watermarks[1] < 0:
            return None
        return max(0, int(watermarks[1]) - max(self.position, self._eof_offset))

    def close(self) -> None:
        self._consumer.close()
